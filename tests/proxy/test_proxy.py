"""The subscription proxy, driven by the real OpenAI SDK, in front of the fake provider.

Each protection has a control: the 429 storm test shows a proxy without the in-view bench
and without the watcher keeps sending to a cooling key; the restore test shows a probe
that says "still limited" keeps the proxy on the fallback.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading

import httpx
import openai
import pytest

from store.agent import refresh
from store.paths import Home
from store.proxy import ALLOWED_PATHS
from store.proxy.edge.inbound import Gate, InboundAuthError, gate_for, is_loopback
from store.proxy.observing.report import describe
from store.proxy.observing.stats import status_path
from store.proxy.routing.chain import Chain
from store.transaction import transaction
from tests.conftest import read_doc
from tests.proxy_helpers import CONFIG, NOUS_KEY, OR_KEYS, restore_finished, running_proxy, seed, wait_until
from tui.demo.fake_provider import FakeProvider, ok, rate_limited, unauthorized

pytestmark = pytest.mark.slow      # a live server, the store watcher and threads of clients
MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture
def fake():
    with FakeProvider() as f:
        yield f


@pytest.fixture
def home(tmp_home: Home, fake: FakeProvider) -> Home:
    seed(tmp_home, fake)
    return tmp_home


def sdk(url: str, key: str = "any-client-bearer") -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=20)


def test_every_endpoint_through_the_proxy(home, fake):
    with running_proxy(home) as p:
        c = sdk(p.url)
        raw = c.chat.completions.with_raw_response.create(model="client-model", messages=MSG)
        chat = raw.parse()
        assert chat.choices[0].message.content == "ok (fake provider)"
        assert chat.model == "client-model"          # the primary passes the model through
        assert raw.headers["x-hermes-pool"] == "openrouter"
        assert raw.headers["x-hermes-credential"] == "or0aaa"
        assert raw.headers["x-hermes-fallback"] == "0"
        assert all(OR_KEYS[0] not in v for v in raw.headers.values())
        chunks = [ch.choices[0].delta.content for ch in
                  c.chat.completions.create(model="m", messages=MSG, stream=True)]
        assert chunks == ["tok0 ", "tok1 ", "tok2 ", "tok3 ", "tok4 ", None]
        assert c.completions.create(model="m", prompt="x").choices[0].text == "ok (fake provider)"
        assert len(c.embeddings.create(model="e", input=["a", "b"]).data) == 2
        assert [m.id for m in c.models.list()] == ["fake-model", "fake-embed"]
    # The upstream saw the row's key, never the client's bearer.
    assert set(fake.requests_by_key()) == {OR_KEYS[0]}
    assert fake.requests_by_key()[OR_KEYS[0]] == 5
    # Counts were written behind (and flushed at stop) through the store.
    assert read_doc(home)["credential_pool"]["openrouter"][0]["request_count"] == 5


def test_other_paths_404_with_the_allowed_list_and_big_bodies_413(home):
    with running_proxy(home) as p:
        base = p.url[:-3]
        for path in ("/v1/audio/transcriptions", "/v1/audio/speech", "/", "/v1/chat/completions/x"):
            r = httpx.post(base + path, json={})
            assert r.status_code == 404, path
            assert r.json()["error"]["allowed_paths"] == list(ALLOWED_PATHS)
        big = b'{"model": "m", "pad": "' + b"x" * (10 * 1024 * 1024) + b'"}'
        r = httpx.post(base + "/v1/chat/completions", content=big, headers={"Content-Type": "application/json"})
        assert r.status_code == 413 and r.json()["error"]["type"] == "request_too_large"
        # Control: the same request under the cap goes through.
        small = b'{"model": "m", "pad": "' + b"x" * (9 * 1024 * 1024) + b'"}'
        r = httpx.post(base + "/v1/chat/completions", content=small, headers={"Content-Type": "application/json"})
        assert r.status_code == 200


def _storm(p, n: int, workers: int = 16) -> list[int]:
    statuses: list[int] = []
    lock = threading.Lock()

    def work(count: int) -> None:
        c = sdk(p.url)
        for _ in range(count):
            try:
                c.chat.completions.create(model="m", messages=MSG)
                code = 200
            except openai.APIStatusError as exc:
                code = exc.status_code
            with lock:
                statuses.append(code)

    threads = [threading.Thread(target=work, args=(n // workers,)) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return statuses


def test_429_storm_never_reaches_a_cooling_key(home, fake):
    fake.script(OR_KEYS[0], rate_limited(retry_after=600))
    with running_proxy(home) as p:
        statuses = _storm(p, 64)
        assert statuses == [200] * 64          # no 429 reached a client: other keys were free
        hits = fake.requests_by_key()[OR_KEYS[0]]
        assert 2 <= hits <= 2 * 16               # at most one try and one retry per concurrent request
        row = read_doc(home)["credential_pool"]["openrouter"][0]
        assert row["last_status"] == "exhausted" and row["last_error_code"] == 429
        statuses = _storm(p, 64)
        assert statuses == [200] * 64
        assert fake.requests_by_key()[OR_KEYS[0]] == hits   # not one more request to the cooling key


def test_429_storm_control_without_the_bench_in_view(home, fake, monkeypatch):
    """Negative control: no in-view bench, no watcher -> the cooling key keeps being hit."""
    monkeypatch.setattr(Chain, "bench_in_view", lambda *a, **k: None)
    fake.script(OR_KEYS[0], rate_limited(retry_after=600))
    with running_proxy(home, watch=False) as p:
        _storm(p, 64)
        hits = fake.requests_by_key()[OR_KEYS[0]]
        _storm(p, 64)
        assert fake.requests_by_key()[OR_KEYS[0]] > hits


def test_pool_out_falls_back_then_restores_when_the_probe_says_so(home, fake):
    for k in OR_KEYS:
        fake.script(k, rate_limited(retry_after=600))
        fake.key_info(k, limit=10, limit_remaining=0)
    with running_proxy(home, restore_interval=0.0) as p:
        c = sdk(p.url)
        raw = c.chat.completions.with_raw_response.create(model="client-model", messages=MSG)
        assert raw.headers["x-hermes-fallback"] == "1" and raw.headers["x-hermes-pool"] == "nous"
        assert raw.parse().model == "fallback-model"    # the fallback entry's model replaces the client's
        assert fake.requests_by_key()[NOUS_KEY] == 1
        assert p.chain.fallback_since is not None
        # The quota comes back; the probe (OpenRouter's key endpoint) says so.
        for k in OR_KEYS:
            fake.script(k, ok())
            fake.key_info(k, limit=10, limit_remaining=5)

        def served_by_primary() -> bool:
            r = c.chat.completions.with_raw_response.create(model="m", messages=MSG)
            return r.headers["x-hermes-fallback"] == "0"

        wait_until(served_by_primary, 10, "the proxy to restore the primary")
        assert p.chain.fallback_since is None


def test_restore_control_probe_still_limited_stays_on_fallback(home, fake):
    for k in OR_KEYS:
        fake.script(k, rate_limited(retry_after=600))
        fake.key_info(k, limit=10, limit_remaining=0)
    with running_proxy(home, restore_interval=0.0) as p:
        c = sdk(p.url)
        c.chat.completions.create(model="m", messages=MSG)
        c.chat.completions.create(model="m", messages=MSG)     # triggers a restore check
        wait_until(lambda: p.chain.runtime.last_restore_check is not None
                   and (p.server._restore_task is None or p.server._restore_task.done()), 10, "the check")
        r = c.chat.completions.with_raw_response.create(model="m", messages=MSG)
        assert r.headers["x-hermes-fallback"] == "1"


def test_everything_out_is_503_with_retry_after(home, fake):
    for k in OR_KEYS:
        fake.script(k, rate_limited(retry_after=600))
    fake.script(NOUS_KEY, rate_limited(retry_after=90))
    with running_proxy(home) as p:
        with pytest.raises(openai.APIStatusError) as info:
            sdk(p.url).chat.completions.create(model="m", messages=MSG)
        err = info.value
        assert err.status_code == 503
        assert 85 <= int(err.response.headers["retry-after"]) <= 90
        body = err.response.json()["error"]
        assert {x["pool"] for x in body["pools"]} == {"openrouter", "nous"}
        assert "nous reopens in" in body["message"]
        # Nothing is sent while everything cools: the next request is answered locally.
        before, logged = fake.requests_by_key("/chat/completions"), len(fake.log)
        with pytest.raises(openai.APIStatusError):
            sdk(p.url).chat.completions.create(model="m", messages=MSG)
        # That request also opened a turn on the fallback, so the restore gate (spec: turn-
        # scoped restore) probes the primary's cooling keys at their quota endpoint, off the
        # loop. Wait for it (bounded) so its probes are counted, never raced: counting them
        # half-way was the suite's flake (9 == 8 under load).
        wait_until(lambda: restore_finished(p), what="the restore check")
        assert fake.requests_by_key("/chat/completions") == before
        sent = sorted((m, path.rsplit("/", 1)[-1], k) for m, path, k, _s in fake.log[logged:])
        assert sent == sorted(("GET", "key", k) for k in OR_KEYS)


def test_non_loopback_needs_a_0600_client_keys_file(home, tmp_path):
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("127.0.0.2") and not is_loopback("0.0.0.0")
    keys = tmp_path / "keys"
    with pytest.raises(InboundAuthError, match="missing"):
        gate_for("127.0.0.2", keys)
    keys.write_text("# clients\nclient-key-one-0000000001\n")
    os.chmod(keys, 0o644)
    with pytest.raises(InboundAuthError, match="0644"):
        gate_for("127.0.0.2", keys)
    os.chmod(keys, 0o600)
    gate = gate_for("127.0.0.2", keys)
    assert gate_for("127.0.0.1", keys).open
    with running_proxy(home, host="127.0.0.2", gate=gate) as p:
        for bearer in ("wrong-key", "client-key-one-000000000", ""):
            with pytest.raises(openai.AuthenticationError):
                sdk(p.url, bearer or "x").chat.completions.create(model="m", messages=MSG)
        r = httpx.post(p.url + "/chat/completions", json={"model": "m", "messages": MSG})
        assert r.status_code == 401
        sdk(p.url, "client-key-one-0000000001").chat.completions.create(model="m", messages=MSG)
    # Control: on loopback any bearer passes.
    with running_proxy(home, gate=Gate(None)) as p:
        sdk(p.url, "wrong-key").chat.completions.create(model="m", messages=MSG)


def test_client_disconnect_mid_stream_releases_its_lease(home, fake):
    fake.stream_chunks, fake.stream_interval = 200, 0.05
    with running_proxy(home) as p:
        with httpx.stream("POST", p.url + "/chat/completions",
                          json={"model": "m", "messages": MSG, "stream": True}, timeout=20) as r:
            it = r.iter_raw()
            assert b"tok0" in next(it)
            wait_until(lambda: p.server.stats.in_flight.get(("openrouter", "or0aaa")) == 1, 5, "in flight")
        wait_until(lambda: p.server.stats.in_flight_total() == 0 and p.server.in_flight == 0, 10,
                   "the lease to be released")


def test_64_concurrent_streams(home, fake):
    fake.stream_chunks, fake.stream_interval = 10, 0.01

    async def main(url: str) -> list[list[str | None]]:
        c = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0, timeout=30)

        async def one() -> list[str | None]:
            stream = await c.chat.completions.create(model="m", messages=MSG, stream=True)
            return [ch.choices[0].delta.content async for ch in stream]

        try:
            return await asyncio.wait_for(asyncio.gather(*(one() for _ in range(64))), 60)
        finally:
            await c.close()

    with running_proxy(home) as p:
        results = asyncio.run(main(p.url))
        assert p.server.stats.total == 64
    expected = [f"tok{i} " for i in range(10)] + [None]
    assert all(r == expected for r in results)


def test_status_file_is_0600_and_holds_no_secret(home, fake):
    with running_proxy(home) as p:
        sdk(p.url).chat.completions.create(model="m", messages=MSG)
        p.server._write_status()
        path = status_path(home, p.server.port)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        text = path.read_text()
        status = json.loads(text)
        assert all(k not in text for k in [*OR_KEYS, NOUS_KEY])
        assert status["credentials"][0] == {"pool": "openrouter", "id": "or0aaa", "label": "key-or0aaa",
                                            "in_flight": 0, "requests_per_minute": 1}
        assert sum(status["pools"]["openrouter"]["requests"]) == 1
        assert len(status["pools"]["openrouter"]["requests"]) == 60
        assert status["active"] == "openrouter" and status["on_fallback_since"] is None
    assert json.loads(path.read_text())["state"] == "stopped"


def test_counts_are_written_behind_in_batches(home, monkeypatch):
    """100 requests cost at most one count transaction per second, and every count lands."""
    import time

    import store.proxy.routing.counts as counts_mod

    calls = []
    real = counts_mod.transaction

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(counts_mod, "transaction", counting)
    with running_proxy(home, tick=None) as p:       # the product's one flush a second
        c = sdk(p.url)
        t0 = time.monotonic()
        for _ in range(100):
            c.chat.completions.create(model="m", messages=MSG)
        elapsed = time.monotonic() - t0
        during = len(calls)
    assert during <= int(elapsed) + 1        # one flush a second at most (a per-request write: 100)
    assert read_doc(home)["credential_pool"]["openrouter"][0]["request_count"] == 100


def test_a_stream_that_breaks_after_bytes_is_the_routes_fault_not_retried(home, fake):
    """A stream cut after bytes reached the client: not retried (the client has half an
    answer), and the route's fault (RELIABILITY 31): no row is benched, nothing written but
    the count; the upstream's breaker takes a strike, and the same key serves next."""
    fake.stream_chunks, fake.stream_break_after = 10, 3
    with running_proxy(home) as p:
        got = []
        with pytest.raises((openai.APIError, httpx.HTTPError)):     # the client sees the stream end early
            for ch in sdk(p.url).chat.completions.create(model="m", messages=MSG, stream=True):
                got.append(ch.choices[0].delta.content)
        assert got[:3] == ["tok0 ", "tok1 ", "tok2 "]
        assert p.server.stats.stream_failures == 1
        assert fake.requests_by_key() == {OR_KEYS[0]: 1}       # not retried
        [up] = p.chain.breakers.snapshot(p.chain.clock())
        assert up["strikes"] == 1 and up["state"] == "closed" and "stream broke" in up["last_error"]
        fake.stream_break_after = None
        r = sdk(p.url).chat.completions.with_raw_response.create(model="m", messages=MSG)
        assert r.headers["x-hermes-credential"] == "or0aaa"   # not benched: it serves again
        p.settled()
        assert p.chain.breakers.snapshot(p.chain.clock()) == []   # and the success closed it
    row = read_doc(home)["credential_pool"]["openrouter"][0]
    assert row["last_status"] is None and row["last_error_code"] is None and row["request_count"] == 2


def test_401_refreshes_the_oauth_token_then_retries(home, fake):
    with transaction(home) as doc:
        row = doc["credential_pool"]["openrouter"][0]
        row.update(auth_type="oauth", refresh_token="rt-proxy-0001")
    fake.script(OR_KEYS[0], unauthorized("token_expired"))
    fake.oauth("rt-proxy-0001", access_token="at-proxy-fresh-0002", new_refresh="rt-proxy-0002")
    hook = refresh.RefreshHook({"openrouter": fake.url + "/oauth/token"})
    with running_proxy(home, refresh_hook=hook) as p:
        c = sdk(p.url)
        r = c.chat.completions.with_raw_response.create(model="m", messages=MSG)
        assert r.headers["x-hermes-credential"] == "or0aaa"      # the same row, refreshed, not rotated
        for _ in range(3):
            c.chat.completions.create(model="m", messages=MSG)
    assert fake.requests_by_key() == {OR_KEYS[0]: 1, "at-proxy-fresh-0002": 4}
    assert read_doc(home)["credential_pool"]["openrouter"][0]["refresh_token"] == "rt-proxy-0002"


def test_a_fallback_chain_edited_while_the_proxy_runs_is_followed(home, fake):
    """The operator edits fallback_providers (the console's config view writes config.yaml):
    the running proxy serves the new chain without a restart."""
    for k in OR_KEYS:
        fake.script(k, rate_limited(retry_after=600))
    with running_proxy(home, watch=False) as p:
        c = sdk(p.url)
        raw = c.chat.completions.with_raw_response.create(model="m", messages=MSG)
        assert raw.headers["x-hermes-pool"] == "nous" and raw.parse().model == "fallback-model"
        home.config.write_text(CONFIG.replace("fallback-model", "edited-model"))
        p.call(_on_loop(p.chain.refresh_config))
        assert [r.model for r in p.chain.routes[1:]] == ["edited-model"]
        raw = c.chat.completions.with_raw_response.create(model="m", messages=MSG)
        assert raw.headers["x-hermes-pool"] == "nous" and raw.parse().model == "edited-model"
        # Control: with the chain emptied, a pool that is out has nowhere to go: 503.
        home.config.write_text(CONFIG.split("fallback_providers")[0])
        p.call(_on_loop(p.chain.refresh_config))
        assert len(p.chain.routes) == 1 and p.chain.fallback_since is None
        with pytest.raises(openai.APIStatusError) as err:
            c.chat.completions.create(model="m", messages=MSG)
        assert err.value.status_code == 503


async def _on_loop(fn):
    return fn()


ENV_KEY = "sk-proxytest-from-the-environment-0000000001"
# The usual chain with a custom fallback served by FALLBACK_KEY from .env ahead of nous.
ENV_CONFIG = CONFIG.replace("fallback_providers:\n", "fallback_providers:\n  - provider: custom\n"
                            "    base_url: {url}/v1\n    key_env: FALLBACK_KEY\n    model: env-model\n")


def env_fallback(home: Home, fake: FakeProvider) -> None:
    """openrouter all limited, then a custom fallback whose key is FALLBACK_KEY in the home's
    .env (limited for 120 s), then nous."""
    home.config.write_text(ENV_CONFIG.format(url=fake.url))
    home.env.write_text(f"FALLBACK_KEY={ENV_KEY}\n")
    os.chmod(home.env, 0o600)
    for k in OR_KEYS:
        fake.script(k, rate_limited(retry_after=600))
    fake.script(ENV_KEY, rate_limited(retry_after=120))


def test_a_key_from_the_environment_is_benched_in_memory_and_the_chain_moves_on(home, fake):
    """A fallback served by an env-var key has no row to write a bench to: the proxy keeps
    the bench in memory by the same policy, so no 429 reaches a client while nous is
    usable, nothing more is sent to the benched key, and a 503 names when it reopens."""
    env_fallback(home, fake)

    def run():
        with running_proxy(home) as p:
            raw = sdk(p.url).chat.completions.with_raw_response.create(model="m", messages=MSG)
            first = (raw.status_code, raw.headers["x-hermes-pool"])
            sent = fake.requests_by_key("/chat/completions").get(ENV_KEY, 0)
            sdk(p.url).chat.completions.create(model="m", messages=MSG)
            again = fake.requests_by_key("/chat/completions").get(ENV_KEY, 0)
            status = {r["name"]: r for r in describe(p.chain)}
            fake.script(NOUS_KEY, rate_limited(retry_after=300))
            with pytest.raises(openai.APIStatusError) as info:
                sdk(p.url).chat.completions.create(model="m", messages=MSG)
            return first, sent, again, status, info.value

    first, sent, again, status, err = run()
    assert first == (200, "nous")
    assert sent == 2            # the one same-key retry of a 429, then benched
    assert again == 2           # the second request never went to the benched key
    route = f"custom:{fake.url}/v1"
    assert status[route]["cooling"] == 1 and status[route]["usable"] == 0
    assert err.status_code == 503
    body = err.response.json()["error"]
    reopens = {x["pool"]: x["reopens_in"] for x in body["pools"]}
    assert 110 <= reopens[route] <= 120
    # The soonest reopening is the env key's (120 s), not nous's (300 s) or openrouter's.
    assert 110 <= int(err.response.headers["retry-after"]) <= 120
    assert ENV_KEY not in json.dumps(body)


def test_control_without_the_in_memory_bench_the_429_reaches_the_client(home, fake, monkeypatch):
    env_fallback(home, fake)
    from store.agent.outcomes import Decision
    from store.proxy.routing.direct import DirectBenches
    monkeypatch.setattr(DirectBenches, "outcome",
                        lambda self, attempt, result, now: Decision("failed", attempt.selection, "no bench"))
    with running_proxy(home) as p:
        with pytest.raises(openai.APIStatusError) as info:
            sdk(p.url).chat.completions.create(model="m", messages=MSG)
        assert info.value.status_code == 429
