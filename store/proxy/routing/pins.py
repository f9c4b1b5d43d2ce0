"""Conversation pins: a conversation keeps to the key that served its last turn (#30).

In memory only: (pool, conversation digest) -> (row id, until), kept for the affinity
``ttl`` (5 minutes; ``long_ttl``, 1 hour, when the request asks for Anthropic's 1-hour
cache), at most :data:`MAX_PINS` of them (the least recently served dropped first). A pin
is set or renewed by every 2xx (:meth:`Pins.served`): the key that served the turn is the
one whose cache is warm. Pools of the ``round_robin``, ``least_used`` and ``random``
strategies pin (``fill_first`` already keeps to one key); ``proxy.affinity.enabled: false``
in hermes-admin.yaml turns it off.

The pin is a preference in selection (:func:`store.proxy.routing.picks.choose`), never a
filter: the pinned row serves only if the one eligibility check lets it (not benched,
over budget or cap, on an open breaker, held by headroom, already tried by this request)
and it would not take more than ``max_share`` of its pool's traffic over the last minute
(:meth:`Pins.prefer`). Otherwise the strategy picks, and the row that serves becomes the
conversation's new pin. The share bound is never below a fair share plus
:data:`SHARE_SLACK` (a two-key pool does not swap its conversations at every turn) and
applies once the pool served :data:`SHARE_SAMPLE` requests in the minute.

Event loop only (selection and the 2xx both run there); pure and fast.
"""

from __future__ import annotations

import heapq
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from typing import Any

from store.config.proxy_settings import Affinity
from store.pools import policy
from store.proxy.routing.affinity import Conversation

STRATEGIES = frozenset({"round_robin", "least_used", "random"})   # the strategies a pin applies to
_ROTATING: dict[object, bool] = {}     # a configured strategy's name -> whether a pin applies to it
MAX_PINS = 20_000
WINDOW = 60               # seconds of traffic the share is counted over
SHARE_SAMPLE = 10         # the share bound applies once the pool served this many in the window
SHARE_SLACK = 0.1         # the bound is at least 1/usable rows + this


class Window:
    """One pool's 2xx answers per row over the last :data:`WINDOW` seconds (per-second buckets)."""

    __slots__ = ("buckets", "sums", "total")

    def __init__(self) -> None:
        self.buckets: deque[tuple[int, Counter[str]]] = deque()
        self.sums: Counter[str] = Counter()
        self.total = 0

    def expire(self, now: float) -> None:
        edge = int(now) - WINDOW
        while self.buckets and self.buckets[0][0] <= edge:
            _sec, gone = self.buckets.popleft()
            self.sums.subtract(gone)
            self.total -= sum(gone.values())

    def add(self, row: str, now: float) -> None:
        self.expire(now)
        sec = int(now)
        if not self.buckets or self.buckets[-1][0] != sec:
            self.buckets.append((sec, Counter()))
        self.buckets[-1][1][row] += 1
        self.sums[row] += 1
        self.total += 1

    def share(self, row: str, now: float) -> float | None:
        """*row*'s share of the window (None: fewer than :data:`SHARE_SAMPLE` answers)."""
        self.expire(now)
        return None if self.total < SHARE_SAMPLE else self.sums[row] / self.total


def _rotating(got: object) -> bool:
    """Whether a configured strategy *got* is one a pin applies to (each name worked out once)."""
    rotating = _ROTATING.get(got) if type(got) is str else None
    if rotating is None:
        if type(got) is not str:
            return policy.known_strategy(got) in STRATEGIES
        if len(_ROTATING) >= 256:
            _ROTATING.clear()
        rotating = _ROTATING[got] = policy.known_strategy(got) in STRATEGIES
    return rotating


def conversation_of(want: Any) -> Conversation | None:
    conv = getattr(want, "conversation", None) if want is not None else None
    return conv if isinstance(conv, Conversation) else None


def pinned(want: Any, sel: Any) -> bool:
    """Whether the pick *sel* (a Selection) for *want* is its conversation's pinned row."""
    conv = conversation_of(want)
    return conv is not None and conv.prefer is not None and conv.prefer == (sel.pool, sel.row_id)


class Pins:
    """Every conversation pin of one proxy, and each pool's traffic over the last minute."""

    def __init__(self, settings: Callable[[], Affinity], strategies: Callable[[], Any], *,
                 max_pins: int = MAX_PINS) -> None:
        self.settings = settings
        self.strategies = strategies      # pool -> its configured strategy (the chain's)
        self.max_pins = max_pins
        self._pins: OrderedDict[tuple[str, bytes], tuple[str, float]] = OrderedDict()
        # what the status tick reads, kept as pins change (not counted over up to MAX_PINS pins
        # each second): pool -> row -> live pins; and when each pin ends (a heap, stale entries
        # skipped: a renewed pin pushes its new end)
        self._held: dict[str, dict[str, int]] = {}
        self._ends: list[tuple[float, tuple[str, bytes]]] = []
        self._windows: dict[str, Window] = {}
        self.moved: Counter[str] = Counter()   # pins that yielded, by why (share; refused: not eligible)

    def applies(self, pool: str) -> bool:
        """Whether *pool*'s conversations are pinned (affinity on and a rotating strategy).
        Asked three times a request: the switch first, each configured name read once."""
        if not self.settings().enabled:
            return False
        return _rotating(self.strategies().get(pool, policy.DEFAULT_STRATEGY))

    def may_apply(self) -> bool:
        """Whether any pool's conversations may be pinned (affinity on, and some pool on a
        rotating strategy; a pool with none configured fills first). When not, a request's
        conversation is not even named (the forwarder asks once a request)."""
        if not self.settings().enabled:
            return False
        return any(_rotating(got) for got in self.strategies().values())

    def ready(self, pool: str, want: Any) -> None:
        """Work out *want*'s conversation now (the body parsed, the digest taken), before the
        view's lock is taken for the pick: :meth:`prefer` then costs a dict lookup under it."""
        conv = conversation_of(want)
        if conv is not None and self.applies(pool):
            _ = conv.digest

    def prefer(self, pool: str, want: Any, now: float, usable: int) -> str | None:
        """The row id *want*'s conversation prefers in *pool* now, or None: no pin, expired,
        affinity off for the pool, or the row would take more than its share (it yields)."""
        conv = conversation_of(want)
        if conv is None:
            return None
        conv.prefer = None
        if not self.applies(pool) or conv.digest is None:
            return None
        pin = self._pins.get((pool, conv.digest))
        if pin is None or now >= pin[1]:
            return None
        share = self.settings().max_share
        window = self._windows.get(pool)
        if share is not None and window is not None and usable > 1:
            got = window.share(pin[0], now)
            if got is not None and got > max(share, 1.0 / usable + SHARE_SLACK):
                self.moved["share"] += 1
                return None
        conv.prefer = (pool, pin[0])
        return pin[0]

    def served(self, pool: str, row: str, want: Any, now: float) -> None:
        """A 2xx from *row* of *pool*: the pool's traffic counts it, and the conversation is
        pinned to *row* (renewed) for the affinity TTL."""
        if not self.applies(pool):
            return
        window = self._windows.get(pool)
        if window is None:
            window = self._windows[pool] = Window()
        window.add(row, now)
        conv = conversation_of(want)
        if conv is None or conv.digest is None:
            return
        if conv.prefer is not None and conv.prefer != (pool, row):
            self.moved["refused"] += 1      # its pinned row could not serve: pinned to this one now
        aff = self.settings()
        key = (pool, conv.digest)
        until = now + (aff.long_ttl if conv.long else aff.ttl)
        old = self._pins.get(key)
        if old is not None:
            self._count(pool, old[0], -1)
        self._pins[key] = (row, until)
        self._count(pool, row, 1)
        self._pins.move_to_end(key)
        heapq.heappush(self._ends, (until, key))
        while len(self._pins) > self.max_pins:
            (gone_pool, _d), (gone_row, _u) = self._pins.popitem(last=False)
            self._count(gone_pool, gone_row, -1)
        if len(self._ends) > 2 * len(self._pins) + 64:      # renewals left stale ends: rebuild
            self._ends = [(u, k) for k, (_r, u) in self._pins.items()]
            heapq.heapify(self._ends)

    def _count(self, pool: str, row: str, by: int) -> None:
        per = self._held.setdefault(pool, {})
        n = per.get(row, 0) + by
        if n > 0:
            per[row] = n
        else:
            per.pop(row, None)
            if not per:
                del self._held[pool]

    def held(self, now: float) -> dict[str, dict[str, int]]:
        """Per pool, per row id: how many live conversations it holds (expired pins dropped).
        Costs the pins that ended since the last call, not every pin (the status tick's)."""
        ends = self._ends
        while ends and ends[0][0] <= now:
            until, key = heapq.heappop(ends)
            pin = self._pins.get(key)
            if pin is not None and pin[1] == until:        # not renewed since: it has ended
                del self._pins[key]
                self._count(key[0], pin[0], -1)
        return {pool: dict(per) for pool, per in self._held.items()}

    def __len__(self) -> int:
        return len(self._pins)
