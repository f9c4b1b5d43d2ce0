"""The package layers as a contract: import-linter's contracts (pyproject [tool.importlinter])
and no import cycle, counting imports hidden inside functions. Each check has its negative
control: a copy of the tree with one bad import added must fail it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.import_graph import LINT_IMPORTS, copy_tree, cycles, lint_imports, local_imports, modules, private_uses

ROOT = Path(__file__).resolve().parents[2]

# Function-local imports that stay, each because it measurably helps start-up (the comment
# at each says so): `hermes-admin list` does not load Textual, the screens or the demo.
# entry: the dashboard and demo load only when their verb runs; fleet: redis-py (~125 ms) only for
# fleet verbs; proxy: aiohttp (~1 s) only when the proxy runs; fleet_feed: redis-py only for a console
# started with --fleet; monitor: aiohttp, Apprise and prometheus_client only when the monitor runs;
# web: aiohttp's server and textual-serve only when `hermes-admin web` runs.
# One more stays for another reason: store/proxy/loop.py imports uvloop, an optional extra, only
# when HERMES_ADMIN_PROXY_LOOP=uvloop asks for it (and falls back to asyncio without it).
ALLOWED_LOCAL = {"tui/cli/entry.py", "tui/cli/fleet.py", "tui/cli/proxy.py", "tui/cli/monitor.py", "tui/cli/web.py",
                 "tui/services/fleet_feed.py", "store/proxy/loop.py",
                 # The console's first paint (issue 28): the proxy panel's control module and the
                 # probe (urllib, http.client) load when used; ruamel only for a round-trip edit.
                 "screens/dashboard_actions.py", "screens/proxy_view.py", "store/config/yamlread.py",
                 # The `:` command line's runner and the palette's provider load when first opened;
                 # the console-view save imports ruamel's editor only when it writes.
                 "tui/app/console.py", "store/config/console_view.py",
                 # The spend column (issue 29): sqlite3 and the ledger's reader load on its first
                 # read, on a worker after the first paint.
                 "tui/services/spend_feed.py",
                 # First paint, second round: the status bar's proxy and monitor readers load
                 # with their first look, after the first frame; filelock with the first lock
                 # (a reading console takes none); watchfiles only off the inotify path; the
                 # fleet's URL parser only for a URL option on the command line.
                 "screens/status_watch.py", "store/lock.py", "store/watch/loop.py", "tui/cli/boundary.py",
                 # Third round: the events log (rich.pretty) when first shown; the write path (the
                 # audit, the history, the settings) with the first write; an Anthropic row's
                 # OAuth test only for an Anthropic row that is not an API key.
                 "screens/dashboard_events.py", "tui/services/writer.py", "tui/widgets/table_spend.py"}


def _copy_tree(dest: Path) -> Path:
    return copy_tree(ROOT, dest)


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return lint_imports(root)


needs_linter = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed (test extra)")


@needs_linter
def test_import_contracts_are_kept() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 kept, 0 broken" in result.stdout


@needs_linter
@pytest.mark.parametrize("module, line, contract", [
    ("store/_bad.py", "import tui.text.format\n", "store never imports"),
    ("store/_bad.py", "from textual.widget import Widget\n", "store never imports"),
    ("tui/widgets/_bad.py", "from screens.help import HelpScreen\n", "app shell, CLI, demo and web > screens"),
    ("tui/cli/_bad.py", "def late():\n    import screens.help\n", "only the app shell imports screens"),
    ("store/proxy/routing/_bad.py", "from store.proxy.edge import relay\n", "proxy: serving > edge"),
    ("store/proxy/observing/_bad.py", "def late():\n    import store.proxy.forward\n", "proxy: serving > edge"),
])
def test_a_violating_import_breaks_a_contract(tmp_path: Path, module: str, line: str, contract: str) -> None:
    root = _copy_tree(tmp_path)
    (root / module).write_text(line)
    result = _lint(root)
    assert result.returncode != 0
    assert f"{contract}" in result.stdout and "BROKEN" in result.stdout


SHELL = ("tui.app", "tui.cli", "tui.demo")


def _layers() -> list[str]:
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["id"] == "layers")
    return [m.strip() for layer in layers for m in re.split(r"[:|]", layer) if m.strip()]


def test_every_module_of_tui_is_in_a_layer() -> None:
    layers = _layers()
    loose = [m for m in modules(ROOT) if m.startswith("tui.") and m != "tui"
             and not any(m == layer or m.startswith(layer + ".") for layer in layers)]
    assert loose == []


def _below_the_shell() -> list[str]:
    return [m for m in modules(ROOT) if m.startswith("tui.") and m != "tui"
            and not any(m == s or m.startswith(s + ".") for s in SHELL)]


@needs_linter
def test_a_screens_import_in_any_module_below_the_shell_breaks_the_layers(tmp_path: Path) -> None:
    """One copy of the tree with ``import screens.help`` added to every module of tui/ that is
    not the shell: import-linter must name each of them (a module outside every layer would
    pass unseen, which is how five modules once escaped the contract)."""
    root = _copy_tree(tmp_path)
    below = _below_the_shell()
    assert len(below) > 20          # the check itself: it looks at the whole tree
    for m in below:
        f = root / (m.replace(".", "/") + ".py")
        if not f.exists():
            f = root / m.replace(".", "/") / "__init__.py"
        f.write_text(f.read_text() + "\nimport screens.help  # noqa\n")
    result = _lint(root)
    assert result.returncode != 0
    report = result.stdout
    missed = [m for m in below if f"{m} -> screens" not in report]
    assert missed == [], report[-3000:]


def test_no_module_uses_another_modules_private_names() -> None:
    assert private_uses(ROOT) == []


def test_a_private_import_is_caught(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    (root / "store" / "_p.py").write_text("from store.authfile import _target\nfrom store import authfile as af\n"
                                           "x = af._fsync_dir\n")
    assert {h.split(" ", 1)[1] for h in private_uses(root) if h.startswith("store/_p.py")} == {
        "_target", "af._fsync_dir"}


def test_no_import_cycles_counting_function_local_imports() -> None:
    assert cycles(ROOT) == []


def test_a_cycle_hidden_in_a_function_is_found(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    (root / "store" / "_a.py").write_text("from . import _b\n")
    (root / "store" / "_b.py").write_text("def later():\n    from . import _a\n    return _a\n")
    assert cycles(root) == [["store._a", "store._b"]]


def test_function_local_imports_only_where_they_help_start_up() -> None:
    where = {hit.rpartition(":")[0] for hit in local_imports(ROOT)}
    assert where <= ALLOWED_LOCAL, sorted(where - ALLOWED_LOCAL)


def test_a_new_function_local_import_is_caught(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    (root / "store" / "_c.py").write_text("def f():\n    import json\n    return json\n")
    assert "store/_c.py:2" in local_imports(root)


TEST_IMPORT = re.compile(r"^\s*(from\s+(\.|tests\.(\w+\.)?)test_\w+\s+import|import\s+tests\.(\w+\.)?test_)", re.M)


def test_no_test_module_imports_another() -> None:
    """Shared fixtures live in conftest.py and helper modules, never in a test module."""
    offenders = [str(p) for p in (ROOT / "tests").rglob("test_*.py") if TEST_IMPORT.search(p.read_text())]
    assert offenders == []
    # Negative control: the pattern sees the import this rule forbids.
    assert TEST_IMPORT.search("from .test_fleet_sync import row\n")
