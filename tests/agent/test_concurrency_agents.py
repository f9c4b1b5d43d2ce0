"""Four agent processes on one home through store.agent.runtime, against the fake provider, with
console actions interleaved and the real Hermes 0.19.0 pool as a fifth writer.

Asserted: no lost request counts (each agent reports how many selections it counted; the
sum equals the store's request_count deltas), no lease beyond the cap while a row below it
was free, and a reader polling the file never sees an invalid store. The lock itself has
its negative controls (a lock-free writer must lose updates) in test_rel_concurrency.py.
"""

from __future__ import annotations

import json
import os
import random
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from store.authfile import read_store
from store.errors import HermesAdminError
from store.ops import actions
from store.paths import Home
from store.transaction import transaction
from tests.conftest import make_row, make_store, read_doc, write_store
from tui.demo.fake_provider import FakeProvider, Quota, billing

pytestmark = [pytest.mark.slow, pytest.mark.hermes]

# The issue asked for 30 s (HERMES_ADMIN_AGENT_SECONDS=30 runs that). In CI 12 s: the cooldown
# TTLs (2-3 s), quota windows (2-3 s) and restore interval (1 s) still cycle several times,
# every asserted path (429, 402, fallback, leases at the cap, ~36 console actions, ~120
# Hermes bumps) is reached, and the suite stays near 10 minutes on a 2-core machine.
DURATION = float(os.environ.get("HERMES_ADMIN_AGENT_SECONDS", "12"))
ROOT = Path(__file__).resolve().parents[2]
OUR_POOLS = ("openrouter", "openai-codex", "custom:together.ai")
HERMES_POOL = "deepseek"

CONFIG = """\
credential_pool_strategies:
  openrouter: round_robin
  openai-codex: least_used
fallback_providers:
  - provider: openrouter
    model: anthropic/claude-sonnet-4
  - provider: custom
    model: local
    base_url: {url}/v1
custom_providers:
  - name: Together.ai
    base_url: {url}/v1
hermes_admin:
  cooldown_ttls: {{429: 2, 401: 2, default: 3, only_row: 2}}
"""


def _seed(home: Home, url: str) -> dict[str, str]:
    keys = {f"or{i}": f"sk-or-v1-conc-000000000000000{i:04d}" for i in range(4)}
    keys.update({f"cx{i}": f"cdx-conc-token-0000000000000{i:04d}" for i in range(2)})
    keys["tg0"] = "tg-conc-key-00000000000000000000"
    write_store(home, make_store({
        "openrouter": [make_row(f"or{i}aaa", token=keys[f"or{i}"], priority=i,
                                base_url=url + "/api/v1", request_count=5) for i in range(4)],
        "openai-codex": [make_row(f"cx{i}aaa", token=keys[f"cx{i}"], priority=i,
                                  auth_type="oauth", source="device_code",
                                  base_url=url + "/backend-api") for i in range(2)],
        "custom:together.ai": [make_row("tg0aaa", token=keys["tg0"], base_url=url + "/v1")],
        HERMES_POOL: [make_row("ds0aaa", token="sk-deepseek-conc-00000000001", request_count=11)],
    }, unknown_top={"kept": [1, 2, 3]}))
    home.config.write_text(CONFIG.format(url=url))
    return keys


def _counts(doc: dict) -> dict[str, int]:
    return {f"{pool}/{r['id']}": r.get("request_count", 0)
            for pool in (*OUR_POOLS, HERMES_POOL) for r in doc["credential_pool"].get(pool, [])}


class _Reader(threading.Thread):
    """Polls auth.json without a lock; every read must parse as a store."""

    def __init__(self, home: Home, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.home, self.stop = home, stop
        self.reads = 0
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                snap = read_store(self.home)
                assert snap.doc is not None and "openrouter" in snap.doc["credential_pool"]
                self.reads += 1
            except (HermesAdminError, AssertionError) as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self.stop.wait(0.005)


def _console(home: Home, stop: threading.Event, done: list[str]) -> None:
    """An operator clicking around: resets and manual cooldowns through transactions."""
    rng = random.Random(7)
    while not stop.is_set():
        pool = rng.choice(("openrouter", "openai-codex"))
        now = time.time()
        try:
            with transaction(home, lock_timeout=10) as doc:
                rows = doc["credential_pool"][pool]
                target = rng.choice(rows)["id"]
                if rng.random() < 0.5:
                    actions.reset(doc, pool, target, now)
                    done.append("reset")
                else:
                    # An operator who confirms the shortening (#20 asks when a bench is longer).
                    actions.cooldown(doc, pool, target, now + 1.5, now, "console", shorten=True)
                    done.append("cooldown")
        except HermesAdminError as exc:
            done.append(f"error {exc}")
        stop.wait(0.3)


def test_four_agents_console_and_hermes_on_one_home(tmp_home, hermes):
    with FakeProvider() as fake:
        keys = _seed(tmp_home, fake.url)
        # Provoke every path: quotas that run out (429 + reset headers), a usage limit on
        # Codex, a billing key, a server error.
        fake.quota(keys["or0"], Quota(limit=4, window=2))
        fake.quota(keys["or1"], Quota(limit=6, window=3))
        fake.script(keys["or3"], billing())
        fake.quota(keys["cx0"], Quota(limit=5, window=3, usage_limit=True))
        fake.quota(keys["cx1"], Quota(limit=3, window=2))
        before = _counts(read_doc(tmp_home))

        stop = threading.Event()
        reader = _Reader(tmp_home, stop)
        console_done: list[str] = []
        console = threading.Thread(target=_console, args=(tmp_home, stop, console_done), daemon=True)
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        agents = []
        for i, pool in enumerate(("openrouter", "openrouter", "openai-codex", "openai-codex")):
            report = tmp_home.root.parent / f"agent-{i}.json"
            argv = [sys.executable, "-m", "tui.demo.agent", "--home", str(tmp_home.root),
                    "--pool", pool, "--interval", "0.05", "--duration", str(DURATION),
                    "--restore-interval", "1", "--subagents", "2", "--report", str(report),
                    "--lock-timeout", "20"]
            agents.append((subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True), report))
        bumps = int(DURATION * 10)
        hermes.start_bump(HERMES_POOL, bumps, pause=0.05)
        reader.start()
        console.start()
        try:
            outputs = [p.communicate(timeout=DURATION + 30) for p, _ in agents]
            hermes_result = hermes.finish(timeout=DURATION + 60)
        finally:
            stop.set()
            for p, _ in agents:
                if p.poll() is None:
                    p.kill()
            reader.join(timeout=5)
            console.join(timeout=15)

    for (p, _), (_out, err) in zip(agents, outputs, strict=True):
        assert p.returncode == 0, err
    reports = [json.loads(r.read_text()) for _, r in agents]
    after_doc = read_doc(tmp_home)
    after = _counts(after_doc)

    # No lost request counts: every selection an agent counted is in the file, and Hermes's too.
    ours = sum(after[k] - before[k] for k in after if not k.startswith(HERMES_POOL))
    assert ours == sum(r["selections"] for r in reports)
    assert after[f"{HERMES_POOL}/ds0aaa"] == before[f"{HERMES_POOL}/ds0aaa"] + bumps
    assert hermes_result["last"] == 11 + bumps

    # The agents really hit the interesting paths.
    statuses: dict[str, int] = {}
    for r in reports:
        for code, n in r["statuses"].items():
            statuses[code] = statuses.get(code, 0) + n
    assert statuses.get("200", 0) > 50 and statuses.get("429", 0) > 0 and statuses.get("402", 0) > 0
    assert any("fallback" in r["notices"] for r in reports[2:])
    assert all(r["leases"] > 0 and r["over_cap_leases"] == 0 for r in reports)
    assert [c for c in console_done if c.startswith("error")] == []
    assert len(console_done) >= DURATION      # ~3 actions a second

    # The file stayed valid throughout, kept what it does not own, and is still private.
    assert reader.errors == [] and reader.reads > 100
    assert after_doc["unknown_top"] == {"kept": [1, 2, 3]}
    assert stat.S_IMODE(os.stat(tmp_home.auth).st_mode) == 0o600
