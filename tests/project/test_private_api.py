"""Guards for the one place hermes-admin uses a library's private API (the credential table
is a Line API ScrollView built on Textual's public API only).

- store/watch/loop.py builds ``watchfiles._rust_notify.RustNotify`` directly, so the watch is
  armed before the first load.
- tui/app/console.py overrides ``textual.app.App._fatal_error``: Textual has no public hook for
  its crash report, whose own version prints every local of every frame (a row's
  ``access_token`` included). The override keeps Textual's exit path through the public
  ``App.panic`` and prints the redacted traceback instead (RELIABILITY 36).

When an upgrade renames or reshapes any of these, these tests fail first, naming what
changed, instead of the console drawing stale rows or the watcher dying at run time.
The pins in pyproject (textual <9, watchfiles <2) keep such an upgrade deliberate.
"""

from __future__ import annotations

import inspect
import threading
from pathlib import Path

from tests.import_graph import modules

ROOT = Path(__file__).resolve().parents[2]
PRIVATE_IMPORTS = ("textual._", "watchfiles._", "textual_serve._")


def _params(fn) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p != "self"]


def test_rust_notify_keeps_its_constructor_and_watch(tmp_path: Path) -> None:
    from watchfiles._rust_notify import RustNotify

    notify = RustNotify([str(tmp_path)], False, False, 300, False, False)
    stop = threading.Event()
    stop.set()
    with notify:
        assert notify.watch(10, 5, 10, stop) in ("stop", "timeout", set())


def test_private_api_is_used_in_one_module_each() -> None:
    users: dict[str, set[str]] = {p: set() for p in PRIVATE_IMPORTS}
    for name, path in modules(ROOT).items():
        text = path.read_text(encoding="utf-8")
        for prefix in PRIVATE_IMPORTS:
            if f"from {prefix}" in text or f"import {prefix}" in text:
                users[prefix].add(name)
    assert users == {"textual._": set(), "watchfiles._": {"store.watch.loop"}, "textual_serve._": set()}


def test_textual_still_reports_crashes_through_fatal_error() -> None:
    from textual.app import App

    assert _params(App._fatal_error) == [], "App._fatal_error changed its signature"
    source = inspect.getsource(App._handle_exception)
    assert "self._fatal_error()" in source, "App._handle_exception no longer calls _fatal_error"
    assert _params(App.panic) == ["renderables"], "App.panic, the public way out, changed"


def test_the_crash_report_override_is_in_one_module() -> None:
    overriding = {name for name, path in modules(ROOT).items()
                  if "def _fatal_error(" in path.read_text(encoding="utf-8")}
    assert overriding == {"tui.app.console"}
