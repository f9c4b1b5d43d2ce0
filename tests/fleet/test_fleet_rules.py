"""The fleet ordering rules, run by the Lua script on a real redis-server.

- a reset with clear time T beats any bench observed before T;
- a later `until` wins (re-cooling extends, never shortens);
- times are the server's: a host's clock skew is cancelled by its measured offset;
- 1,000 concurrent mark/clear operations from three hosts end in exactly the state the
  rules give (no lost update).

Each protection has a negative control: the same check run against a naive
last-writer-wins / read-modify-write store fails.
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from store.fleet.client import FleetClient, connect
from store.fleet.model import FleetState
from tests.fleet_helpers import RedisServer

FP = "f" * 64


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = RedisServer(tmp_path_factory.mktemp("redis"))
    yield srv
    srv.stop()


@pytest.fixture
def client(server):
    r = connect(server.url)
    r.flushall()
    return FleetClient(r, "host-a")


def state(c: FleetClient, fp: str = FP) -> FleetState:
    return c.states([fp]).get(fp) or FleetState(fp)


class NaiveStore:
    """What the rules replace: the last write wins, read-modify-write without atomicity."""

    def __init__(self, c: FleetClient) -> None:
        self.r, self.k = c.r, c.k

    def mark(self, fp, *, observed, until, status="exhausted"):
        self.r.hset(self.k("s", fp), mapping={"status": status, "until": until, "since": observed})

    def clear(self, fp, *, observed):
        self.r.hset(self.k("s", fp), mapping={"status": "ok", "until": "", "since": "", "cleared_at": observed})


# --- a reset beats every bench observed before it ------------------------------------------------

def _stale_bench_after_reset(store, c: FleetClient) -> FleetState:
    now = c.server_time()
    store.clear(FP, observed=now)
    # A bench Hermes observed a minute before the reset, delivered after it (a live 0.19
    # agent writing its in-memory cooldown back, or a host catching up after a partition).
    store.mark(FP, observed=now - 60, until=now + 3600)
    return state(c)


def test_a_bench_observed_before_a_reset_never_wins(client):
    s = _stale_bench_after_reset(client, client)
    assert s.status == "ok" and s.cleared_at is not None
    result, _ = client.mark(FP, observed=s.cleared_at - 1, until=s.cleared_at + 3600)
    assert result == "stale"


def test_negative_control_last_writer_wins_lets_the_stale_bench_win(client):
    assert _stale_bench_after_reset(NaiveStore(client), client).status == "exhausted"


def test_a_bench_observed_after_the_reset_wins_and_dead_never_expires(client):
    now = client.server_time()
    client.clear(FP, observed=now - 10)
    assert client.mark(FP, observed=now - 5, until=now + 60)[0] == "applied"
    assert state(client).status == "exhausted"
    client.mark(FP, status="dead", code=401, reason="token_revoked")
    s = state(client)
    assert s.status == "dead" and s.until is None and s.benched_at(now + 10 ** 9)
    client.clear(FP)
    assert state(client).status == "ok"


# --- re-cooling extends --------------------------------------------------------------------------

def _recool(store, c: FleetClient) -> tuple[float, FleetState]:
    now = c.server_time()
    store.mark(FP, observed=now - 2, until=now + 3600)
    store.mark(FP, observed=now - 1, until=now + 60)     # a later, shorter bench
    return now + 3600, state(c)


def test_recooling_extends_and_never_shortens(client):
    longest, s = _recool(client, client)
    assert s.until == pytest.approx(longest, abs=0.01)
    now = client.server_time()
    client.mark(FP, observed=now, until=now + 7200)
    assert state(client).until == pytest.approx(now + 7200, abs=0.01)


def test_negative_control_last_writer_wins_shortens_the_cooldown(client):
    longest, s = _recool(NaiveStore(client), client)
    assert s.until < longest - 1


def test_republishing_the_same_bench_is_a_no_op(client):
    now = client.server_time()
    assert client.mark(FP, observed=now - 1, until=now + 60) == ("applied", True)
    v = state(client).version
    # The same bench seen again through another host's clock offset (a few ms apart).
    assert client.mark(FP, observed=now - 1 + 0.004, until=now + 60 - 0.003) == ("duplicate", False)
    assert state(client).version == v


# --- server time, not host time ------------------------------------------------------------------

def test_clock_skew_cannot_reorder_a_reset_and_a_bench(server, client):
    behind = FleetClient(connect(server.url), "host-behind")   # its clock is an hour slow
    skewed = lambda: time.time() - 3600.0  # noqa: E731
    offset = behind.clock_offset(skewed)
    assert offset == pytest.approx(-3600.0, abs=1.0)
    now = client.server_time()
    client.mark(FP, observed=now - 1, until=now + 3600)           # host-a benches, then
    behind.clear(FP, observed=skewed() - offset)                  # host-behind resets after it
    assert state(client).status == "ok"
    # Negative control: the slow host's raw clock puts its reset an hour before the bench.
    client.mark(FP, until=now + 3600)                             # a bench at server now
    behind.clear(FP, observed=skewed())
    assert state(client).status == "exhausted"


# --- 1,000 concurrent operations from three hosts -----------------------------------------------

def expected(ops: list[tuple[str, str, float, float]], fp: str) -> tuple[str, float | None, float | None]:
    """The rules as a pure function of the set of operations (order does not matter)."""
    mine = [op for op in ops if op[1] == fp]
    cleared = max((o for kind, _, o, _ in mine if kind == "clear"), default=float("-inf"))
    live = [(u, o) for kind, _, o, u in mine if kind == "mark" and o >= cleared]
    if not live:
        return "ok", None, None
    top = max(u for u, _ in live)
    return "exhausted", top, max(o for u, o in live if u == top)


def test_concurrent_marks_and_clears_from_three_hosts_lose_nothing(server, client):
    base = client.server_time()
    fps = [f"{i:064x}" for i in range(5)]
    rng = random.Random(13)
    ops = []
    for _ in range(1000):
        kind = "clear" if rng.random() < 0.3 else "mark"
        ops.append((kind, rng.choice(fps), base - rng.randrange(0, 2000), base + 3600 + rng.randrange(0, 5000)))
    hosts = [FleetClient(connect(server.url), f"host-{i}") for i in range(3)]
    barrier = threading.Barrier(3)
    errors: list[BaseException] = []

    def run(c: FleetClient, mine: list) -> None:
        try:
            barrier.wait(timeout=30)
            for kind, fp, obs, until in mine:
                if kind == "clear":
                    c.clear(fp, observed=obs)
                else:
                    c.mark(fp, observed=obs, until=until)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(hosts[i], ops[i::3])) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in threads)
    got = client.states(fps)
    for fp in fps:
        status, until, since = expected(ops, fp)
        s = got.get(fp) or FleetState(fp)
        assert s.status == status, fp
        assert (s.until, s.since) == (pytest.approx(until, abs=1e-5), pytest.approx(since, abs=1e-5)), fp


def test_negative_control_read_modify_write_loses_an_update(client):
    """Two hosts read the same state, each computes its update, both write: one is lost."""
    r, key = client.r, client.k("s", FP)
    now = client.server_time()
    r.hset(key, mapping={"status": "exhausted", "until": now + 100})
    seen_by_a = float(r.hget(key, "until"))
    seen_by_b = float(r.hget(key, "until"))
    r.hset(key, "until", max(seen_by_b, now + 7200))      # host b extends
    r.hset(key, "until", max(seen_by_a, now + 600))       # host a, from its stale read
    assert float(r.hget(key, "until")) != now + 7200      # b's extension is lost
    # The same two updates through the rules keep the later until.
    r.delete(key)
    client.mark(FP, observed=now, until=now + 100)
    client.mark(FP, observed=now, until=now + 7200)
    client.mark(FP, observed=now, until=now + 600)
    assert state(client).until == pytest.approx(now + 7200, abs=0.01)
