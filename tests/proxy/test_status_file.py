"""What the proxy's status file costs, without changing what its readers get.

- :func:`~store.proxy.observing.stats.encode_status` runs json's C encoder (``indent=`` forces
  the pure-Python one, about four times the CPU, once a second beside the event loop), and
  the file parses back to the very document the proxy built;
- :class:`~store.proxy.observing.stats.StatusFile` writes a document only when it says
  something the file does not (``updated_at`` aside), an open breaker shows, or the heartbeat
  passed: an idle proxy's file is not rewritten every second, yet :func:`is_live` still sees it;
- the comparison needs each document built afresh: two of a running proxy's documents share
  no list or dict.

Negative controls: the indented encoding does call the pure-Python encoder; a document that
shares a container with the last one is caught by the check; a StatusFile that ignored
changes would leave the file behind (the changed document is written).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from typing import Any

import httpx
import pytest

from store.paths import Home
from store.proxy import server as server_module
from store.proxy.observing import stats
from store.proxy.observing.requests import LOG_SIZE, RequestLog
from store.proxy.observing.stats import HEARTBEAT, STALE_AFTER, encode_status, is_live, status_path
from store.proxy.observing.status_file import StatusFile
from tests.proxy_helpers import TICK, running_proxy, seed, wait_until
from tui.demo.fake_provider import FakeProvider

NOW = 1_700_000_000.0
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _doc(now: float = NOW, **kw: Any) -> dict[str, Any]:
    return {"pid": os.getpid(), "port": 8645, "state": "running", "updated_at": now, "started_at": NOW - 60,
            "upstreams": [], "requests_total": 3, "recent_requests": [{"at": NOW - 1.5, "ms": 1.234, "id": "r1",
                                                                      "pinned": False, "upstream_ms": None}],
            "pools": {"openrouter": {"bucket_seconds": 10, "requests": [0] * 59 + [3]}}, **kw}


class _NoPurePython(Exception):
    pass


def _refuse_pure_python(*_a: Any, **_k: Any) -> Any:
    raise _NoPurePython


def test_the_status_encoding_uses_the_c_encoder_and_parses_back_the_same(monkeypatch) -> None:
    doc = _doc(chain=[{"name": "custom:https://h/v1", "model": None, "refused": {}}], label="ключ ✓")
    monkeypatch.setattr(json.encoder, "_make_iterencode", _refuse_pure_python)
    raw = encode_status(doc)
    assert json.loads(raw) == doc
    assert raw.isascii()          # non-ASCII escaped, as before
    assert list(json.loads(raw)) == sorted(doc)


def test_control_an_indented_encoding_runs_the_pure_python_encoder(monkeypatch) -> None:
    monkeypatch.setattr(json.encoder, "_make_iterencode", _refuse_pure_python)
    with pytest.raises(_NoPurePython):
        json.dumps(_doc(), indent=1, sort_keys=True, allow_nan=False)


def test_a_nan_is_still_refused() -> None:
    with pytest.raises(ValueError):
        encode_status(_doc(requests_total=float("nan")))


def _written(sf: StatusFile, doc: dict[str, Any]) -> None:
    sf.written(doc)


def test_due_only_when_the_document_says_something_new() -> None:
    sf = StatusFile(Home("/nonexistent"))
    assert sf.due(_doc())                                   # nothing written yet
    _written(sf, _doc())
    assert not sf.due(_doc(NOW + 1))                        # only updated_at moved
    assert not sf.due(_doc(NOW + HEARTBEAT - 0.01))
    assert sf.due(_doc(NOW + HEARTBEAT))                    # the heartbeat: is_live keeps seeing it
    assert sf.due(_doc(NOW - 1))                            # a clock that went back
    assert sf.due(_doc(NOW + 1, requests_total=4))          # a top-level value
    assert sf.due(_doc(NOW + 1, recent_requests=[{**_doc()["recent_requests"][0], "ms": 1.235}]))   # nested
    assert sf.due(_doc(NOW + 1, pools={"openrouter": {"bucket_seconds": 10, "requests": [0] * 58 + [3, 0]}}))
    assert sf.due(_doc(NOW + 1, holding=1))                 # a key more
    less = _doc(NOW + 1)
    del less["requests_total"]
    assert sf.due(less)                                     # a key fewer
    breaker = [{"upstream": "http://127.0.0.1:9/v1", "state": "open", "open_until": NOW + 30}]
    _written(sf, _doc(upstreams=breaker))
    assert sf.due(_doc(NOW + 1, upstreams=breaker))         # its countdown is read from updated_at
    bad = _doc()
    bad["updated_at"] = None
    assert sf.due(bad)


def test_the_heartbeat_keeps_an_idle_proxy_live() -> None:
    # Written at least every HEARTBEAT s of updated_at, checked once a tick: never staler than
    # HEARTBEAT + one tick (plus the write), well inside STALE_AFTER.
    assert HEARTBEAT + server_module.FLUSH_INTERVAL < STALE_AFTER - 0.5
    assert is_live(_doc(NOW), NOW + HEARTBEAT + server_module.FLUSH_INTERVAL)


def _containers(obj: Any, out: dict[int, Any]) -> dict[int, Any]:
    if isinstance(obj, (dict, list)):
        out[id(obj)] = obj             # kept: no id is reused while this lives
        for v in obj.values() if isinstance(obj, dict) else obj:
            _containers(v, out)
    return out


def _shared(a: dict[str, Any], b: dict[str, Any]) -> set[int]:
    return set(_containers(a, {})) & set(_containers(b, {}))


def test_control_the_check_sees_a_shared_container() -> None:
    inner = [1, 2]
    assert _shared({"a": {"b": inner}}, {"c": [inner]}) == {id(inner)}


@pytest.fixture
def fake():
    with FakeProvider() as f:
        yield f


def test_a_running_proxy_builds_each_document_afresh_and_skips_idle_writes(tmp_home: Home, fake,
                                                                           monkeypatch) -> None:
    seed(tmp_home, fake)
    now = [NOW]
    writes: list[dict[str, Any]] = []
    real = stats.write_status

    def counted(home: Home, status: dict[str, Any]) -> None:
        real(home, status)
        writes.append(status)     # after the file is written: a wait on the count may read it

    monkeypatch.setattr(stats, "write_status", counted)    # the status file's thread writes through it
    with running_proxy(tmp_home, clock=lambda: now[0], watch=False) as p:
        ticks = [0]
        cut = p.server.forwarder.cut_overdue

        def tick() -> None:
            ticks[0] += 1
            cut()

        p.server.forwarder.cut_overdue = tick
        r = httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)
        assert r.status_code == 200
        p.settled()
        wait_until(lambda: any(w["requests_total"] == 1 for w in writes), 10, "the request in the file")
        first = p.call(_status(p))
        again = p.call(_status(p))
        assert first == again and _shared(first, again) == set()
        # Idle, the clock still: once the request's after-effects are in (its count flushed),
        # tick after tick, nothing new is written.
        _quiet(ticks, writes)
        seen, n = len(writes), ticks[0]
        wait_until(lambda: ticks[0] >= n + 5, 10 + 5 * TICK, "five ticks")
        assert len(writes) == seen
        path = status_path(tmp_home, p.server.port)
        assert json.loads(path.read_text())["requests_total"] == 1
        # The heartbeat: updated_at moves on by HEARTBEAT, the file is written again.
        now[0] += HEARTBEAT
        wait_until(lambda: len(writes) > seen, 10, "the heartbeat write")
        assert json.loads(path.read_text())["updated_at"] == now[0]
        # A new request: written at the next tick, the clock still.
        seen = len(writes)
        assert httpx.post(p.url + "/chat/completions", json=MSG, timeout=30).status_code == 200
        # The count, not the file: the file is read back before the writer's thread counts it.
        wait_until(lambda: len(writes) > seen and writes[-1]["requests_total"] == 2, 10, "the second request")
        assert json.loads(path.read_text())["requests_total"] == 2


def _quiet(ticks: list[int], writes: list[Any], rounds: int = 50) -> None:
    """Bounded: wait until two ticks pass with no write."""
    for _ in range(rounds):
        seen, n = len(writes), ticks[0]
        wait_until(lambda n=n: ticks[0] >= n + 2, 10, "two ticks")
        if len(writes) == seen:
            return
    raise AssertionError("the status file was rewritten on every tick of an idle proxy")


async def _status(p: Any) -> dict[str, Any]:
    return p.server.status()


def _window_as_before(series: stats._Series, now: float, index: int) -> list[int]:
    """The window as the status file built it before (BUCKETS look-ups): the reference."""
    end = int(now // stats.BUCKET_SECONDS) * stats.BUCKET_SECONDS
    return [series.buckets.get(end - (stats.BUCKETS - 1 - i) * stats.BUCKET_SECONDS, [0, 0])[index]
            for i in range(stats.BUCKETS)]


def test_the_pool_windows_are_the_reference_ones() -> None:
    rng = random.Random(7)
    for _ in range(200):
        series = stats._Series()
        t = NOW + rng.uniform(0, 1000)
        for _ in range(rng.randrange(0, 300)):
            t += rng.expovariate(1 / rng.choice([0.05, 1.0, 30.0]))
            series.add(t, rng.choice([0, 0, 0, 1]))
        for now in (t, t + rng.uniform(0, 700), t - rng.uniform(0, 100), float(int(t) // 10 * 10)):
            assert series.windows(now) == (_window_as_before(series, now, 0), _window_as_before(series, now, 1))


def _control_window_off_by_one(series: stats._Series, now: float) -> tuple[list[int], list[int]]:
    first = (int(now // stats.BUCKET_SECONDS) - stats.BUCKETS) * stats.BUCKET_SECONDS
    out = [0] * stats.BUCKETS
    for start, (n, _r) in series.buckets.items():
        i = (start - first) // stats.BUCKET_SECONDS
        if 0 <= i < stats.BUCKETS:
            out[i] = n
    return out, [0] * stats.BUCKETS


def test_control_the_reference_tells_a_shifted_window() -> None:
    series = stats._Series()
    series.add(NOW, 0)
    assert _control_window_off_by_one(series, NOW)[0] != _window_as_before(series, NOW, 0)


def _line(i: int) -> tuple[Any, ...]:
    return (NOW + i, f"rid-{i}", "/v1/chat/completions", "openrouter", "openrouter", f"r{i % 3}", 200,
            0.0123456 * i, None if i % 4 else 0.01 * i, 1, "served", "success", "ok", bool(i % 2))


def _recent_as_before(log: RequestLog) -> list[dict[str, Any]]:
    return [{"at": at, "rid": rid, "path": path, "route": route, "pool": pool, "id": row, "status": status,
             "ms": round(total * 1000, 3), "upstream_ms": None if up is None else round(up * 1000, 3),
             "tries": tries, "outcome": outcome, "class": cls, "kind": kind, "pinned": pinned}
            for at, rid, path, route, pool, row, status, total, up, tries, outcome, cls, kind, pinned in log.lines]


def test_the_request_log_lines_are_the_reference_ones_and_fresh_each_time() -> None:
    log = RequestLog(lambda: NOW)
    assert log.recent() == []
    for i in range(LOG_SIZE * 3):
        log.lines.append(_line(i))
        if i % 7 == 0:
            first = log.recent()
            assert first == _recent_as_before(log)
            first[-1]["status"] = 599            # a reader's change never reaches the next document
            again = log.recent()
            assert again == _recent_as_before(log) and _shared({"a": first}, {"a": again}) == set()


def test_a_write_that_fails_is_not_taken_as_what_the_file_says(tmp_home: Home, monkeypatch) -> None:
    """A write that raised leaves the next document due (the file may not say it); one that
    landed makes the same document not due."""
    async def main() -> tuple[bool, bool]:
        sf = StatusFile(tmp_home)
        real = stats.write_status

        def refused(home: Home, status: dict[str, Any]) -> None:
            raise OSError("disk full")

        monkeypatch.setattr(stats, "write_status", refused)
        with pytest.raises(OSError, match="disk full"):
            await sf.write(_doc(port=1))
        after_failure = sf.due(_doc(NOW + 1, port=1))
        monkeypatch.setattr(stats, "write_status", real)
        await sf.write(_doc(port=1))
        assert status_path(tmp_home, 1).exists()
        return after_failure, sf.due(_doc(NOW + 1, port=1))

    assert asyncio.run(main()) == (True, False)
