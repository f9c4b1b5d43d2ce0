"""The proxy's blocking calls run in daemon threads that are reused while free
(store.proxy.offloop): a call never waits for another, a free thread ends after its idle
time, and nothing holds the process at exit."""

from __future__ import annotations

import asyncio
import queue
import threading
import time

import pytest

from store.proxy import offloop
from store.proxy.offloop import Workers

pytestmark = pytest.mark.timeout(60)


def _wait_for(cond, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True


def test_calls_one_after_another_reuse_one_daemon_thread() -> None:
    w = Workers(idle_exit=10.0)
    seen: list[threading.Thread] = []
    for _ in range(5):
        done = threading.Event()
        w.submit(lambda d=done: (seen.append(threading.current_thread()), d.set()), "t")
        assert done.wait(10)
        assert _wait_for(lambda: w.free == 1)
    assert w.started == 1 and len({id(t) for t in seen}) == 1 and seen[0].daemon


def _second_ran_while_first_waited(w) -> bool:
    """Submit a call that waits (bounded) for a second one, then the second: whether the
    first saw it run while it waited."""
    second_ran, first_done, saw = threading.Event(), threading.Event(), []
    w.submit(lambda: (saw.append(second_ran.wait(1.0)), first_done.set()), "t")
    w.submit(second_ran.set, "t")
    assert first_done.wait(10)
    return saw == [True]


def test_a_call_never_waits_for_a_blocked_one() -> None:
    w = Workers(idle_exit=10.0)
    assert _second_ran_while_first_waited(w) and w.started == 2


class _OneThread:
    """Every call queued for one thread: what the test above must catch."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue = queue.SimpleQueue()
        self.thread: threading.Thread | None = None

    def submit(self, call, name: str) -> None:
        self.calls.put(call)
        if self.thread is None:
            self.thread = threading.Thread(target=lambda: [self.calls.get()() for _ in iter(int, 1)], daemon=True)
            self.thread.start()


def test_control_one_shared_thread_makes_the_first_call_wait_in_vain() -> None:
    assert not _second_ran_while_first_waited(_OneThread())


def test_a_free_thread_ends_after_its_idle_time() -> None:
    w = Workers(idle_exit=2.0)
    done = threading.Event()
    w.submit(done.set, "t")
    assert done.wait(10)
    assert _wait_for(lambda: w.free == 1)      # free, waiting
    assert _wait_for(lambda: w.free == 0)      # ended
    again = threading.Event()
    w.submit(again.set, "t")             # a new thread: the old one ended
    assert again.wait(10) and w.started == 2


def test_run_blocking_returns_the_value_and_raises_the_error() -> None:
    async def main() -> tuple[int, str]:
        value = await offloop.run_blocking(lambda a, b: a + b, 2, 3)
        try:
            await offloop.run_blocking(lambda: 1 / 0)
        except ZeroDivisionError as exc:
            return value, type(exc).__name__
        return value, "none"

    assert asyncio.run(main()) == (5, "ZeroDivisionError")


def _gc_after(code: str) -> list[str]:
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import gc\nfrom store.proxy import loop\n" + code +
                          "\nprint(gc.get_threshold()[0], gc.get_freeze_count() > 0)"],
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.split()


def test_a_serving_proxy_raises_the_young_gc_threshold_and_freezes_its_start_up() -> None:
    """serve() calls settle_gc once started (bench/bench_proxy_gc.py measures why)."""
    assert _gc_after("loop.settle_gc()") == [str(loop_young()), "True"]


def test_control_without_it_pythons_threshold_stays() -> None:
    assert _gc_after("") == ["700", "False"]


def loop_young() -> int:
    from store.proxy.loop import GC_YOUNG
    return GC_YOUNG
