"""Why a key is disabled, from one place.

A screen mixing in :class:`ExplainsDisabled` answers :meth:`~ExplainsDisabled.disabled_reason`
once; that answer both dims the key in the footer (``check_action`` returns None) and, when
the dimmed key is pressed anyway, tells the operator why instead of doing nothing at all.
"""

from __future__ import annotations

from textual import events
from textual.binding import ActiveBinding

from tui.services.host import host


def split_action(action: str) -> tuple[str, tuple[int, ...]]:
    """``move_entry(-1)`` -> ("move_entry", (-1,)); ``reset`` -> ("reset", ())."""
    if "(" not in action:
        return action, ()
    name, _, rest = action.partition("(")
    return name, (int(rest.rstrip(")")),)


class ExplainsDisabled:
    """Mixed into a Screen: ``check_action`` and the refusal notice share one reason."""

    active_bindings: dict[str, ActiveBinding]

    def disabled_reason(self, action: str, parameters: tuple[object, ...]) -> str | None:
        """Why *action* cannot run now; None when it can (or is not one this screen explains)."""
        return None

    def availability(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``check_action``'s answer: None (dimmed, pressing says why) when there is a reason."""
        return None if self.disabled_reason(action, parameters) else True

    def refuse(self, action: str, parameters: tuple[object, ...] = ()) -> bool:
        """Say why *action* is unavailable; True when it was."""
        reason = self.disabled_reason(action, parameters)
        if reason:
            host(self).notify(reason, severity="warning", timeout=4, markup=False)  # type: ignore[arg-type]
        return bool(reason)

    def explain_disabled_key(self, event: events.Key) -> None:
        """On a key bound to a disabled action: say why and swallow the key."""
        active = self.active_bindings.get(event.key)
        if active is None or active.enabled:
            return
        action, params = split_action(active.binding.action)
        if self.refuse(action, params):
            event.stop()
