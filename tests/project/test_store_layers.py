"""store/'s own layers: its packages import only downwards, with the flat core at the bottom.

The order is import-linter's ``store-layers`` contract in pyproject.toml (``a | b``: neither
imports the other). Each check has its negative control: a copy of the tree with one upward
import added inside store/ must break it, a function-local import included.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.import_graph import LINT_IMPORTS, copy_tree, lint_imports, store_package_pairs

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ("store: monitor > fleet, proxy > profiles > ops, watch > agent > usage > config > pools > redaction "
            "> dialects > core")

needs_linter = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed (test extra)")


def _said(report: str) -> str:
    """import-linter's report with its line wrapping undone (it wraps long names at the width)."""
    return " ".join(report.split())


def _store_layers(root: Path = ROOT) -> list[list[str]]:
    contracts = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["id"] == "store-layers")
    return [[m.strip() for m in re.split(r"[:|]", layer) if m.strip()] for layer in layers]


def _store_parts(root: Path) -> set[str]:
    """Every subpackage of store/ and every module of its flat core."""
    return {p.name for p in (root / "store").iterdir() if p.is_dir() and (p / "__init__.py").exists()} | {
        p.stem for p in (root / "store").glob("*.py") if p.name != "__init__.py"}


def _unlayered(root: Path) -> set[str]:
    """The parts of store/ in no layer of the contract, or the listed ones that do not exist."""
    listed = [m for layer in _store_layers(root) for m in layer]
    assert len(listed) == len(set(listed))
    return set(listed) ^ _store_parts(root)


def test_every_part_of_store_is_in_a_layer() -> None:
    """A package or core module outside every layer would escape the contract unseen."""
    assert _unlayered(ROOT) == set()
    # The flat core is the bottom layer, whole.
    assert set(_store_layers()[-1]) == {p.stem for p in (ROOT / "store").glob("*.py") if p.name != "__init__.py"}


def test_a_new_core_module_outside_the_layers_is_found(tmp_path: Path) -> None:
    root = copy_tree(ROOT, tmp_path)
    (root / "store" / "stray.py").write_text("import store.pools.policy\n")
    (root / "store" / "newpkg").mkdir()
    (root / "store" / "newpkg" / "__init__.py").write_text("")
    assert _unlayered(root) == {"stray", "newpkg"}


@needs_linter
def test_the_store_layers_are_kept() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{CONTRACT} KEPT" in _said(result.stdout), result.stdout


def test_no_two_parts_of_store_import_each_other() -> None:
    """The pairs the project's own check names ("store/ packages that import each other")."""
    assert store_package_pairs(ROOT) == []


def test_a_pair_importing_each_other_is_found(tmp_path: Path) -> None:
    root = copy_tree(ROOT, tmp_path)
    (root / "store" / "config" / "_bad.py").write_text("def later():\n    from store.ops import audit\n"
                                                       "    return audit\n")
    assert store_package_pairs(root) == [("config", "ops")]


# One upward import inside store/: one for each of the four cycles the layers broke, and more.
UPWARD = [
    ("store/config/_bad.py", "from store.ops import history\n", "store.config._bad -> store.ops.history"),
    ("store/config/_bad.py", "def late():\n    from store.ops.actions import Outcome\n",
     "store.config._bad -> store.ops.actions"),
    ("store/redaction/_bad.py", "from store.config import read\n", "store.redaction._bad -> store.config.read"),
    ("store/watch/_bad.py", "from store.profiles import root\n", "store.watch._bad -> store.profiles.root"),
    ("store/ops/_bad.py", "from store.profiles.root import Root\n", "store.ops._bad -> store.profiles.root"),
    ("store/shape.py", "import store.pools.policy\n", "store.shape -> store.pools.policy"),
    ("store/pools/_bad.py", "from ..agent import headroom\n", "store.pools._bad -> store.agent.headroom"),
    # Siblings of one layer never import each other.
    ("store/ops/_bad.py", "import store.watch.home\n", "store.ops._bad -> store.watch.home"),
    ("store/proxy/_bad.py", "from store.fleet import keys\n", "store.proxy._bad -> store.fleet.keys"),
]


@needs_linter
@pytest.mark.parametrize("module, line, chain", UPWARD, ids=[u[2] for u in UPWARD])
def test_an_upward_import_inside_store_breaks_the_layers(tmp_path: Path, module: str, line: str,
                                                         chain: str) -> None:
    root = copy_tree(ROOT, tmp_path)
    target = root / module
    assert target.parent.is_dir()
    # A module of its own, or (for the core, whose modules are each listed) one more line.
    target.write_text((target.read_text() if target.exists() else "") + line)
    result = lint_imports(root)
    assert result.returncode != 0
    report = result.stdout
    assert f"{CONTRACT} BROKEN" in _said(report), report
    assert chain in report, report
    # The other contracts still hold: the failure is this contract's.
    assert "4 kept, 1 broken" in report
