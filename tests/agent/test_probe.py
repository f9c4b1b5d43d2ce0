"""Reopen probes (spec section 6): Codex usage, OpenRouter key, registry, verdict cache,
and lift_reopened_cooldowns (probe first, then one transaction; never network under lock)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from store.agent import probe
from store.lock import lock_is_free
from store.paths import Home
from store.pools import policy
from store.transaction import transaction
from tests.conftest import make_row, make_store, read_doc, write_store
from tui.demo.fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_800_000_000.0


@pytest.fixture
def fake():
    with FakeProvider() as fp:
        yield fp


def codex_row(rid: str, token: str, base: str, **kw) -> dict:
    fields = dict(last_status="exhausted", last_status_at=NOW - 10, last_error_code=429,
                  last_error_reason="usage_limit_reached", last_error_reset_at=NOW + 3 * 3600)
    fields.update(kw)
    return make_row(rid, token=token, base_url=base, **fields)


# --- the Codex probe ------------------------------------------------------------------------

def test_codex_usage_url_follows_the_base():
    assert probe.codex_usage_url("https://chatgpt.com/backend-api/") == \
        "https://chatgpt.com/backend-api/wham/usage"
    assert probe.codex_usage_url("https://api.example.com") == "https://api.example.com/api/codex/usage"
    assert probe.codex_usage_url(None).endswith("/backend-api/wham/usage")


@pytest.mark.parametrize("kwargs,state", [
    (dict(used_percent=40.0), probe.REOPENED),
    (dict(used_percent=40.0, secondary=99.9), probe.REOPENED),
    (dict(used_percent=40.0, secondary=100.0), probe.LIMITED),
    (dict(used_percent=10.0, additional=[20.0, 100.0]), probe.LIMITED),
    (dict(used_percent=100.0), probe.LIMITED),
    (dict(status=429), probe.LIMITED),
    (dict(status=500), probe.UNKNOWN),
    (dict(status=401), probe.UNKNOWN),
])
def test_codex_probe_verdicts(fake, kwargs, state):
    fake.usage("tok-codex-1", **kwargs)
    for base in (fake.url + "/backend-api", fake.url):
        v = probe.codex_probe({"base_url": base}, "tok-codex-1", timeout=2)
        assert v.state == state, (base, v)
        if state == probe.UNKNOWN:
            assert v.reason and "tok-codex-1" not in v.reason
    # Both URL shapes were used, with the bearer token.
    paths = {p for _m, p, k, _s in fake.log if k == "tok-codex-1"}
    assert paths == {"/backend-api/wham/usage", "/api/codex/usage"}


def test_codex_probe_unreachable_and_malformed_are_unknown(fake):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    v = probe.codex_probe({"base_url": f"http://127.0.0.1:{dead_port}"}, "tok", timeout=1)
    assert v.state == probe.UNKNOWN and "unreachable" in v.reason
    assert probe.worst_used_percent({"rate_limit": {}}) is None
    assert probe.worst_used_percent({"rate_limit": {"primary_window": {"used_percent": "x"}}}) is None


# --- OpenRouter -----------------------------------------------------------------------------

@pytest.mark.parametrize("limit,remaining,status,state", [
    (None, None, 200, probe.REOPENED),
    (10.0, 2.5, 200, probe.REOPENED),
    (10.0, 0, 200, probe.LIMITED),
    (10.0, None, 200, probe.UNKNOWN),
    (None, None, 429, probe.LIMITED),
    (None, None, 502, probe.UNKNOWN),
])
def test_openrouter_probe(fake, limit, remaining, status, state):
    fake.key_info("sk-or-v1-probe", limit=limit, limit_remaining=remaining, status=status)
    v = probe.openrouter_probe({"base_url": fake.url + "/api/v1"}, "sk-or-v1-probe", timeout=2)
    assert v.state == state, v
    assert fake.log[-1][1] == "/api/v1/key"


# --- registry -------------------------------------------------------------------------------

def test_registry_accepts_a_new_provider():
    seen = []

    def my_probe(row, token, timeout):
        seen.append(token)
        return probe.Verdict(probe.REOPENED, "test", 0.0)

    probe.register_probe("xai", my_probe)
    try:
        fn = probe.default_verdict_fn(cache=probe.VerdictCache())
        row = codex_row("a", "tok-xai", "http://unused")
        assert fn("xai", row).reopened
        assert seen == ["tok-xai"]
        # A pool with no probe is "unknown", never "reopened".
        assert fn("nous", row).state == probe.UNKNOWN
    finally:
        probe.unregister_probe("xai")
    assert probe.probe_for("xai") is None


def test_rows_not_benched_for_a_limit_are_not_probed():
    calls = []
    probe.register_probe("zz", lambda r, t, to: calls.append(t) or probe.Verdict(probe.REOPENED))
    try:
        fn = probe.default_verdict_fn(cache=probe.VerdictCache())
        row = make_row("a", token="tok", last_status="exhausted", last_status_at=NOW,
                       last_error_code=500, last_error_reason="server_error")
        assert fn("zz", row).state == probe.UNKNOWN
        assert calls == []
    finally:
        probe.unregister_probe("zz")


# --- the verdict cache ----------------------------------------------------------------------

class _Clock:
    def __init__(self, t: float = NOW) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_cache_keeps_a_verdict_300s_per_token():
    clock = _Clock()
    cache = probe.VerdictCache(clock=clock)
    runs = []

    def run(tag):
        return lambda: runs.append(tag) or probe.Verdict(probe.REOPENED, tag, clock())

    assert cache.get("tok-a", run("a1")).reason == "a1"
    clock.t += 299
    assert cache.get("tok-a", run("a2")).reason == "a1"
    assert cache.get("tok-b", run("b1")).reason == "b1"      # per token
    clock.t += 2
    assert cache.get("tok-a", run("a3")).reason == "a3"      # expired
    assert runs == ["a1", "b1", "a3"]


def test_cache_does_not_keep_the_token_in_clear():
    cache = probe.VerdictCache()
    cache.get("sk-secret-token-0123456789", lambda: probe.Verdict(probe.LIMITED))
    assert "sk-secret-token-0123456789" not in repr(cache._slots)


class _NoReserveCache(probe.VerdictCache):
    """The stampede-prone variant: look up, then probe, then store (no reserved slot)."""

    def get(self, token, fn):
        key = self.key_of(token)
        with self._lock:
            slot = self._slots.get(key)
        if slot is not None and slot.verdict is not None:
            return slot.verdict
        v = fn()
        self.put(token, v)
        return v


@pytest.mark.parametrize("cache_cls,expect_one", [(probe.VerdictCache, True), (_NoReserveCache, False)])
def test_concurrent_callers_make_one_request(fake, cache_cls, expect_one):
    fake.usage("tok-slow", 20.0)
    fake.delay("/wham/usage", 0.4)
    cache = cache_cls()
    fn = probe.default_verdict_fn(cache=cache, timeout=3)
    row = codex_row("a", "tok-slow", fake.url + "/backend-api")
    results = []
    threads = [threading.Thread(target=lambda: results.append(fn("openai-codex", row)))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert len(results) == 8 and all(v.reopened for v in results)
    requests = fake.requests_to("/wham/usage")
    if expect_one:
        assert requests == 1
    else:   # negative control: without the reserved slot the callers stampede
        assert requests > 1


# --- lift_reopened_cooldowns ----------------------------------------------------------------

def _seed_codex(home: Home, base: str) -> None:
    write_store(home, make_store({"openai-codex": [
        codex_row("aaa111", "tok-reopened", base, priority=0, request_count=7),
        codex_row("bbb222", "tok-limited", base, priority=1, request_count=3),
        make_row("ccc333", token="tok-elapsed", priority=2, base_url=base, last_status="exhausted",
                 last_status_at=NOW - 7200, last_error_code=429, request_count=1),
        make_row("ddd444", token="tok-dead", priority=3, base_url=base, last_status="dead",
                 last_status_at=NOW - 10, last_error_code=401, last_error_reason="token_revoked"),
    ]}, extra_top={"kept": True}))


def test_lift_clears_elapsed_and_reopened_only(tmp_home, fake):
    _seed_codex(tmp_home, fake.url + "/backend-api")
    fake.usage("tok-reopened", 35.0)
    fake.usage("tok-limited", 100.0)
    res = probe.lift_reopened_cooldowns(
        tmp_home, "openai-codex", probe.default_verdict_fn(cache=probe.VerdictCache()), NOW)
    assert res.cleared_reopened == ["aaa111"]
    assert res.cleared_elapsed == ["ccc333"]
    assert res.available and res.wrote
    assert res.verdicts["bbb222"].state == probe.LIMITED
    assert "ddd444" not in res.verdicts                      # dead rows are not probed
    rows = {r["id"]: r for r in read_doc(tmp_home)["credential_pool"]["openai-codex"]}
    assert rows["aaa111"]["last_status"] is None and rows["aaa111"]["status_cleared_at"] == NOW
    assert rows["bbb222"]["last_status"] == "exhausted"
    assert rows["ccc333"]["last_status"] == "ok"
    assert rows["ddd444"]["last_status"] == "dead"
    # Nothing selected or counted.
    assert [rows[i]["request_count"] for i in ("aaa111", "bbb222", "ccc333")] == [7, 3, 1]
    assert read_doc(tmp_home)["extra_top"] == {"kept": True}
    # The dead row's token was never sent anywhere.
    assert all(k != "tok-dead" for _m, _p, k, _s in fake.log)


def test_lift_without_change_does_not_write(tmp_home, fake):
    write_store(tmp_home, make_store({"openai-codex": [
        codex_row("aaa111", "tok-limited", fake.url + "/backend-api")]}))
    fake.usage("tok-limited", 100.0)
    before = tmp_home.auth.read_bytes()
    res = probe.lift_reopened_cooldowns(
        tmp_home, "openai-codex", probe.default_verdict_fn(cache=probe.VerdictCache()), NOW)
    assert not res.available and not res.wrote and res.cleared_reopened == []
    assert tmp_home.auth.read_bytes() == before


def test_lift_leaves_a_row_benched_again_since_the_probe(tmp_home):
    write_store(tmp_home, make_store({"openai-codex": [codex_row("aaa111", "tok", "http://x")]}))

    def verdict_while_agent_rebenches(pool, row):
        # Another agent benches the row again while our probe is in flight.
        with transaction(tmp_home) as doc:
            r = doc["credential_pool"]["openai-codex"][0]
            policy.mark_exhausted([r], r, NOW + 1, code=429, reason="rate_limit_exceeded")
        return probe.Verdict(probe.REOPENED, "stale", NOW)

    res = probe.lift_reopened_cooldowns(tmp_home, "openai-codex", verdict_while_agent_rebenches, NOW)
    assert res.cleared_reopened == []
    row = read_doc(tmp_home)["credential_pool"]["openai-codex"][0]
    assert row["last_status"] == "exhausted" and row["last_status_at"] == NOW + 1


def test_a_probe_that_raises_lifts_nothing(tmp_home):
    write_store(tmp_home, make_store({"openai-codex": [codex_row("aaa111", "tok", "http://x")]}))
    probe.register_probe("openai-codex", lambda r, t, to: 1 / 0)
    try:
        fn = probe.default_verdict_fn(cache=probe.VerdictCache())
        res = probe.lift_reopened_cooldowns(tmp_home, "openai-codex", fn, NOW)
    finally:
        probe.register_probe("openai-codex", probe.codex_probe)
    assert res.verdicts["aaa111"].state == probe.UNKNOWN
    assert "ZeroDivisionError" in res.verdicts["aaa111"].reason
    assert not res.available and res.cleared_reopened == []


# --- no network while auth.lock is held -----------------------------------------------------

def _naive_lift(home, pool, verdict_fn, now):
    """The bug this module exists to avoid: probing inside the transaction."""
    with transaction(home) as doc:
        for row in doc["credential_pool"][pool]:
            if verdict_fn(pool, row).reopened:
                policy.reset(row, now)


@pytest.mark.parametrize("lift,expect_clean", [
    (probe.lift_reopened_cooldowns, True), (_naive_lift, False)])
def test_no_network_call_while_the_lock_is_held(tmp_home, fake, monkeypatch, lift, expect_clean):
    write_store(tmp_home, make_store({"openai-codex": [
        codex_row("aaa111", "tok-a", fake.url + "/backend-api")]}))
    fake.usage("tok-a", 10.0)
    held_during_connect = []
    real_connect = socket.socket.connect

    def guarded_connect(self, address):
        held_during_connect.append(not lock_is_free(tmp_home.lock))
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    lift(tmp_home, "openai-codex", probe.default_verdict_fn(cache=probe.VerdictCache()), NOW)
    assert held_during_connect, "the probe made no network call at all"
    if expect_clean:
        assert not any(held_during_connect)
        assert read_doc(tmp_home)["credential_pool"]["openai-codex"][0]["last_status"] is None
    else:   # negative control: the guard does catch a call under the lock
        assert any(held_during_connect)


_TAKE_LOCK = """
import sys, time
from store.paths import Home
from store.transaction import transaction
print("ready", flush=True)
sys.stdin.readline()
t0 = time.monotonic()
with transaction(Home(__import__('pathlib').Path(sys.argv[1])), lock_timeout=float(sys.argv[2])) as doc:
    doc["other_writer"] = True
print(round(time.monotonic() - t0, 3))
"""


@pytest.mark.slow
@pytest.mark.parametrize("lift,expect_free", [
    (probe.lift_reopened_cooldowns, True), (_naive_lift, False)])
def test_a_slow_usage_endpoint_does_not_block_another_process(tmp_home, fake, lift, expect_free):
    write_store(tmp_home, make_store({"openai-codex": [
        codex_row("aaa111", "tok-a", fake.url + "/backend-api")]}))
    fake.usage("tok-a", 10.0)
    fake.delay("/wham/usage", 2.5)
    # The other process is started and its imports done first (it says "ready"), so on a busy
    # machine its start-up cannot outlast the slow answer: it tries the lock while the probe waits.
    proc = subprocess.Popen([sys.executable, "-c", _TAKE_LOCK, str(tmp_home.root), "1.0"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT)
    worker = threading.Thread(target=lift, args=(
        tmp_home, "openai-codex", probe.default_verdict_fn(cache=probe.VerdictCache(), timeout=5),
        NOW))
    try:
        assert proc.stdout.readline().strip() == "ready"
        worker.start()
        assert fake.wait_for_request("/wham/usage", timeout=5)
        out, err = proc.communicate("go\n", timeout=20)
    finally:
        proc.kill()
        if worker.ident is not None:     # started
            worker.join(timeout=10)
    if expect_free:
        assert proc.returncode == 0, err
        assert read_doc(tmp_home)["other_writer"] is True
    else:   # negative control: probing under the lock starves the other process
        assert proc.returncode != 0 and "lock" in err.lower()
