"""Hold through a running proxy (#30, ``proxy.hold``), with the real ``openai`` SDK: every
key out for 3 s and ``hold.max_wait: 5s`` -> a 200 once the benches end, instead of a 503;
hold off (the control) -> the 503 at once. The number waiting is bounded (past
``max_waiting``: the 503), shown in the status file, and a client that leaves is released
at once. A store change (an operator's reset) wakes a held request before its reset."""

from __future__ import annotations

import threading
import time

import openai
import pytest

from store.proxy.observing.stats import read_statuses
from tests.conftest import make_row, make_store, run_cli, write_store
from tests.pacing.windows import WindowedUpstream
from tests.proxy_helpers import CONFIG, EDGE_KEYS, running_chain_proxy, wait_until

pytestmark = pytest.mark.slow

MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def up():
    with WindowedUpstream() as u:
        yield u


def seed(home, up, out_for: float | None, hold: str = "", **more) -> float:
    """Two openrouter keys, both benched until now + *out_for* (None: not benched); the
    hermes-admin.yaml ``proxy.hold`` section *hold*. Returns when the benches end."""
    now = time.time()
    until = now + out_for if out_for is not None else None
    bench = {"last_status": "exhausted", "last_status_at": now, "last_error_code": 429,
             "last_error_reset_at": until} if until is not None else {}
    write_store(home, make_store({"openrouter": [
        make_row(f"or{i}edg", token=EDGE_KEYS[i], priority=i, base_url=up.url + "/api/v1", **bench, **more)
        for i in range(2)]}))
    home.config.write_text(CONFIG.split("fallback_providers")[0])
    if hold:
        (home.root / "hermes-admin.yaml").write_text(f"proxy:\n  hold: {{{hold}}}\n")
    return until or now


def sdk(p, timeout: float = 30) -> openai.OpenAI:
    return openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=timeout)


def held_request(tmp_home, up) -> tuple[float, float, float]:
    """Every key out for 3 s, hold up to 5 s: (when the benches end, when the 200 came, the
    share of the request's time the log counts as the proxy's own added latency)."""
    reset = seed(tmp_home, up, 3.0, "max_wait: 5s")
    with running_chain_proxy(tmp_home) as p:
        got = sdk(p).chat.completions.with_raw_response.create(**MSG)
        answered = time.time()
        assert got.http_response.status_code == 200
        p.settled()                           # the log line is written after the answer's bytes
        log = p.server.requests
        total = log.lines[-1][7]
        share = log.added.sum / total
    assert up.hits(EDGE_KEYS[0]) + up.hits(EDGE_KEYS[1]) == 1
    return reset, answered, share


def test_every_key_out_for_3s_and_hold_5s_gets_a_200_after_the_reset(tmp_home, up) -> None:
    reset, answered, share = held_request(tmp_home, up)
    assert answered >= reset                  # served after the benches ended, not before
    assert share < 0.5                        # the hold is a wait, not the proxy's own cost


def test_control_a_hold_not_noted_as_a_wait_reads_as_added_latency(tmp_home, up, monkeypatch) -> None:
    from store.proxy.observing import requests
    monkeypatch.setattr(requests, "waited", lambda seconds: None)
    _reset, _answered, share = held_request(tmp_home, up)
    assert share > 0.5


def test_control_hold_off_gets_the_503_at_once(tmp_home, up) -> None:
    reset = seed(tmp_home, up, 3.0)
    with running_chain_proxy(tmp_home) as p:
        with pytest.raises(openai.APIStatusError) as err:
            sdk(p).chat.completions.create(**MSG)
        answered = time.time()
    assert err.value.status_code == 503 and answered < reset
    assert up.hits(EDGE_KEYS[0]) + up.hits(EDGE_KEYS[1]) == 0


def test_a_reset_past_max_wait_is_not_held(tmp_home, up) -> None:
    reset = seed(tmp_home, up, 30.0, "max_wait: 5s")
    with running_chain_proxy(tmp_home) as p, pytest.raises(openai.APIStatusError) as err:
        sdk(p).chat.completions.create(**MSG)
    assert err.value.status_code == 503 and time.time() < reset


def held(p, n: int) -> bool:
    return p.server.forwarder.hold.waiting == n


def test_waiting_is_bounded_shown_in_the_status_file_and_a_client_that_leaves_is_released(tmp_home, up) -> None:
    """max_waiting 1: one request held (the status file says so), a second one gets the 503
    at once; the held client leaves and its place is free again at once."""
    seed(tmp_home, up, 30.0, "max_wait: 60s, max_waiting: 1")
    errors: list[BaseException] = []
    with running_chain_proxy(tmp_home) as p:
        def leaving() -> None:
            try:
                sdk(p, timeout=1.5).chat.completions.create(**MSG)
            except BaseException as exc:     # the timeout it is meant to meet
                errors.append(exc)
        t = threading.Thread(target=leaving)
        t.start()
        wait_until(lambda: held(p, 1), timeout=5, what="one request held")
        wait_until(lambda: any(s.get("holding") == 1 for s in read_statuses(tmp_home)), timeout=5,
                   what="the status file's holding count")
        with pytest.raises(openai.APIStatusError) as err:
            sdk(p).chat.completions.create(**MSG)
        assert err.value.status_code == 503 and held(p, 1)     # over max_waiting: the 503 as before
        t.join(10)
        assert errors and isinstance(errors[0], openai.APITimeoutError)
        wait_until(lambda: held(p, 0), timeout=2, what="the held client released")
        assert p.server.in_flight == 0
    assert up.hits(EDGE_KEYS[0]) + up.hits(EDGE_KEYS[1]) == 0


def test_control_without_handler_cancellation_a_client_that_left_stays_counted(tmp_home, up, monkeypatch) -> None:
    """What releases a held client is its handler's cancellation: with it off, the request
    whose client left stays held (the count the test above sees drop)."""
    from store.proxy import server
    monkeypatch.setattr(server, "HANDLER_CANCELLATION", False)
    seed(tmp_home, up, 30.0, "max_wait: 60s")
    with running_chain_proxy(tmp_home) as p:
        with pytest.raises(openai.APITimeoutError):
            sdk(p, timeout=0.5).chat.completions.create(**MSG)
        with pytest.raises(AssertionError, match="timed out"):
            wait_until(lambda: held(p, 0), timeout=1.5, what="the held client released")
        p.call(_cancel_held(p))


async def _cancel_held(p) -> None:
    """End the request left held (the proxy's stop would wait for it)."""
    for task in list(p.server._handlers):
        task.cancel()


def test_an_operator_reset_wakes_a_held_request(tmp_home, up) -> None:
    """Keys out for 30 s, hold up to 60 s; ``hermes-admin reset`` while the request waits (the
    proxy's watcher sees auth.json change): served long before the benches would have ended."""
    reset = seed(tmp_home, up, 30.0, "max_wait: 60s")
    got: list = []
    with running_chain_proxy(tmp_home, watch=True) as p:
        t = threading.Thread(target=lambda: got.append(sdk(p).chat.completions.with_raw_response.create(**MSG)))
        t.start()
        wait_until(lambda: held(p, 1), timeout=5, what="the request held")
        wait_until(lambda: any(s.get("holding") == 1 for s in read_statuses(tmp_home)), timeout=5,
                   what="the status file's holding count")
        assert "held for the soonest reset: 1 request(s)" in run_cli(tmp_home, "proxy", "status").stdout
        run_cli(tmp_home, "reset", "openrouter", "--yes")     # the operator's reset: both keys usable
        t.join(20)
    assert got and got[0].http_response.status_code == 200 and time.time() < reset
