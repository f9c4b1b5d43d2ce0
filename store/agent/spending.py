"""The runtime's answers in the usage ledger (#29): what an agent spends through
:class:`~store.agent.runtime.AgentRuntime` is recorded like what the proxy relays.

When a caller reports an answer whose verdict carries usage (the caller judged it with
:func:`store.agent.judge.judge_success`, or handed the answer's body to
:meth:`AgentRuntime.report <store.agent.runtime.AgentRuntime.report>`), :meth:`RuntimeUsage.answer`
queues it on a :class:`~store.usage.feed.UsageFeed` of the runtime's own, whose thread prices
it and hands the :class:`~store.usage.record.Spent` to a :class:`~store.usage.ledger.Ledger`
that writes behind on a thread of its own, in batches:

- never under ``auth.lock`` and never in auth.json: queueing is all the report does;
- a locked, corrupt or missing ledger is a notice (the runtime's ``usage`` notices and the
  log), and the agent goes on;
- on when hermes-admin.yaml's ``usage.ledger`` is (the default), or as the runtime is told;
- nothing starts (no thread, no file, no price table loaded) before the first answer with usage.

A subscription login's answer is priced ``included`` as the proxy's are: whether the row is
one is read from auth.json once per row and secret (a read, never a write, never a lock).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from store.agent.outcomes import Selection, Verdict
from store.authfile import read_store
from store.config import settings as settings_file
from store.dialects.anthropic import uses_oauth
from store.errors import HermesAdminError
from store.model import AUTH_OAUTH, pool_rows, row_by_id
from store.paths import Home
from store.usage.cost import Pricer
from store.usage.feed import UsageFeed
from store.usage.ledger import Ledger, ledger_path

log = logging.getLogger("hermes_admin.agent")

GOES_ON = "the agent goes on"
_OAUTH_CACHE = 8192


class RuntimeUsage:
    """One runtime's usage feed and ledger, started with the first answer that has usage."""

    def __init__(self, home: Home, *, clock: Callable[[], float], notice: Callable[[str], object],
                 enabled: bool | None = None) -> None:
        self.home = home
        self.clock = clock
        self.notice = notice
        self.enabled = enabled          # None: hermes-admin.yaml's usage.ledger
        self.feed: UsageFeed | None = None
        self.ledger: Ledger | None = None
        self.answers = 0                # answers with usage queued
        self._off = False
        self._lock = threading.Lock()
        self._oauth: dict[tuple[str, str, str | None], bool] = {}

    def _settings(self) -> settings_file.Settings:
        try:
            return settings_file.read(self.home)
        except HermesAdminError as exc:
            self.notice(f"{exc}; the usage ledger uses its default settings")
            return settings_file.DEFAULTS

    def _started(self) -> UsageFeed | None:
        if self.feed is not None or self._off:
            return self.feed
        with self._lock:
            if self.feed is None and not self._off:
                usage = self._settings().usage
                if not (usage.ledger if self.enabled is None else self.enabled):
                    self._off = True
                    return None
                feed = UsageFeed(Pricer(usage.prices), clock=self.clock, notice=self.notice)
                self.ledger = Ledger(ledger_path(self.home.root), keep_requests=usage.keep_requests,
                                     keep_hourly=usage.keep_hourly, notice=self.notice, clock=self.clock,
                                     goes_on=GOES_ON)
                feed.listen(self.ledger)
                self.feed = feed
        return self.feed

    def answer(self, sel: Selection, verdict: Verdict, *, model: str | None = None) -> bool:
        """Queue *sel*'s answer when *verdict* carries usage (True: queued). Never blocks on
        the ledger and never raises for it."""
        if verdict.usage is None:
            return False
        feed = self._started()
        if feed is None:
            return False
        feed.answer(sel.pool, sel.row_id, sel.fingerprint, verdict.usage, model=verdict.model or sel.model or model,
                    endpoint=verdict.endpoint, oauth=self._is_oauth(sel))
        self.answers += 1
        return True

    def _is_oauth(self, sel: Selection) -> bool:
        key = (sel.pool, sel.row_id, sel.fingerprint)
        got = self._oauth.get(key)
        if got is None:
            try:
                row = row_by_id(pool_rows(read_store(self.home).doc or {}, sel.pool), sel.row_id)
            except HermesAdminError:
                row = None
            auth_type = row.get("auth_type") if row is not None else None
            got = auth_type == AUTH_OAUTH or uses_oauth(sel.pool, auth_type, sel.token)
            if len(self._oauth) >= _OAUTH_CACHE:
                self._oauth.clear()
            self._oauth[key] = got
        return got

    def close(self, timeout: float = 5.0) -> None:
        """Price and write what is queued (each step bounded by *timeout*), then stop."""
        if self.feed is not None:
            self.feed.close(timeout)
        if self.ledger is not None:
            self.ledger.close(timeout)
