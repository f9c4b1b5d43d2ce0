"""The proxy hands its answers to the usage feed in batches (issue 27, the latency goal):
:meth:`Spend.answer` only queues on the event loop; within :data:`spend.BATCH` seconds every
answer reaches the feed, in order, each stamped with its own time, in one hand-over (one wake
of the feed's thread, not one per answer). With no loop running it hands on at once, and
``close`` hands on what is still queued. Negative control: a Spend that hands on per answer
is caught by the "nothing before the batch" check."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from store.agent.outcomes import Selection
from store.config.usage_settings import UsageSettings
from store.dialects.readings import Usage
from store.proxy.observing import spend
from store.proxy.routing.attempt import Attempt
from store.proxy.routing.protocols import OPENAI, Want

KEY = "sk-or-v1-spendbatch-" + "0" * 30


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def _spend(tmp_path) -> tuple[spend.Spend, list[tuple]]:
    chain = SimpleNamespace(headroom=SimpleNamespace(settings=SimpleNamespace(usage=UsageSettings(ledger=False))),
                            clock=Clock(), home=SimpleNamespace(root=tmp_path), auth_type=lambda sel: "api_key")
    s = spend.Spend(chain)
    fed: list[tuple] = []
    s.feed.answer = lambda pool, row, fp, usage, **kw: fed.append((row, usage.input_tokens, kw["at"], kw["model"]))
    return s, fed


def _attempt(row: str) -> Attempt:
    want = Want(OPENAI, b'{"model": "m1", "messages": []}')
    return Attempt(0, Selection("openrouter", row, row, KEY), want=want)


async def _answers(s: spend.Spend, n: int) -> list[tuple]:
    """*n* answers on a running loop; what the feed had right after, and the wakes it took."""
    timers: list[object] = []
    loop = asyncio.get_running_loop()
    real = loop.call_later

    def counted(delay, fn, *args):
        timers.append(fn)
        return real(delay, fn, *args)

    loop.call_later = counted          # type: ignore[method-assign]
    try:
        for i in range(n):
            s.answer(_attempt(f"r{i}"), Usage(input_tokens=i))
        return timers
    finally:
        del loop.call_later


def test_answers_reach_the_feed_in_one_batch_in_order_with_their_own_times(tmp_path) -> None:
    s, fed = _spend(tmp_path)

    async def main() -> tuple[list, list]:
        timers = await _answers(s, 50)
        before = list(fed)
        for _ in range(200):               # bounded: the batch is due within BATCH seconds
            if len(fed) == 50:
                break
            await asyncio.sleep(spend.BATCH / 4)
        return before, timers

    before, timers = asyncio.run(main())
    assert before == [] and len(timers) == 1          # queued only, one hand-over scheduled
    assert [(r, t, m) for r, t, _at, m in fed] == [(f"r{i}", i, "m1") for i in range(50)]
    ats = [at for *_, at, _m in fed]
    assert ats == sorted(ats) and len(set(ats)) == 50  # each its own time, taken when it came


def test_with_no_loop_and_at_close_nothing_waits(tmp_path) -> None:
    s, fed = _spend(tmp_path)
    s.answer(_attempt("r0"), Usage(input_tokens=1))            # no loop: at once
    assert [r for r, *_ in fed] == ["r0"]

    async def main() -> None:
        s.answer(_attempt("r1"), Usage(input_tokens=2))
        s.close(1.0)                                              # what is queued goes on

    asyncio.run(main())
    assert [r for r, *_ in fed] == ["r0", "r1"]


def test_control_a_spend_that_hands_on_per_answer_is_caught(tmp_path, monkeypatch) -> None:
    s, fed = _spend(tmp_path)
    real = spend.Spend.answer

    def eager(self, attempt, usage, *, partial=False):
        real(self, attempt, usage, partial=partial)
        self.hand_over()

    monkeypatch.setattr(spend.Spend, "answer", eager)

    async def main() -> list:
        await _answers(s, 5)
        return list(fed)

    with pytest.raises(AssertionError):
        assert asyncio.run(main()) == []
