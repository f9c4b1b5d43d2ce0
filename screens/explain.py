"""Why a key is disabled, from one place.

A screen owns a :class:`Refusals` built on its one reason function (``reason(action,
parameters)``: why the action cannot run now, None when it can). That answer both dims the
key in the footer (``check_action`` returns None) and, when the dimmed key is pressed
anyway, tells the operator why instead of doing nothing at all.
"""

from __future__ import annotations

from typing import Callable

from textual import events
from textual.screen import Screen

from tui.services.host import disabled_reason, host

Reason = Callable[[str, tuple[object, ...]], "str | None"]


def split_action(action: str) -> tuple[str, tuple[int, ...]]:
    """``move_entry(-1)`` -> ("move_entry", (-1,)); ``reset`` -> ("reset", ())."""
    if "(" not in action:
        return action, ()
    name, _, rest = action.partition("(")
    return name, (int(rest.rstrip(")")),)


class Refusals:
    """One screen's ``check_action`` answer and refusal notice, from one reason."""

    def __init__(self, screen: Screen, reason: Reason) -> None:
        self.screen = screen
        self.reason = reason

    def availability(self, action: str, parameters: tuple[object, ...] = ()) -> bool | None:
        """``check_action``'s answer: None (dimmed, pressing says why) when there is a reason."""
        return disabled_reason(self.reason(action, parameters))

    def refuse(self, action: str, parameters: tuple[object, ...] = ()) -> bool:
        """Say why *action* is unavailable; True when it was."""
        reason = self.reason(action, parameters)
        if reason:
            host(self.screen).notify(reason, severity="warning", timeout=4, markup=False)
        return bool(reason)

    def explain_key(self, event: events.Key) -> None:
        """On a key bound to a disabled action: say why and swallow the key."""
        active = self.screen.active_bindings.get(event.key)
        if active is None or active.enabled:
            return
        action, params = split_action(active.binding.action)
        if self.refuse(action, params):
            event.stop()
