"""The agent runtime (spec section 6) through store.agent.runtime against the fake provider:
the error workflow, selection and leases, the fallback chain, and the restore table."""

from __future__ import annotations

import pytest

from store.agent import probe
from store.agent.outcomes import OK, OUT, RETRY, ROTATED, ROUTE_DOWN, Decision, Result, reset_time
from store.agent.pool_client import PoolClient
from store.agent.runtime import AgentRuntime
from store.config.agent_view import Route
from store.paths import Home
from store.pools import policy
from tests.conftest import make_row, make_store, read_doc, write_store
from tui.demo import fake_provider as fpv
from tui.demo.agent import chat, one_turn

NOW = 1_800_000_000.0


class Clock:
    def __init__(self, t: float = NOW) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def fake():
    with fpv.FakeProvider() as fp:
        yield fp


@pytest.fixture
def clock():
    return Clock()


def rows_of(home: Home, pool: str) -> dict[str, dict]:
    return {r["id"]: r for r in read_doc(home)["credential_pool"][pool]}


def seed(home: Home, pools: dict, config: str | None = None) -> None:
    write_store(home, make_store(pools))
    if config is not None:
        home.config.write_text(config)


def two_keys(base: str, pool: str = "openrouter") -> dict:
    return {pool: [make_row("aaa111", token="sk-key-aaaa-0001", priority=0, base_url=base),
                   make_row("bbb222", token="sk-key-bbbb-0002", priority=1, base_url=base)]}


def client(home, clock, pool="openrouter", **kw) -> PoolClient:
    return PoolClient(home, pool, clock=clock, env={}, **kw)


# --- selection ------------------------------------------------------------------------------

def test_select_counts_and_follows_the_configured_strategy(tmp_home, clock, fake):
    seed(tmp_home, two_keys(fake.url + "/api/v1"),
         "credential_pool_strategies:\n  openrouter: round_robin\n")
    c = client(tmp_home, clock)
    assert c.strategy == "round_robin"
    picked = [c.select().row_id for _ in range(4)]
    assert picked == ["aaa111", "bbb222", "aaa111", "bbb222"]
    rows = rows_of(tmp_home, "openrouter")
    assert rows["aaa111"]["request_count"] == 2 and rows["bbb222"]["request_count"] == 2
    assert c.selections == 4


def test_select_skips_rows_without_a_live_secret_and_clears_elapsed(tmp_home, clock):
    seed(tmp_home, {"openrouter": [
        make_row("env111", source="env:OPENROUTER_API_KEY", priority=0,
                 secret_fingerprint="sha256:0123456789abcdef"),
        make_row("bbb222", token="sk-key-bbbb-0002", priority=1, last_status="exhausted",
                 last_status_at=NOW - 7200, last_error_code=429),
    ]})
    c = PoolClient(tmp_home, "openrouter", clock=clock, env={"UNRELATED": "x"})
    sel = c.select()
    assert sel.row_id == "bbb222"
    row = rows_of(tmp_home, "openrouter")["bbb222"]
    assert row["last_status"] == "ok" and row["request_count"] == 1
    # The borrowed row never got a secret written into it.
    assert "access_token" not in rows_of(tmp_home, "openrouter")["env111"]
    c2 = PoolClient(tmp_home, "openrouter", clock=clock,
                    env={"OPENROUTER_API_KEY": "sk-or-from-env-0003"})
    assert c2.select().token == "sk-or-from-env-0003"


def test_select_on_an_exhausted_pool_writes_nothing(tmp_home, clock):
    seed(tmp_home, {"openrouter": [make_row("aaa111", token="sk-a", last_status="exhausted",
                                             last_status_at=NOW, last_error_code=402)]})
    before = tmp_home.auth.read_bytes()
    assert client(tmp_home, clock).select() is None
    assert tmp_home.auth.read_bytes() == before


def test_leases_fewest_below_cap_never_blocking(tmp_home, clock):
    seed(tmp_home, two_keys("http://unused"))
    c = client(tmp_home, clock)
    a, b = c.lease(), c.lease()
    assert {a.row_id, b.row_id} == {"aaa111", "bbb222"}       # below the cap of 1 first
    third = c.lease()                                          # all at the cap: still returns
    assert third is not None and c.leases()[third.row_id] == 2
    c.release(third.row_id)
    c.release(a.row_id)
    assert c.lease().row_id == a.row_id                        # the freed row comes back
    # Leasing neither counts nor writes.
    assert all(r["request_count"] == 0 for r in rows_of(tmp_home, "openrouter").values())


# --- the error workflow ---------------------------------------------------------------------

def test_429_once_same_key_twice_rotated_with_an_hour_bench(tmp_home, clock, fake):
    seed(tmp_home, two_keys(fake.url + "/api/v1"))
    fake.script("sk-key-aaaa-0001", fpv.rate_limited())
    c = client(tmp_home, clock)
    sel = c.select()
    d1 = c.report(chat(sel))
    assert d1.action == RETRY and d1.selection.row_id == "aaa111"
    assert rows_of(tmp_home, "openrouter")["aaa111"]["last_status"] is None
    d2 = c.report(chat(d1.selection))
    assert d2.action == ROTATED and d2.selection.row_id == "bbb222"
    row = rows_of(tmp_home, "openrouter")["aaa111"]
    assert row["last_status"] == "exhausted" and row["last_error_code"] == 429
    pool = list(rows_of(tmp_home, "openrouter").values())
    assert policy.until(row, pool, NOW) == NOW + 3600
    assert c.report(chat(d2.selection)).action == OK


def test_usage_limit_rotates_at_once(tmp_home, clock, fake):
    seed(tmp_home, two_keys(fake.url + "/api/v1"))
    fake.script("sk-key-aaaa-0001", fpv.rate_limited(usage_limit=True))
    c = client(tmp_home, clock)
    d = c.report(chat(c.select()))
    assert d.action == ROTATED and d.selection.row_id == "bbb222"
    assert rows_of(tmp_home, "openrouter")["aaa111"]["last_error_reason"] == "usage_limit_reached"


def test_402_rotates_and_keeps_the_billing_bench_for_a_single_key(tmp_home, clock, fake):
    seed(tmp_home, {"openrouter": [make_row("aaa111", token="sk-key-aaaa-0001",
                                             base_url=fake.url + "/api/v1")]})
    fake.script("sk-key-aaaa-0001", fpv.billing())
    c = client(tmp_home, clock)
    d = c.report(chat(c.select()))
    assert d.action == OUT
    row = rows_of(tmp_home, "openrouter")["aaa111"]
    assert row["failure_reason"] == "billing" and row["last_error_code"] == 402
    # The only-row 60 s cap does not apply to billing.
    assert policy.until(row, [row], NOW) == NOW + 3600
    assert policy.effective(row, [row], NOW + 120).status == policy.COOLING


def test_401_refreshes_first_then_retries_with_the_new_token(tmp_home, clock, fake):
    from store.agent.refresh import RefreshHook

    seed(tmp_home, {"anthropic": [
        make_row("oau111", token="at-old-token-0001", auth_type="oauth", source="hermes_pkce",
                 refresh_token="rt-old-0001", base_url=fake.url, priority=0),
        make_row("key222", token="sk-ant-key-0002", base_url=fake.url, priority=1)]})
    fake.script("at-old-token-0001", fpv.unauthorized("token_expired"))
    fake.oauth("rt-old-0001", access_token="at-new-token-0002", new_refresh="rt-new-0002")
    hook = RefreshHook({"anthropic": fake.url + "/v1/oauth/token"}, clock=clock)
    c = client(tmp_home, clock, pool="anthropic", refresh_hook=hook)
    d = c.report(chat(c.select()))
    assert d.action == RETRY and d.note == "token refreshed"
    assert d.selection.row_id == "oau111" and d.selection.token == "at-new-token-0002"
    assert fake.requests_to("/oauth/token") == 1
    row = rows_of(tmp_home, "anthropic")["oau111"]
    assert row["refresh_token"] == "rt-new-0002" and row["last_status"] == "ok"
    assert c.report(chat(d.selection)).action == OK


def test_401_refresh_fails_then_rotates_and_terminal_means_dead(tmp_home, clock, fake):
    from store.agent.refresh import RefreshHook

    seed(tmp_home, {"anthropic": [
        make_row("oau111", token="at-old-token-0001", auth_type="oauth", source="hermes_pkce",
                 refresh_token="rt-gone-0001", base_url=fake.url, priority=0),
        make_row("key222", token="sk-ant-key-0002", base_url=fake.url, priority=1)]})
    fake.script("at-old-token-0001", fpv.unauthorized("token_expired"))
    fake.oauth("rt-gone-0001", error="invalid_grant")
    hook = RefreshHook({"anthropic": fake.url + "/v1/oauth/token"}, clock=clock)
    c = client(tmp_home, clock, pool="anthropic", refresh_hook=hook)
    d = c.report(chat(c.select()))
    assert fake.requests_to("/oauth/token") == 1          # refresh was attempted first
    assert d.action == ROTATED and d.selection.row_id == "key222"
    assert rows_of(tmp_home, "anthropic")["oau111"]["last_status"] == "dead"


@pytest.mark.parametrize("reason,status,until_delta", [
    ("token_revoked", "dead", None), ("invalid_api_key", "exhausted", 300.0)])
def test_401_on_an_api_key(tmp_home, clock, fake, reason, status, until_delta):
    seed(tmp_home, two_keys(fake.url + "/api/v1"))
    fake.script("sk-key-aaaa-0001", fpv.unauthorized(reason))
    c = client(tmp_home, clock)
    d = c.report(chat(c.select()))
    assert d.action == ROTATED and d.selection.row_id == "bbb222"
    row = rows_of(tmp_home, "openrouter")["aaa111"]
    assert row["last_status"] == status
    if until_delta:
        assert policy.until(row, list(rows_of(tmp_home, "openrouter").values()), NOW) == NOW + until_delta


@pytest.mark.parametrize("code", [500, 502, 503, 529])
def test_server_errors_bench_no_key_and_try_another_once(tmp_home, clock, fake, code):
    """A 5xx is the route's fault (Hermes: server_error / overloaded, no rotation): nothing
    is recorded on the row; another key is tried once, then the chain moves on."""
    seed(tmp_home, two_keys(fake.url + "/api/v1"))
    fake.script("sk-key-aaaa-0001", fpv.server_error(code))
    fake.script("sk-key-bbbb-0002", fpv.server_error(code))
    c = client(tmp_home, clock)
    d = c.report(chat(c.select()))
    assert d.action == ROUTE_DOWN and d.selection.row_id == "bbb222"
    assert c.report(chat(d.selection)) == Decision(ROUTE_DOWN, None, d.note.split(";")[0])
    rows = rows_of(tmp_home, "openrouter")
    assert all(r["last_status"] is None and "failure_reason" not in r for r in rows.values())


@pytest.mark.parametrize("reply,expected", [
    (fpv.rate_limited(retry_after=42), NOW + 42),
    (fpv.rate_limited(reset_at=NOW + 900), NOW + 900),         # x-ratelimit-reset in ms
    (fpv.Reply(429, {}, "rate_limit", None, "Please retry after 17 seconds."), NOW + 17),
    (fpv.Reply(429, {}, "rate_limit", None, "Limit hit. Resets in 2hr 5min"), NOW + 7500),
])
def test_a_provider_reset_time_wins_over_the_default(tmp_home, clock, fake, reply, expected):
    seed(tmp_home, two_keys(fake.url + "/api/v1"))
    fake.script("sk-key-aaaa-0001", reply)
    c = client(tmp_home, clock)
    sel = c.select()
    d = c.report(chat(sel))
    # A reset within minutes is a rate limit: one same-key retry first. A longer one is a
    # spent quota (store.agent.triage, #30): benched and rotated at once.
    assert d.action == (RETRY if expected - NOW <= 600 else ROTATED)
    if d.action == RETRY:
        d = c.report(chat(sel))
    assert d.action == ROTATED
    row = rows_of(tmp_home, "openrouter")["aaa111"]
    assert row["last_error_reset_at"] == pytest.approx(expected, abs=1)
    assert policy.until(row, [row], NOW) == pytest.approx(expected, abs=1)


def test_reset_time_parsing_edge_cases():
    assert reset_time(Result(429, {"x-ratelimit-reset-requests": "6m0s"}), NOW) == NOW + 360
    assert reset_time(Result(429, {"x-ratelimit-reset": "30"}), NOW) == NOW + 30
    assert reset_time(Result(429, {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}), NOW) == \
        pytest.approx(1792567680.0)
    assert reset_time(Result(429, reset_at="2027-01-15T09:00:00Z"), NOW) == NOW + 3600
    assert reset_time(Result(429), NOW) is None


def test_rows_sharing_a_secret_are_benched_together(tmp_home, clock, fake):
    seed(tmp_home, {"openrouter": [
        make_row("aaa111", token="sk-shared-0001", priority=0, base_url=fake.url + "/api/v1"),
        make_row("dup222", token="sk-shared-0001", priority=1, base_url=fake.url + "/api/v1"),
        make_row("ccc333", token="sk-other-0003", priority=2, base_url=fake.url + "/api/v1")]})
    fake.script("sk-shared-0001", fpv.billing())
    c = client(tmp_home, clock)
    d = c.report(chat(c.select()))
    assert d.selection.row_id == "ccc333"      # not the sibling holding the same secret
    rows = rows_of(tmp_home, "openrouter")
    assert rows["dup222"]["last_status"] == "exhausted" and rows["dup222"]["last_error_code"] == 402


def test_has_retried_429_resets_after_a_success(tmp_home, clock, fake):
    seed(tmp_home, two_keys(fake.url + "/api/v1"))
    fake.script("sk-key-aaaa-0001", fpv.rate_limited(), fpv.ok(), fpv.rate_limited(), fpv.ok())
    c = client(tmp_home, clock)
    sel = c.select()
    assert c.report(chat(sel)).action == RETRY and c.has_retried_429
    assert c.report(chat(sel)).action == OK and not c.has_retried_429
    # Without the reset this 429 would count as the second one and rotate.
    assert c.report(chat(sel)).action == RETRY
    assert rows_of(tmp_home, "openrouter")["aaa111"]["last_status"] is None


# --- fallback chain -------------------------------------------------------------------------

FALLBACK_CONFIG = """\
fallback_providers:
  - provider: openrouter
    model: anthropic/claude-sonnet-4
  - provider: custom
    model: local-model
    base_url: {base}/v1
custom_providers:
  - name: Together.ai
    base_url: {base}/v1
"""


def test_all_rows_out_moves_down_the_effective_fallback_chain(tmp_home, clock, fake):
    seed(tmp_home, {
        "anthropic": [make_row("ant111", token="sk-ant-0001", base_url=fake.url)],
        "openrouter": [make_row("or1111", token="sk-or-0001", base_url=fake.url + "/api/v1")],
        "custom:together.ai": [make_row("tg1111", token="tg-key-0001", base_url=fake.url + "/v1")],
    }, FALLBACK_CONFIG.format(base=fake.url))
    fake.script("sk-ant-0001", fpv.billing())
    fake.script("sk-or-0001", fpv.server_error(503))
    agent = AgentRuntime(tmp_home, "anthropic", clock=clock, env={})
    assert [r.pool for r in agent.routes] == ["anthropic", "openrouter", "custom:together.ai"]
    results = one_turn(agent)
    assert [r.status for r in results] == [402, 503, 200]
    assert agent.route.pool == "custom:together.ai"
    assert [n.kind for n in agent.notices] == ["fallback", "fallback"]
    # Everything out: OUT, no exception.
    fake.script("tg-key-0001", fpv.billing())
    sel = agent.select()
    assert agent.report(chat(sel)).action == OUT


def test_a_pool_that_is_out_at_select_time_falls_back(tmp_home, clock, fake):
    seed(tmp_home, {
        "anthropic": [make_row("ant111", token="sk-ant-0001", last_status="dead",
                               last_error_code=401, last_error_reason="token_revoked")],
        "openrouter": [make_row("or1111", token="sk-or-0001", base_url=fake.url + "/api/v1")]})
    agent = AgentRuntime(tmp_home, "anthropic", clock=clock, env={},
                         fallback=[Route("openrouter", "m")])
    sel = agent.select()
    assert sel.pool == "openrouter" and not agent.on_primary
    d = agent.report(chat(sel))
    assert d.action == OK


# --- the restore table (spec section 6) -----------------------------------------------------

def _codex_home(home: Home, fake) -> None:
    seed(home, {
        "openai-codex": [make_row("cdx111", token="cdx-token-0001", auth_type="oauth",
                                  source="device_code", base_url=fake.url + "/backend-api",
                                  refresh_token="cdx-rt-0001",
                                  last_status="exhausted", last_status_at=NOW - 60,
                                  last_error_code=429, last_error_reason="usage_limit_reached",
                                  last_error_reset_at=NOW + 3 * 3600)],
        "openrouter": [make_row("or1111", token="sk-or-fallback-0001",
                                base_url=fake.url + "/api/v1")]})


def _agent(home, clock, **kw) -> AgentRuntime:
    return AgentRuntime(home, "openai-codex", clock=clock, env={},
                        fallback=[Route("openrouter", "m")], **kw)


def _turns(agent: AgentRuntime, clock: Clock, n: int, step: float = 30.0) -> dict:
    restores = primary_failures = 0
    for _ in range(n):
        clock.t += step
        if agent.maybe_restore_primary():
            restores += 1
        sel = agent.select()
        result = chat(sel)
        if sel.pool == "openai-codex" and result.status >= 400:
            primary_failures += 1
        agent.report(result)
    return {"restores": restores, "failed": primary_failures,
            "notices": len(agent.notices_of("restore"))}


def test_restore_when_the_quota_really_reopened_early(tmp_home, clock, fake):
    _codex_home(tmp_home, fake)
    fake.usage("cdx-token-0001", 35.0)
    agent = _agent(tmp_home, clock)
    assert agent.select().pool == "openrouter"       # primary cooling: on the fallback
    counts = _turns(agent, clock, 3)
    assert counts == {"restores": 1, "failed": 0, "notices": 1}
    assert agent.on_primary
    row = rows_of(tmp_home, "openai-codex")["cdx111"]
    assert row["last_status"] is None and row["status_cleared_at"] == NOW + 30


def test_a_lying_probe_gives_one_restore_one_failure_one_notice(tmp_home, clock, fake):
    _codex_home(tmp_home, fake)
    fake.usage("cdx-token-0001", 10.0)                                  # "reopened"
    fake.script("cdx-token-0001", fpv.rate_limited(usage_limit=True))   # but chat says 429
    agent = _agent(tmp_home, clock)
    agent.select()
    counts = _turns(agent, clock, 6)
    assert counts == {"restores": 1, "failed": 1, "notices": 1}
    assert not agent.on_primary
    assert fake.requests_to("/wham/usage") == 1


def test_the_naive_gate_fails_the_lying_probe_table(tmp_home, clock, fake):
    """Negative control: no throttle and no verdict cache -> 6/6/6, which the test above
    would catch."""
    _codex_home(tmp_home, fake)
    fake.usage("cdx-token-0001", 10.0)
    fake.script("cdx-token-0001", fpv.rate_limited(usage_limit=True))
    agent = _agent(tmp_home, clock, restore_interval=0,
                   cache=probe.VerdictCache(ttl=0, clock=clock))
    agent.select()
    assert _turns(agent, clock, 6) == {"restores": 6, "failed": 6, "notices": 6}


def test_after_the_throttle_and_cache_expire_the_probe_is_trusted_again(tmp_home, clock, fake):
    _codex_home(tmp_home, fake)
    fake.usage("cdx-token-0001", 10.0)
    fake.script("cdx-token-0001", fpv.rate_limited(usage_limit=True))
    agent = _agent(tmp_home, clock)
    agent.select()
    _turns(agent, clock, 1)
    fake.script("cdx-token-0001", fpv.ok())            # now it really reopened
    counts = _turns(agent, clock, 2, step=301)
    assert counts["restores"] == 1 and agent.on_primary


@pytest.mark.parametrize("usage_status", [500, 401])
def test_a_probe_error_keeps_the_fallback(tmp_home, clock, fake, usage_status):
    _codex_home(tmp_home, fake)
    fake.usage("cdx-token-0001", status=usage_status)
    agent = _agent(tmp_home, clock)
    agent.select()
    counts = _turns(agent, clock, 12, step=301)
    assert counts["restores"] == 0 and not agent.on_primary
    assert rows_of(tmp_home, "openai-codex")["cdx111"]["last_status"] == "exhausted"


def test_the_throttle_is_stamped_before_the_pool_is_loaded(tmp_home, clock, fake):
    _codex_home(tmp_home, fake)
    fake.usage("cdx-token-0001", 10.0)
    agent = _agent(tmp_home, clock)
    agent.select()
    good = tmp_home.auth.read_bytes()
    tmp_home.auth.write_bytes(b"{ truncated")
    clock.t += 1
    assert agent.maybe_restore_primary() is False                   # error: fail closed
    assert agent.notices_of("restore_check_failed")
    assert agent.last_restore_check == clock.t
    tmp_home.auth.write_bytes(good)
    clock.t += 100
    assert agent.maybe_restore_primary() is False                   # throttled, not retried
    assert fake.requests_to("/wham/usage") == 0
    clock.t += 201
    assert agent.maybe_restore_primary() is True


def test_without_a_probe_it_waits_for_the_until(tmp_home, clock, fake):
    seed(tmp_home, {
        "anthropic": [make_row("ant111", token="sk-ant-0001", base_url=fake.url,
                               last_status="exhausted", last_status_at=NOW,
                               last_error_code=429, last_error_reset_at=NOW + 1000)],
        "openrouter": [make_row("or1111", token="sk-or-0001", base_url=fake.url + "/api/v1")]})
    agent = AgentRuntime(tmp_home, "anthropic", clock=clock, env={},
                         fallback=[Route("openrouter", "m")])
    agent.select()
    clock.t += 400
    assert agent.maybe_restore_primary() is False      # until still ahead, no probe for it
    clock.t += 700
    assert agent.maybe_restore_primary() is True       # until passed
    assert agent.select().pool == "anthropic"


# --- refresh before expiry, and no network under the lock -----------------------------------

def test_an_expiring_oauth_token_is_refreshed_at_select(tmp_home, clock, fake):
    from store.agent.refresh import RefreshHook

    seed(tmp_home, {"anthropic": [
        make_row("oau111", token="at-old-token-0001", auth_type="oauth", source="hermes_pkce",
                 refresh_token="rt-old-0001", base_url=fake.url,
                 expires_at_ms=int((NOW + 100) * 1000))]})      # inside the 120 s skew
    fake.oauth("rt-old-0001", access_token="at-new-token-0002", new_refresh="rt-new-0002")
    hook = RefreshHook({"anthropic": fake.url + "/v1/oauth/token"}, clock=clock)
    c = client(tmp_home, clock, pool="anthropic", refresh_hook=hook)
    assert c.select().token == "at-new-token-0002"
    assert fake.requests_to("/oauth/token") == 1
    assert c.select().token == "at-new-token-0002"
    assert fake.requests_to("/oauth/token") == 1


def test_runtime_turns_make_no_network_call_under_the_lock(tmp_home, clock, fake, monkeypatch):
    import socket

    from store.agent.refresh import RefreshHook
    from store.lock import lock_is_free

    _codex_home(tmp_home, fake)
    fake.usage("cdx-token-0001", 10.0)
    fake.script("cdx-token-0001", fpv.unauthorized("token_expired"), fpv.ok())
    fake.oauth("cdx-rt-0001", access_token="cdx-token-0002")
    held = []
    real_connect = socket.socket.connect

    def guarded(self, address):
        held.append(not lock_is_free(tmp_home.lock))
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    agent = _agent(tmp_home, clock,
                   refresh_hook=RefreshHook({"openai-codex": fake.url + "/oauth/token"}))
    agent.select()
    clock.t += 1
    results = one_turn(agent)          # probe, restore, 401, refresh, retry
    assert [r.status for r in results] == [401, 200]
    assert fake.requests_to("/wham/usage") == 1 and fake.requests_to("/oauth/token") == 1
    assert len(held) >= 4 and not any(held)
