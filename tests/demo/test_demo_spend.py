"""The demo shows spend (#29): its agents' answers land in the usage ledger with their cost
(OpenRouter's actual, a subscription row's included), and an OpenRouter key goes over its day
budget within a minute: the running proxy says so in words, as the console, `list` and the
panel show it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from store.paths import Home
from store.usage import report
from store.usage.ledger import ledger_path
from tui.services.proxy_feed import live_status, over_budget

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
OVER_TIMEOUT = 60.0      # "over budget" within a minute of the demo's start


def test_the_demo_spends_and_reaches_its_budget(tmp_path):
    home = Home(tmp_path / "h")
    code = f"from tui.demo.launch import run_demo; run_demo({str(home.root)!r}, open_dashboard=False)"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + OVER_TIMEOUT
        over: dict = {}
        while time.monotonic() < deadline and not over:
            over = over_budget(live_status(home))
            time.sleep(0.2)
        assert over, "no key went over its budget within a minute"
        (pool, _rid), words = next(iter(over.items()))
        assert pool == "openrouter" and words.startswith("over budget: $0.10 a day"), words
        found = report.spend_today(ledger_path(home.root), time.time(), 7 * 86400.0)
        statuses = {(p, g.cost_status) for (p, _r), g in found.items()}
        assert ("openrouter", "actual") in statuses, statuses
        assert {s for p, s in statuses if p in ("openai-codex", "anthropic")} <= {"included"}, statuses
        assert sum(g.known_usd or 0 for (p, _r), g in found.items() if p == "openrouter") >= 0.10
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
