"""Reopen-probe verdicts and the per-token cache that keeps concurrent callers to one request.

A :class:`Verdict` is what a probe concluded about one credential's quota (reopened,
limited, unknown). A :class:`VerdictCache` keeps it for 300 s per token; its slot is
reserved *before* the request, so concurrent callers wait for one HTTP request instead of
stampeding. Tokens are keyed by hash: the cache never holds a secret in clear.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from store.dialects.readings import Reading

REOPENED = "reopened"
LIMITED = "limited"
UNKNOWN = "unknown"

VERDICT_TTL = 300.0
PROBE_TIMEOUT = 5.0


@dataclass(frozen=True)
class Verdict:
    """What a probe concluded about one credential's quota."""

    state: str                 # reopened | limited | unknown
    reason: str | None = None  # why (always for unknown); never holds a secret
    checked_at: float = 0.0
    # What the endpoint said of the key's windows (OpenRouter's credits, Codex's session and
    # weekly windows), for the headroom sidecar; empty when it said nothing readable.
    readings: tuple[Reading, ...] = ()

    @property
    def reopened(self) -> bool:
        return self.state == REOPENED

    def describe(self) -> str:
        """Operator-facing words: ``reopened``, ``still limited``, ``unknown (reason)``."""
        if self.state == REOPENED:
            return "reopened"
        if self.state == LIMITED:
            return "still limited" + (f" ({self.reason})" if self.reason else "")
        return f"unknown ({self.reason or 'no reason given'})"


@dataclass
class _Slot:
    done: threading.Event = field(default_factory=threading.Event)
    verdict: Verdict | None = None
    stored_at: float = 0.0


class VerdictCache:
    """Verdicts per token for *ttl* seconds. The slot is reserved before the request is
    made, so a second caller for the same token waits for the first one's answer."""

    def __init__(self, ttl: float = VERDICT_TTL, clock: Callable[[], float] = time.time,
                 wait_timeout: float = 2 * PROBE_TIMEOUT) -> None:
        self.ttl = ttl
        self.clock = clock
        self.wait_timeout = wait_timeout
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()
        self.requests = 0   # how many times a probe function actually ran

    @staticmethod
    def key_of(token: str) -> str:
        # Hash: the cache must not become one more place a secret sits in clear.
        return hashlib.sha256(token.encode("utf-8")).hexdigest()

    def get(self, token: str, probe: Callable[[], Verdict]) -> Verdict:
        """The cached verdict for *token*, or run *probe* once (other callers wait)."""
        key = self.key_of(token)
        with self._lock:
            slot = self._slots.get(key)
            fresh = slot is not None and (
                not slot.done.is_set() or self.clock() - slot.stored_at < self.ttl)
            if fresh:
                owner = False
            else:
                slot = self._slots[key] = _Slot()
                owner = True
                self.requests += 1
        assert slot is not None
        if not owner:
            if not slot.done.wait(self.wait_timeout) or slot.verdict is None:
                return Verdict(UNKNOWN, "another probe of this key is still running", self.clock())
            return slot.verdict
        try:
            verdict = probe()
        except Exception as exc:  # a probe that raises is "unknown", never "reopened"
            verdict = Verdict(UNKNOWN, f"probe failed: {type(exc).__name__}", self.clock())
        with self._lock:
            slot.verdict = verdict
            slot.stored_at = self.clock()
        slot.done.set()
        return verdict

    def put(self, token: str, verdict: Verdict) -> None:
        """Override the verdict for *token* (e.g. the primary failed right after a restore)."""
        slot = _Slot(verdict=verdict, stored_at=self.clock())
        slot.done.set()
        with self._lock:
            self._slots[self.key_of(token)] = slot

    def clear(self) -> None:
        with self._lock:
            self._slots.clear()
