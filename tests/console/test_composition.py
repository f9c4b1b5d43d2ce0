"""The screens and the app shell are built by composition: no class mixes behaviour in from
a second base, no host is probed with getattr/hasattr, and the two apps implement every
member of the protocols that screens ask instead (tui.services.host).

Each check has its negative control: a class, a call or an app it must catch.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from store.paths import Home
from tests.profiles_sample import make_root, root_app
from tui.app.console import HermesAdminApp
from tui.services.host import Host, RootHost

ROOT = Path(__file__).resolve().parents[2]
SCANNED = sorted([*(ROOT / "screens").glob("*.py"), *(ROOT / "tui" / "app").glob("*.py")])


def mixed_classes(source: str) -> list[str]:
    """Classes with more than one base that are not typing Protocols: a mixin and its host."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.ClassDef) and len(node.bases) > 1
                and "Protocol" not in {ast.unparse(b) for b in node.bases}):
            out.append(node.name)
    return out


def probes(source: str) -> list[int]:
    """The lines of getattr/hasattr calls: a host asked for a member it might not have."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")]


def protocol_members(proto: type) -> set[str]:
    """Every attribute and method a protocol of tui.services.host declares, its bases' too."""
    names: set[str] = set()
    for cls in proto.__mro__:
        if cls.__module__ != "tui.services.host":
            continue
        names |= set(cls.__dict__.get("__annotations__", {}))
        names |= {n for n, v in cls.__dict__.items() if callable(v) and not n.startswith("_")}
    return names


def missing(proto: type, app: object) -> set[str]:
    return {name for name in protocol_members(proto) if not hasattr(app, name)}


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_screen_or_app_class_mixes_behaviour_in(path: Path) -> None:
    assert mixed_classes(path.read_text(encoding="utf-8")) == []


def test_the_mixin_check_catches_a_mixin_and_lets_a_protocol_be() -> None:
    assert mixed_classes("class Dashboard(ProxySummary, Screen):\n    pass\n") == ["Dashboard"]
    assert mixed_classes("class Board(HasApp, Protocol):\n    pass\n") == []
    assert mixed_classes("class Dashboard(Screen):\n    pass\n") == []


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_screen_or_app_module_probes_with_getattr(path: Path) -> None:
    assert probes(path.read_text(encoding="utf-8")) == []


def test_the_probe_check_catches_getattr_and_hasattr() -> None:
    assert probes("if getattr(app, 'freeze_heap', False):\n    pass\n") == [1]
    assert probes("x = 1\nif not hasattr(self, 'results'):\n    pass\n") == [2]
    assert probes("app = host(self)\nif app.freeze_heap:\n    pass\n") == []


def test_the_console_implements_every_member_of_host(tmp_home: Home) -> None:
    app = HermesAdminApp(tmp_home, watch=False, tick=False)
    assert {"home", "freeze_heap", "watch_enabled", "dashboard_action", "reload"} <= protocol_members(Host)
    assert missing(Host, app) == set()


def test_the_root_console_implements_every_member_of_root_host(tmp_path: Path) -> None:
    app = root_app(make_root(tmp_path))
    assert {"root", "acting", "context", "use_profile", "home"} <= protocol_members(RootHost)
    assert missing(RootHost, app) == set()


def test_the_member_check_catches_an_app_without_one(tmp_home: Home) -> None:
    # Control: a single-home console is no RootHost, and a stand-in without freeze_heap no Host.
    assert {"root", "acting", "set_context"} <= missing(RootHost, HermesAdminApp(tmp_home, watch=False))
    stand_in = SimpleNamespace(**{name: None for name in protocol_members(Host) - {"freeze_heap"}})
    assert missing(Host, stand_in) == {"freeze_heap"}
