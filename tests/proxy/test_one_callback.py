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
        loop = asyncio.get_running_loop()
        calls: list[object] = []
        real = loop.call_soon

        def counted(fn, *args, **kw):
            calls.append(fn)
            return real(fn, *args, **kw)

        loop.call_soon = counted          # type: ignore[method-assign]
        try:
            trace = log.begin("r-1", "/v1/chat/completions")
            relay.after_write(verdict, "judged")
            log.finish(trace, 200)
            scheduled = len(calls)       # before this task's own wake-ups count
            for _ in range(100):         # bounded: the line is in on the next turn
                if not log.pending:
                    break
                await asyncio.sleep(0)
            return scheduled
        finally:
            del loop.call_soon

    return asyncio.run(main())


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

