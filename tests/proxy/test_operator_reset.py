"""An operator's reset brings the proxy back to its primary on the next request; a probe does not.

- A live proxy (its watcher on): the primary's keys benched by 429s, the fallback serving, the
  restore check just made (so the next one is 300 s away). An operator resets the primary with
  the real CLI; once the proxy's view shows the store's reset, the next request is served by
  the primary. Negative control: with the reset rule taken away (only the probe-based restore
  gate left), the same request is still served by the fallback.
- :func:`store.proxy.routing.steering.lifted_rows`, the rule itself: a reset or a rewritten bench counts,
  a cooldown that merely ran out does not, and a row the proxy's own restore gate cleared (its
  stamp) does not; the control without that exclusion counts the probe's clear as a reset.
- Seed 003's restore table through the proxy's chain (fake clock, a store read after every
  write as the watcher would): a lying probe still gives 1 restore, 1 failed call, 1 notice;
  the naive gate (no throttle, no verdict cache) gives 6/6/6, so the table can fail.
"""

from __future__ import annotations

import httpx
import pytest

from store.agent import probe
from store.agent.outcomes import OUT
from store.paths import Home
from store.pools import policy
from store.proxy.routing import steering
from store.proxy.routing.chain import Chain
from store.proxy.routing.steering import lifted_rows
from tests.conftest import make_row, make_store, run_cli, write_store
from tests.proxy_helpers import NOUS_KEY, OR_KEYS, restore_finished, running_proxy, seed, wait_until
from tui.demo import fake_provider as fpv
from tui.demo.agent import chat

MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
NOW = 1_800_000_000.0


@pytest.fixture
def fake():
    with fpv.FakeProvider() as f:
        yield f


def _post(url: str) -> httpx.Response:
    r = httpx.post(url + "/chat/completions", json=MSG, timeout=30)
    assert r.status_code == 200, r.text
    return r


def _on_fallback_after_a_check(home: Home, fake: fpv.FakeProvider, p) -> None:
    """Primary out (429 with a 10-minute reset), the fallback serving, the restore gate's check
    made and its probe saying "still limited": the next check is 300 s away."""
    for k in OR_KEYS:
        fake.script(k, fpv.rate_limited(retry_after=600))
        fake.key_info(k, limit=10, limit_remaining=0)
    assert _post(p.url).headers["x-hermes-fallback"] == "1"
    assert _post(p.url).headers["x-hermes-pool"] == "nous"      # this one starts the restore check
    wait_until(lambda: restore_finished(p), 10, "the restore check")
    assert not p.chain.runtime.on_primary and p.chain.runtime.last_restore_check is not None
    for k in OR_KEYS:                                             # the quota is back; nobody probes
        fake.script(k, fpv.ok())


def _reset_seen(p) -> bool:
    rows = (p.chain.last_doc.get("credential_pool") or {}).get("openrouter") or []
    return bool(rows) and all(r.get("status_cleared_at") for r in rows)


@pytest.mark.slow
def test_an_operator_reset_brings_the_next_request_back_to_the_primary(tmp_home: Home, fake) -> None:
    seed(tmp_home, fake)
    with running_proxy(tmp_home, restore_interval=300.0) as p:
        _on_fallback_after_a_check(tmp_home, fake, p)
        run_cli(tmp_home, "reset", "openrouter", "--yes")
        wait_until(lambda: _reset_seen(p), 10, "the proxy's view to show the reset")
        r = _post(p.url)
        assert r.headers["x-hermes-fallback"] == "0" and r.headers["x-hermes-pool"] == "openrouter"
        assert p.chain.fallback_since is None
        # Counted as the operator's restore, not the gate's (which did not run again).
        p.server._log_notices()
        assert p.server.requests.restores == {"operator_reset": 1}
    assert fake.requests_by_key("/chat/completions").get(NOUS_KEY) == 2


@pytest.mark.slow
def test_control_a_probe_only_proxy_waits_for_the_restore_interval(tmp_home: Home, fake, monkeypatch) -> None:
    monkeypatch.setattr(steering, "lifted_rows", lambda *a, **k: [])
    seed(tmp_home, fake)
    with running_proxy(tmp_home, restore_interval=300.0) as p:
        _on_fallback_after_a_check(tmp_home, fake, p)
        run_cli(tmp_home, "reset", "openrouter", "--yes")
        wait_until(lambda: _reset_seen(p), 10, "the proxy's view to show the reset")
        r = _post(p.url)
        assert r.headers["x-hermes-fallback"] == "1"          # still on the fallback: up to 300 s more


# --- the rule ----------------------------------------------------------------------------------

def _benched(rid: str, **kw) -> dict:
    return make_row(rid, token=f"sk-or-v1-{rid}-" + "0" * 30, last_status="exhausted", last_status_at=NOW - 10,
                    last_error_code=429, last_error_reset_at=NOW + 600, **kw)


def _cleared(row: dict, at: float) -> dict:
    out = dict(row)
    policy.reset(out, at)
    return out


def test_a_reset_in_the_store_is_a_lift() -> None:
    before = [_benched("a1"), _benched("b2")]
    after = [_cleared(before[0], NOW - 1), before[1]]
    assert lifted_rows(before, after, NOW, policy.DEFAULT_TTLS, own_stamp=None) == ["a1"]


def test_a_rewritten_bench_that_ends_now_is_a_lift_but_a_cooldown_that_ran_out_is_not() -> None:
    before = [_benched("a1")]
    shortened = [dict(before[0], last_error_reset_at=NOW - 1)]          # an undo, a --shorten
    assert lifted_rows(before, shortened, NOW, policy.DEFAULT_TTLS, None) == ["a1"]
    ran_out = [_benched("a1")]
    assert lifted_rows(ran_out, ran_out, NOW + 700, policy.DEFAULT_TTLS, None) == []     # the clock, not a write
    assert lifted_rows(before, [dict(before[0], request_count=9)], NOW, policy.DEFAULT_TTLS, None) == []


def test_the_proxys_own_probe_clear_is_not_an_operator_reset() -> None:
    gate_at = NOW - 5
    before = [_benched("a1")]
    after = [_cleared(before[0], gate_at)]
    assert lifted_rows(before, after, NOW, policy.DEFAULT_TTLS, own_stamp=gate_at) == []
    # An operator's reset after the probe's clear is the operator's again.
    assert lifted_rows(before, [_cleared(before[0], gate_at + 1)], NOW, policy.DEFAULT_TTLS, gate_at) == ["a1"]


def test_control_without_the_exclusion_the_probes_clear_counts_as_a_reset() -> None:
    gate_at = NOW - 5
    before = [_benched("a1")]
    assert lifted_rows(before, [_cleared(before[0], gate_at)], NOW, policy.DEFAULT_TTLS, own_stamp=None) == ["a1"]


# --- seed 003's table through the proxy's chain ------------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.t = NOW

    def __call__(self) -> float:
        return self.t


def _codex_home(home: Home, fake: fpv.FakeProvider) -> None:
    write_store(home, make_store({
        "openai-codex": [make_row("cdx111", token="cdx-token-0001", auth_type="oauth", source="device_code",
                                  base_url=fake.url + "/backend-api", refresh_token="cdx-rt-0001",
                                  last_status="exhausted", last_status_at=NOW - 60, last_error_code=429,
                                  last_error_reason="usage_limit_reached", last_error_reset_at=NOW + 3 * 3600)],
        "openrouter": [make_row("or1111", token="sk-or-fallback-0001", base_url=fake.url + "/api/v1")]}))
    home.config.write_text("model:\n  provider: openai-codex\nfallback_providers:\n"
                           "  - provider: openrouter\n    model: m\n")


def _turns(chain: Chain, clock: Clock, n: int) -> dict[str, int]:
    """Each turn as the proxy's request path takes it: the restore gate when due, one request,
    its outcome (a primary that is out sends the request down the chain, as the forwarder does);
    and after every write a fresh read of the store, as the watcher would."""
    failed = 0
    for _ in range(n):
        clock.t += 30
        if chain.restore_due():
            chain.maybe_restore()
        chain.load()
        attempt = chain.select()
        assert attempt is not None
        result = chat(attempt.selection)
        if attempt.selection.pool == "openai-codex" and result.status >= 400:
            failed += 1
        if result.status >= 400:
            decision = chain.outcome(attempt, result)
            chain.load()
            if decision.action == OUT:      # as the forwarder does: the request moves down the chain
                attempt = chain.select(attempt.index + 1, attempt.failed_on())
                assert attempt is not None and chat(attempt.selection).status == 200
        else:
            chain.success(attempt)
        chain.load()
    kinds = [n.kind for n in chain.runtime.notices]
    return {"restores": kinds.count("restore") + kinds.count("operator_restore"), "failed": failed,
            "notices": kinds.count("restore")}


def _lying_probe(fake: fpv.FakeProvider) -> None:
    fake.usage("cdx-token-0001", 10.0)                                     # "reopened"
    fake.script("cdx-token-0001", fpv.rate_limited(usage_limit=True))      # but the chat says 429


def test_a_lying_probe_through_the_proxy_chain_gives_one_restore_one_failure_one_notice(tmp_home, fake) -> None:
    _codex_home(tmp_home, fake)
    _lying_probe(fake)
    clock = Clock()
    chain = Chain(tmp_home, "openai-codex", clock=clock, env={})
    chain.load()
    assert chain.select().selection.pool == "openrouter"        # primary cooling: on the fallback
    assert _turns(chain, clock, 6) == {"restores": 1, "failed": 1, "notices": 1}
    assert not chain.runtime.on_primary
    assert fake.requests_to("/wham/usage") == 1


def test_control_the_naive_gate_fails_the_table_through_the_proxy_chain(tmp_home, fake) -> None:
    _codex_home(tmp_home, fake)
    _lying_probe(fake)
    clock = Clock()
    chain = Chain(tmp_home, "openai-codex", clock=clock, env={}, restore_interval=0,
                  verdict_fn=probe.default_verdict_fn({}, probe.VerdictCache(ttl=0, clock=clock)))
    chain.load()
    chain.select()
    assert _turns(chain, clock, 6) == {"restores": 6, "failed": 6, "notices": 6}


def test_an_operator_reset_through_the_proxy_chain_restores_at_once(tmp_home, fake) -> None:
    """The same chain, no probe at all (the gate throttled): the store's reset is enough."""
    _codex_home(tmp_home, fake)
    fake.script("cdx-token-0001", fpv.ok())
    clock = Clock()
    chain = Chain(tmp_home, "openai-codex", clock=clock, env={})
    chain.load()
    chain.select()
    chain.runtime.last_restore_check = clock.t           # just checked: the next check is 300 s away
    clock.t += 30
    run_cli(tmp_home, "reset", "openai-codex", "--yes")
    chain.load()
    attempt = chain.select()
    assert attempt.selection.pool == "openai-codex" and chain.runtime.on_primary
    assert chat(attempt.selection).status == 200
    assert [n.kind for n in chain.runtime.notices][-1] == "operator_restore"
