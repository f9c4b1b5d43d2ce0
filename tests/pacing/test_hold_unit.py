"""The hold's rules on their own (store/proxy/routing/hold.py), on an event loop with
stand-ins for the chain: off, full, a reset past ``max_wait``, woken by a poke, released
on cancel. Bounded: every wait here is at most a second or two."""

from __future__ import annotations

import asyncio
import time

import pytest

from store.config.proxy_settings import ProxySettings
from store.proxy.routing.hold import Hold
from store.proxy.routing.protocols import OPENAI, Want

WANT = Want(OPENAI, b"{}", False, None)
SERVE = object()


def hold(reopens_in: float | None, *, max_wait: float = 5.0, max_waiting: int = 4):
    state = {"open": False, "reopen": None if reopens_in is None else time.time() + reopens_in}

    def look(_want):
        return SERVE if state["open"] or (state["reopen"] is not None and time.time() >= state["reopen"]) else None
    h = Hold(time.time, look, lambda _w: state["reopen"],
             lambda: ProxySettings(hold_max_wait=max_wait, hold_max_waiting=max_waiting))
    return h, state


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 10))


def test_off_full_or_too_far_is_no_hold() -> None:
    async def go():
        off, _ = hold(0.1, max_wait=0.0)
        far, _ = hold(30.0)
        never, _ = hold(None)
        full, _ = hold(0.1, max_waiting=1)
        full.waiting = 1
        return [await h.wait(WANT, "r") for h in (off, far, never, full)]
    assert run(go()) == [None, None, None, None]


def test_held_until_the_reset_then_served() -> None:
    async def go():
        h, state = hold(0.3)
        got = await h.wait(WANT, "r")
        return got, time.time() >= state["reopen"], h.waiting
    assert run(go()) == (SERVE, True, 0)


def test_a_poke_wakes_it_before_the_reset() -> None:
    async def go():
        h, state = hold(4.0)
        task = asyncio.create_task(h.wait(WANT, "r"))
        while h.waiting == 0:
            await asyncio.sleep(0)
        state["open"] = True          # an operator's reset
        h.poke()
        got = await task
        return got, time.time() < state["reopen"]
    assert run(go()) == (SERVE, True)


def test_a_cancelled_wait_leaves_no_count_behind() -> None:
    async def go():
        h, _ = hold(4.0)
        task = asyncio.create_task(h.wait(WANT, "r"))
        while h.waiting == 0:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return h.waiting
    assert run(go()) == 0


def test_nothing_by_the_deadline_is_none() -> None:
    async def go():
        h, state = hold(0.2, max_wait=0.5)
        state["reopen"] = time.time() + 0.2

        def never(_w):
            return None
        h.look = never                      # the reset passes, yet nothing serves (another request took it)
        return await h.wait(WANT, "r"), h.waiting
    assert run(go()) == (None, 0)
