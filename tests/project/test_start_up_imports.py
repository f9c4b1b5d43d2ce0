"""The console's start-up imports nothing its first screen does not use (issue 28).

A fresh interpreter imports the console's entry (``tui.cli.entry``), parses the console's
command line and builds the app as ``hermes-admin --home DIR`` does, then lists which of the
heavy modules below are in ``sys.modules``: none may be. Each is either a verb's (the proxy's
aiohttp, the monitor's Apprise and prometheus_client, the fleet's redis-py, the config editors'
ruamel), a view's that is not on screen, or loaded by the first use that needs it (the first
lock, the first write, the first look at a proxy's status file after the first frame).

After the first frame, the status bar's first looks for a proxy and a monitor read their
status files; on a home where neither has ever run (no such file) they load no reader at all.
Control: the same probe with a status file of each on the home sees both readers loaded.

A verb's start-up (``hermes-admin list``) loads no event loop: ``asyncio`` is for the verbs
that run one (the proxy, the monitor, the web console), not for every command.

Negative controls: a copy of the tree with one cut undone (the status bar's watcher importing
the proxy's reader at the top again, the crash module importing asyncio again, the dashboard
composing the events log at start again, the writer importing the write path at the top again)
fails the check; the same probe after one eager import of a module that pulls a heavy one in sees it;
and the probe's list is checked to name modules that exist.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from store.watch import inotify
from tests.import_graph import copy_tree

ROOT = Path(__file__).resolve().parents[2]

HEAVY = (
    # verbs' libraries
    "aiohttp", "redis", "prometheus_client", "apprise", "genai_prices", "ruamel", "sqlite3",
    "http.client", "urllib.request", "rich.syntax", "pygments",
    # the proxy, the monitor and the fleet themselves, and the proxy's outcome vocabulary
    "store.proxy.observing.stats", "store.proxy.server", "store.monitor.status", "store.monitor.daemon",
    "store.fleet.keys", "store.fleet.client", "store.agent.outcomes", "store.dialects.registry", "email.utils",
    # loaded by their first use: a lock, a watch off the inotify path
    "filelock", "watchfiles", "anyio", "multiprocessing",
    # screens the first paint does not show
    "screens.confirm", "screens.help", "screens.proxy_view", "screens.monitor_view", "screens.config_view",
    # the events log, hidden until `e` (its RichLog pulls rich.pretty and attrs in)
    "tui.widgets.events_log", "rich.pretty", "attr",
    # the write path, loaded by the operator's first write (the audit, the history, getpass)
    "store.ops.write", "store.ops.audit", "store.ops.history", "getpass",
    # the whole settings schema (budgets, the proxy's, the ledger's): the console's view needs its file only
    "store.config.settings", "store.config.budgets", "store.config.proxy_settings",
)

PROBE = """
import json, sys, tempfile
from pathlib import Path
{extra}
from tui.cli import entry
from store.paths import Home
from tui.app.console import HermesAdminApp
from tui.app.keymap import keymap_path

root = Path(tempfile.mkdtemp())
args = entry.build_parser(["--home", str(root)]).parse_args(["--home", str(root)])
assert getattr(args, "func", None) is None          # no verb: the console
app = HermesAdminApp(Home(root), keymap_file=keymap_path())
names = {names!r}
print(json.dumps(sorted(n for n in names if n in sys.modules)))
"""


VERB_PROBE = """
import json, sys
from tui.cli import entry
entry.build_parser(["list"]).parse_args(["list"])
print(json.dumps(sorted(n for n in ("asyncio", "textual", "filelock", "store.fleet.keys") if n in sys.modules)))
"""


PAINT_PROBE = """
import asyncio, json, sys, tempfile
from pathlib import Path
from store.paths import Home
from tui.app.console import HermesAdminApp

root = Path(tempfile.mkdtemp())
for name in {files!r}:
    (root / name).write_text("{{}}")
looked = []

async def main():
    app = HermesAdminApp(Home(root), watch=False, tick=False)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(50):          # bounded: until both first looks ran (after the first frame)
            await pilot.pause()
            board = app.dashboard
            if board.proxy.first.waited and board.monitor.first.waited:
                break
        for _ in range(3):
            await pilot.pause()
        looked.append(board.proxy.first.waited and board.monitor.first.waited)

asyncio.run(main())
assert looked == [True], looked
print(json.dumps(sorted(n for n in {names!r} if n in sys.modules)))
"""
READERS = ("tui.services.proxy_feed", "store.proxy.observing.stats", "tui.services.monitor_feed",
           "store.monitor.status")


def _run(code: str, root: Path = ROOT) -> list[str]:
    # The tree at *root* first on the path (a broken copy shadows the installed one); no
    # keymap or settings of the machine's user.
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "HOME": str(root / ".no-home"),
           "XDG_CONFIG_HOME": str(root / ".no-config")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def loaded(extra: str = "", root: Path = ROOT) -> list[str]:
    """The HEAVY modules in sys.modules of a fresh interpreter once the console's app is built."""
    return _run(PROBE.format(extra=extra, names=list(HEAVY)), root)


def _undo(tmp_path: Path, module: str, old: str, new: str) -> Path:
    """A copy of the tree with *old* in *module* replaced by *new* (one cut undone)."""
    root = copy_tree(ROOT, tmp_path / "tree")
    path = root / module
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{module} no longer has {old!r}: update the control"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return root


@pytest.mark.skipif(not inotify.available(), reason="the watchfiles backend imports watchfiles at start")
def test_the_console_start_up_imports_nothing_heavy() -> None:
    assert loaded() == []


def test_no_status_file_no_reader_after_the_first_frame() -> None:
    assert _run(PAINT_PROBE.format(files=[], names=READERS)) == []


def test_control_status_files_load_their_readers() -> None:
    files = ["hermes-admin-proxy-8645.json", "hermes-admin-monitor.json"]
    assert _run(PAINT_PROBE.format(files=files, names=READERS)) == sorted(READERS)


def test_control_the_proxy_look_without_its_listing_loads_the_reader(tmp_path: Path) -> None:
    root = _undo(tmp_path, "screens/status_watch.py", "return              # no proxy ever wrote here",
                 "pass                # no proxy ever wrote here")
    assert "store.proxy.observing.stats" in _run(PAINT_PROBE.format(files=[], names=READERS), root)


def test_a_verbs_start_up_loads_no_event_loop() -> None:
    assert _run(VERB_PROBE) == []


def test_control_the_crash_module_importing_asyncio_again_is_seen(tmp_path: Path) -> None:
    root = _undo(tmp_path, "store/redaction/crash.py", "import logging\n", "import asyncio\nimport logging\n")
    assert "asyncio" in _run(VERB_PROBE, root)


@pytest.mark.skipif(not inotify.available(), reason="the watchfiles backend imports watchfiles at start")
def test_control_the_status_watch_importing_its_readers_again_is_seen(tmp_path: Path) -> None:
    root = _undo(tmp_path, "screens/status_watch.py", "from store.paths import Home\n",
                 "from store.paths import Home\nfrom tui.services import monitor_feed, proxy_feed  # noqa\n")
    assert {"store.proxy.observing.stats", "store.agent.outcomes"} <= set(loaded(root=root))


@pytest.mark.skipif(not inotify.available(), reason="the watchfiles backend imports watchfiles at start")
def test_control_the_dashboard_importing_the_events_log_again_is_seen(tmp_path: Path) -> None:
    old = "from screens.dashboard_events import EventsTimeline\n"
    root = _undo(tmp_path, "screens/dashboard.py", old, old + "from tui.widgets.events_log import EventsLog  # noqa\n")
    assert {"tui.widgets.events_log", "rich.pretty", "attr"} <= set(loaded(root=root))


@pytest.mark.skipif(not inotify.available(), reason="the watchfiles backend imports watchfiles at start")
def test_control_the_writer_importing_the_write_path_again_is_seen(tmp_path: Path) -> None:
    root = _undo(tmp_path, "tui/services/writer.py", "from store.lock import lock_is_free\n",
                 "from store.lock import lock_is_free\nfrom store.ops.write import perform  # noqa\n")
    assert {"store.ops.write", "store.ops.audit", "getpass"} <= set(loaded(root=root))


@pytest.mark.parametrize("eager, seen", [
    ("import tui.services.proxy_feed", {"store.proxy.observing.stats", "store.agent.outcomes", "email.utils"}),
    ("import filelock", {"filelock"}),
    ("import watchfiles", {"watchfiles", "anyio", "multiprocessing"}),
    ("import store.fleet.keys", {"store.fleet.keys"}),
    ("import screens.confirm", {"screens.confirm"}),
    ("import tui.widgets.events_log", {"tui.widgets.events_log", "rich.pretty", "attr"}),
    ("import store.ops.write", {"store.ops.write", "store.ops.audit", "store.ops.history", "getpass"}),
    ("import store.config.settings", {"store.config.settings", "store.config.budgets", "store.config.proxy_settings"}),
])
def test_control_an_eager_import_is_seen(eager: str, seen: set[str]) -> None:
    assert seen <= set(loaded(eager))


def test_control_every_name_checked_can_be_imported() -> None:
    """A misspelt name would never be in sys.modules and would pass unseen."""
    missing = [name for name in HEAVY if importlib.util.find_spec(name) is None]
    # Optional extras that a test environment may lack are the only ones allowed missing.
    assert set(missing) <= {"genai_prices", "pygments", "apprise", "prometheus_client", "redis"}, missing
