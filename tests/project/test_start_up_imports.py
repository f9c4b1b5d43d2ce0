"""The console's start-up imports nothing its first screen does not use (issue 28).

A fresh interpreter imports the console's entry (``tui.cli.entry``), parses the console's
command line and builds the app as ``hermes-admin --home DIR`` does, then lists which of the
heavy modules below are in ``sys.modules``: none may be. Each is either a verb's (the proxy's
aiohttp, the monitor's Apprise and prometheus_client, the fleet's redis-py, the config editors'
ruamel), a view's that is not on screen, or loaded by the first use that needs it (the first
lock, the first write, the first look at a proxy's status file after the first frame).

Negative controls: the same probe, with one eager import of a module that pulls a heavy one
in (as the status bar's watcher did with the proxy's stats, the lock module with filelock),
sees it; and the probe's list is checked to name modules that exist.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from store.watch import inotify

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


def loaded(extra: str = "") -> list[str]:
    """The HEAVY modules in sys.modules of a fresh interpreter once the console's app is built."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(ROOT / ".no-home"), "XDG_CONFIG_HOME": str(ROOT / ".no-config")}
    proc = subprocess.run([sys.executable, "-c", PROBE.format(extra=extra, names=list(HEAVY))], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.skipif(not inotify.available(), reason="the watchfiles backend imports watchfiles at start")
def test_the_console_start_up_imports_nothing_heavy() -> None:
    assert loaded() == []


@pytest.mark.parametrize("eager, seen", [
    ("import tui.services.proxy_feed", {"store.proxy.observing.stats", "store.agent.outcomes", "email.utils"}),
    ("import filelock", {"filelock"}),
    ("import watchfiles", {"watchfiles", "anyio", "multiprocessing"}),
    ("import store.fleet.keys", {"store.fleet.keys"}),
    ("import screens.confirm", {"screens.confirm"}),
])
def test_control_an_eager_import_is_seen(eager: str, seen: set[str]) -> None:
    assert seen <= set(loaded(eager))


def test_control_every_name_checked_can_be_imported() -> None:
    """A misspelt name would never be in sys.modules and would pass unseen."""
    missing = [name for name in HEAVY if importlib.util.find_spec(name) is None]
    # Optional extras that a test environment may lack are the only ones allowed missing.
    assert set(missing) <= {"genai_prices", "pygments", "apprise", "prometheus_client", "redis"}, missing
