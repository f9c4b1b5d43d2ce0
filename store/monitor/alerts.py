"""Alerts from conditions: one alert when a condition starts, one recovery when it ends.

Pure, the clock passed in. :meth:`AlertBook.update` takes the conditions that hold at one
evaluation and returns what to send:

- a condition not open yet fires at once (``firing``);
- while it holds, nothing more is sent, however many evaluations see it (deduplicated);
- once it stops holding, its recovery waits for the **quiet period**: it goes out
  (``resolved``) only when the condition has stayed clear that long. A condition that comes
  back meanwhile is still the same open alert, and nothing is sent: a flapping key is one
  alert and, when it settles, one recovery.

So for one condition, two alerts are always more than ``quiet_period`` apart, and a run of
``D`` seconds sends at most ``1 + D // quiet_period`` alerts and as many recoveries (the
bound the flapping test checks). :meth:`next_due` says when a held-back recovery is due, so
the daemon wakes for it without polling.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from store.monitor.conditions import Condition, utc

FIRING = "firing"
RESOLVED = "resolved"


@dataclass(frozen=True)
class Notification:
    """One message to deliver: a condition that started (firing) or ended (resolved)."""

    kind: str
    condition: Condition
    at: float
    since: float           # when the alert opened

    @property
    def title(self) -> str:
        c = self.condition
        return f"[{c.severity}] {c.title}" if self.kind == FIRING else f"[resolved] {c.title}"

    @property
    def body(self) -> str:
        if self.kind == FIRING:
            return self.condition.text
        return f"Resolved: {self.condition.text} (the condition no longer holds; it had since {utc(self.since)})."


@dataclass
class OpenAlert:
    condition: Condition
    since: float
    clear_since: float | None = None     # first evaluation that no longer saw it


class AlertBook:
    """The open alerts, keyed like their conditions."""

    def __init__(self, quiet_period: float) -> None:
        self.quiet_period = max(0.0, quiet_period)
        self.open: dict[str, OpenAlert] = {}

    def seed(self, alerts: Iterable[tuple[Condition, float]]) -> None:
        """Alerts a previous run left open (its status file): not sent again while they hold."""
        for cond, since in alerts:
            self.open.setdefault(cond.key, OpenAlert(cond, since))

    def update(self, active: Mapping[str, Condition], now: float) -> list[Notification]:
        """What to send now that *active* holds at *now*."""
        out: list[Notification] = []
        for key, cond in active.items():
            alert = self.open.get(key)
            if alert is None:
                self.open[key] = OpenAlert(cond, now)
                out.append(Notification(FIRING, cond, now, now))
            else:
                alert.condition = cond
                alert.clear_since = None
        for key, alert in list(self.open.items()):
            if key in active:
                continue
            if alert.clear_since is None:
                alert.clear_since = now
            if now - alert.clear_since >= self.quiet_period:
                del self.open[key]
                out.append(Notification(RESOLVED, alert.condition, now, alert.since))
        return out

    def next_due(self) -> float | None:
        """When the first held-back recovery may go out (None: none is waiting)."""
        due = [a.clear_since + self.quiet_period for a in self.open.values() if a.clear_since is not None]
        return min(due, default=None)
