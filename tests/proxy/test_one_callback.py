"""A request's deferred work is one loop callback (#27, the first-try-success path): the
relay's verdict on a body read whole (:func:`store.proxy.edge.relay.after_write`) rides in the
request log's callback (:func:`store.proxy.observing.requests.after_answer`), runs there first
with the request's trace current (its verdict is in the line), and exactly once; with no trace
it still runs on the next turn. Negative control: a relay that schedules its own callback
again takes two callbacks a request, and the count sees it."""

from __future__ import annotations

import asyncio

import pytest

from store.agent.outcomes import Verdict
from store.proxy.edge import relay
from store.proxy.observing import requests
from store.proxy.observing.requests import CURRENT, RequestLog

OK = Verdict(None, "success")


def _one_request(log: RequestLog, seen: list) -> int:
    """One traced request whose relay leaves its verdict for after the answer; the loop
    callbacks it took."""

    def verdict(tag: str) -> None:
        seen.append((tag, CURRENT.get() is not None))
        requests.judged(OK)

    async def main() -> int:
        def begun() -> list:
            trace = log.begin("r-1", "/v1/chat/completions")
            relay.after_write(verdict, "judged")       # counted: a relay's own callback would be
            return [trace]

        return await _callbacks_to_finish(log, begun)

    return asyncio.run(main())


async def _callbacks_to_finish(log: RequestLog, traces) -> int:
    """Finish *traces* (a list, or what makes it) in this turn: the loop callbacks that took
    (before this task's own wake-ups count); then wait (bounded) for their lines."""
    loop = asyncio.get_running_loop()
    calls: list[object] = []
    real = loop.call_soon
    loop.call_soon = lambda fn, *a, **k: (calls.append(fn), real(fn, *a, **k))[1]  # type: ignore[method-assign]
    try:
        for trace in traces() if callable(traces) else traces:
            log.finish(trace, 200)
        scheduled = len(calls)
    finally:
        del loop.call_soon
    for _ in range(100):         # bounded: the lines are in on the next turn
        if not log.pending:
            break
        await asyncio.sleep(0)
    return scheduled


def test_the_verdict_rides_in_the_request_logs_one_callback() -> None:
    log, seen = RequestLog(), []
    assert _one_request(log, seen) == 1
    assert seen == [("judged", True)]             # once, with the request's trace current
    line = log.lines[-1]
    assert (line[1], line[10], line[11]) == ("r-1", requests.SERVED, "success")   # its verdict is in the line


def test_with_no_trace_the_work_still_runs_on_the_next_turn() -> None:
    seen: list[str] = []

    async def main() -> list[str]:
        relay.after_write(seen.append, "late")
        assert seen == []                         # not in this turn
        await asyncio.sleep(0)
        return seen

    assert asyncio.run(main()) == ["late"]


def test_control_a_relay_with_its_own_callback_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(requests, "after_answer", lambda fn, *args: False)
    log, seen = RequestLog(), []
    with pytest.raises(AssertionError):
        assert _one_request(log, seen) == 1



def _sixteen_in_one_turn(log: RequestLog, seen: list) -> int:
    """Sixteen traced requests (each begun in its own task, as aiohttp serves them) answered
    in one turn, each leaving its verdict for after the answer: the callbacks they took."""

    def verdict(rid: str) -> None:
        t = CURRENT.get()
        seen.append((rid, t.rid if t is not None else None))
        requests.judged(OK)

    async def main() -> int:
        async def one(i: int):
            trace = log.begin(f"r-{i}", "/v1/chat/completions")
            relay.after_write(verdict, f"r-{i}")
            return trace

        return await _callbacks_to_finish(log, [await asyncio.create_task(one(i)) for i in range(16)])

    return asyncio.run(main())


def test_requests_answered_in_one_turn_share_its_one_callback() -> None:
    """One callback for all sixteen, each verdict run with its own trace current, the lines
    in the order of the answers."""
    log, seen = RequestLog(), []
    assert _sixteen_in_one_turn(log, seen) == 1
    assert seen == [(f"r-{i}", f"r-{i}") for i in range(16)]
    assert [line[1] for line in log.lines] == [f"r-{i}" for i in range(16)]
    assert log.pending == 0


class _CallbackEach(RequestLog):
    """Each request finished with a callback of its own: what the test above must catch."""

    def finish(self, trace, status: int) -> None:
        self.pending += 1
        self._answered.append((trace, status, trace.ready or 0.0))
        asyncio.get_running_loop().call_soon(self._end_later)


def test_control_a_callback_per_request_is_counted() -> None:
    log, seen = _CallbackEach(), []
    assert _sixteen_in_one_turn(log, seen) == 16
    assert len(log.lines) == 16 and log.pending == 0      # the same lines: only the count tells
