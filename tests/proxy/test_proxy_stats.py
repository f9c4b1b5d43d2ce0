"""The proxy's per-credential "requests in the last minute", kept in one-second slots."""

from __future__ import annotations

from store.proxy.observing import stats as stats_mod
from store.proxy.observing.stats import Stats

T0 = 1_700_000_000.0


def _rpm(st: Stats) -> int:
    [cred] = [c for c in st.snapshot()["credentials"] if c["id"] == "r1"]
    return cred["requests_per_minute"]


def _traffic() -> tuple[Stats, list[float]]:
    now = [T0]
    st = Stats(lambda: now[0])
    # 3 requests a second for 150 s: the ring of 60 slots wraps around twice.
    for i in range(450):
        now[0] = T0 + i / 3
        st.begin("openrouter", "r1", "one")
        st.end("openrouter", "r1")
    return st, now


def test_requests_per_minute_counts_only_the_last_minute():
    st, now = _traffic()
    assert _rpm(st) == 180                  # the last 60 s: 60 x 3
    now[0] += 30                                    # half of them are now older than a minute
    assert _rpm(st) == 90
    now[0] += 31
    assert _rpm(st) == 0
    assert st.snapshot()["requests_total"] == 450


def test_control_slots_never_reset_would_count_old_traffic(monkeypatch):
    def add_without_reset(self, now):
        self.seconds[int(now) % 60] = int(now)
        self.counts[int(now) % 60] += 1

    monkeypatch.setattr(stats_mod._Minute, "add", add_without_reset)
    st, now = _traffic()
    assert _rpm(st) != 180, "a ring that keeps old counts went unnoticed"
