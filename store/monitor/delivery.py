"""Delivering alerts through Apprise: one URL syntax for Slack, Discord, Telegram, ntfy, email,
Matrix and plain JSON webhooks.

Each notification is redacted (the homes' redactor, then control characters made inert)
before it leaves; the targets' URLs hold secrets (webhook tokens, passwords), so only the
redactor's form of each (:mod:`store.redaction.targets`: Apprise's privacy form, every secret
part fingerprinted) is ever shown, and their secret parts, never their hosts, are registered
with the redaction boundary. A failed delivery is retried with a
bound (``retries`` more attempts, backoff doubling up to :data:`MAX_BACKOFF`, cut short by the
stop flag), and every delivery, sent or failed, is one line of the home's audit log. Targets
are tried concurrently, at most :data:`PARALLEL` at once, so a dead target delays no other.

This module is the IO edge of the alerts; it runs on the daemon's delivery thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import apprise

from store.errors import BadInput, HermesAdminError
from store.monitor.alerts import FIRING, Notification
from store.ops import audit
from store.ops.actions import Outcome
from store.paths import Home
from store.redaction import targets
from store.redaction.redact import Redactor, escape_controls, register

MAX_BACKOFF = 30.0
PARALLEL = 8          # deliveries under way at once, across targets
ERROR_CAP = 300
_TYPES = {"critical": apprise.NotifyType.FAILURE, "warning": apprise.NotifyType.WARNING,
          "info": apprise.NotifyType.INFO}


@dataclass(frozen=True)
class Target:
    """One Apprise URL; ``shown`` is the only form of it that is ever printed or stored."""

    url: str = field(repr=False)
    shown: str


def target(url: str, index: int) -> Target:
    """A checked Apprise URL; BadInput naming ``--notify`` (never echoing the URL) when Apprise
    does not know it. Its secret parts (never its hosts) are registered with the redaction
    boundary, and the form shown is the redactor's (:mod:`store.redaction.targets`)."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    probe = apprise.Apprise()
    if not (scheme.isascii() and scheme.replace("+", "").isalnum()) or not probe.add(url):
        named = (f"{scheme}://…" if scheme.isascii() and scheme.isalnum() and len(scheme) <= 20 else
                 "with no scheme://" if "://" not in url else "its scheme not shown")
        raise BadInput("--notify", f"URL #{index} ({named}) is not a URL Apprise can send to "
                       "(see https://github.com/caronc/apprise/wiki for the syntax)")
    privacy = probe[0].url(privacy=True)
    register(*targets.secret_parts(url, privacy))
    return Target(url, targets.shown(url, privacy))


@dataclass(frozen=True)
class Delivery:
    """What became of one notification at one target."""

    time: float
    key: str
    rule: str
    kind: str              # firing | resolved
    target: str            # the privacy form of the URL
    result: str            # sent | failed
    attempts: int
    error: str | None = None
    audit_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "key": self.key, "rule": self.rule, "kind": self.kind, "target": self.target,
                "result": self.result, "attempts": self.attempts, "error": self.error}


Send = Callable[[Target, str, str, str], tuple[bool, str | None]]


def apprise_send(t: Target, title: str, body: str, notify_type: str) -> tuple[bool, str | None]:
    """One attempt at one target: (sent, why not). Apprise's own log lines are the reason."""
    ap = apprise.Apprise()
    ap.add(t.url)
    with apprise.LogCapture(level=logging.WARNING) as log:
        try:
            ok = bool(ap.notify(body=body, title=title, notify_type=notify_type))
        except Exception as exc:  # a plugin bug must not end the monitor
            return False, f"{type(exc).__name__} in Apprise"
        text = log.getvalue() if not ok else ""
    lines = [ln.split(" - ", 2)[-1] for ln in text.strip().splitlines() if ln.strip()]
    return ok, ("; ".join(lines) or "Apprise reported a failure") if not ok else None


class Deliverer:
    """Sends each notification to every target, with bounded retries, and audits each outcome."""

    def __init__(self, targets: Sequence[Target], *, retries: int, redactor: Callable[[Notification], Redactor],
                 audit_home: Callable[[Notification], Home], stop: threading.Event,
                 clock: Callable[[], float] = time.time, backoff: float = 1.0, send: Send = apprise_send) -> None:
        self.targets = list(targets)
        self.retries = retries
        self.redactor = redactor
        self.audit_home = audit_home
        self.stop = stop
        self.clock = clock
        self.backoff = backoff
        self.send = send

    def payload(self, n: Notification) -> tuple[str, str]:
        """(title, body) as they leave: redacted, then made inert."""
        red = self.redactor(n)
        return escape_controls(red.redact(n.title)), escape_controls(red.redact(n.body))

    def deliver_one(self, n: Notification, t: Target) -> Delivery:
        """*n* tried at one target (blocking: the first attempt and up to ``retries`` more,
        backoff doubling, cut short by the stop flag); the outcome audited."""
        title, body = self.payload(n)
        kind = _TYPES.get(n.condition.severity, apprise.NotifyType.WARNING) if n.kind == FIRING \
            else apprise.NotifyType.SUCCESS
        attempts, ok, why = 0, False, None
        while True:
            attempts += 1
            ok, why = self.send(t, title, body, kind)
            if ok or attempts > self.retries or self.stop.is_set():
                break
            if self.stop.wait(min(MAX_BACKOFF, self.backoff * 2 ** (attempts - 1))):
                break           # stopping: no further attempt (what is owed is kept for the next run)
        error = escape_controls(self.redactor(n).redact(why))[:ERROR_CAP] if why else None
        d = Delivery(self.clock(), n.condition.key, n.condition.rule, n.kind, t.shown,
                     "sent" if ok else "failed", attempts, error)
        return self._audit(n, d)

    def deliver(self, n: Notification) -> list[Delivery]:
        """*n* tried at every target at once (at most :data:`PARALLEL` at a time, so a dead
        target delays no other); one :class:`Delivery` per target, in the targets' order."""
        if len(self.targets) <= 1:
            return [self.deliver_one(n, t) for t in self.targets]
        with ThreadPoolExecutor(max_workers=min(PARALLEL, len(self.targets)),
                                thread_name_prefix="monitor-deliver") as pool:
            return list(pool.map(lambda t: self.deliver_one(n, t), self.targets))

    def _audit(self, n: Notification, d: Delivery) -> Delivery:
        c = n.condition
        extra = {"alert": d.kind, "rule": c.rule, "severity": c.severity, "key": c.key, "target": d.target,
                 "result": d.result, "attempts": d.attempts, "title": c.title, "alert_profile": c.profile}
        if c.credential:
            extra["id"] = c.credential
        if d.error:
            extra["error"] = d.error
        try:
            audit.record(self.audit_home(n), Outcome(action=f"alert-{d.result}", pool=c.pool or ""),
                         via="monitor", extra=extra, now=d.time)
        except (HermesAdminError, OSError) as exc:
            return Delivery(d.time, d.key, d.rule, d.kind, d.target, d.result, d.attempts, d.error,
                            audit_error=f"audit log not written: {type(exc).__name__}")
        return d
