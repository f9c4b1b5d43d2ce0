"""Every key reaches the widget it was typed for, and a question answers only to deliberate keys.

Over SSH keys arrive in bursts (a paste, a laggy link, a console busy for a moment). Textual
routes each key to the widget focused *when the key is taken from the app's queue*, and
applies ``focus()`` and a pushed screen's mount later: a burst ``/ready`` used to reach the
table as ``/``, ``r``, ``e``..., so ``r`` opened the reset question and ``y`` confirmed it
before the filter box ever had the focus.

:class:`KeyOrder` is the one mechanism, in the app's key dispatch (``HermesAdminApp.on_event``):

- a key bound to an action (``/``, ``:``, ``r``, Enter in a form: any key in the focus chain's
  active bindings) may open something, so the keys after it wait, in order, until it has
  settled: a :class:`KeySettled` message, posted to the same widget right after it, has
  bubbled to the app behind it; then the app's queued callbacks (the ``focus()`` the action
  asked for) run, and when the action changed the screen on top, that screen has mounted and
  painted. Only then does the next key go, to whatever has the focus now: the filter box,
  the command line, a modal's field. A key bound to nothing (a letter typed into a field)
  or to a move within the focused widget (:data:`MOVES`: the cursor, scrolling, editing in a
  field) opens nothing and holds nothing: typing and scrolling stay as fast as Textual's own
  dispatch;
- a screen that changes the store on its answer (:class:`tui.widgets.guarded.GuardedModal`:
  every confirmation, the cooldown form) takes no key that was created before it was on
  screen: a key in the same burst as the key that opened it does nothing (the flash line
  says so), while ``r``, a look, then ``y`` still works. A key's creation time is Textual's
  ``Message.time``, stamped when the driver parsed it from the terminal's input.

``HERMES_ADMIN_KEY_ORDER=off`` switches both off (Textual's own dispatch): the tests' control.
A sentinel that never comes back (its widget removed on the way) is covered by a bounded
fallback: the next key goes after :data:`FALLBACK` seconds at most.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Awaitable, Callable

from textual import events
from textual.app import App
from textual.message import Message
from textual.widgets import Input, TextArea

from tui.widgets.guarded import GuardedModal

ENV = "HERMES_ADMIN_KEY_ORDER"
FALLBACK = 0.5

# Actions that move or edit within the focused widget and never open, close or focus anything
# (Textual's own widgets' names and the credential table's): their keys hold nothing.
MOVES = frozenset({
    "move", "sideways", "cursor_up", "cursor_down", "cursor_left", "cursor_right", "cursor_home",
    "cursor_end", "cursor_left_word", "cursor_right_word", "cursor_page_up", "cursor_page_down",
    "page_up", "page_down", "page_left", "page_right", "scroll_up", "scroll_down", "scroll_left",
    "scroll_right", "scroll_home", "scroll_end", "first", "last", "home", "end",
    "delete_left", "delete_right", "delete_left_word", "delete_right_word", "delete_left_all",
    "delete_right_all",
})


TEXT_FIELDS = (Input, TextArea)      # where letters are inserted as they come, and edits are bound


def enabled_by_env() -> bool:
    """False when ``HERMES_ADMIN_KEY_ORDER=off`` (or 0/no/false) asks for Textual's own dispatch."""
    return os.environ.get(ENV, "").strip().lower() not in ("off", "0", "no", "false")


class KeySettled(Message):
    """Posted behind a key to the widget the key went to; reaches the app after the key did."""

    bubble = True

    def __init__(self, token: int) -> None:
        super().__init__()
        self.token = token


Dispatch = Callable[[events.Key], Awaitable[None]]


class KeyOrder:
    """The app's keys, one at a time, each to the widget focused once the previous one settled."""

    def __init__(self, app: App, dispatch: Dispatch, *, enabled: bool | None = None) -> None:
        self.app = app
        self.dispatch = dispatch            # Textual's own handling of one key (App.on_event)
        self.enabled = enabled_by_env() if enabled is None else enabled
        self.waiting: deque[events.Key] = deque()
        self.token = 0                      # the key on its way (0: none)
        self.sent = 0                       # keys sent so far: each key's token, never reused
        self.dropped: list[str] = []        # keys a guarded screen refused (tests read it)
        self.screen: object = None          # the screen on top when the key on its way was sent

    async def arrive(self, event: events.Key) -> None:
        """A key from the terminal: goes now if no other key is on its way, else waits its turn."""
        if self.token or self.waiting:
            self.waiting.append(event)
            return
        await self._send(event)

    async def _send(self, event: events.Key) -> None:
        app = self.app
        screen = app.screen
        if isinstance(screen, GuardedModal) and not screen.answers_to(event.time):
            self.dropped.append(event.key)
            if not screen.told:
                screen.told = True
                app.notify(f"{event.key} ignored: it arrived with the key that opened this question; "
                           "press it again to answer", severity="warning", timeout=4, markup=False)
            return
        if not self._may_open(event):
            await self.dispatch(event)      # opens nothing: the next key may follow at once
            return
        self.sent += 1
        token = self.token = self.sent
        self.screen = screen
        await self.dispatch(event)
        target = app.focused or app.screen
        if not target.post_message(KeySettled(token)):
            app.screen.post_message(KeySettled(token))
        app.set_timer(FALLBACK, lambda: self._settle(token, fallback=True))

    def _may_open(self, event: events.Key) -> bool:
        """Whether *event* would run an action of the focus chain other than a move (any such
        action may open, close or focus something), or any action at all while a text field
        has the focus: Textual runs a field's bound edits (Backspace, Ctrl+U, Left) after the
        letters already on their way to it, so ``xyz``, three Backspaces and ``third`` in one
        burst read ``xyzth``. Held, the letters after an edit wait for it."""
        active = self.app.active_bindings
        for key in (event.key, *event.aliases):
            if key in active:
                action = active[key].binding.action.split("(", 1)[0].strip()
                return action not in MOVES or isinstance(self.app.focused, TEXT_FIELDS)
        return False

    def settled(self, message: KeySettled) -> None:
        """The sentinel reached the app: the key has been handled everywhere it went."""
        message.stop()
        self._settle(message.token)

    def _settle(self, token: int, fallback: bool = False) -> None:
        if token != self.token:
            return                          # an older key's (its sentinel came after the fallback)
        app = self.app
        if fallback or app.screen is self.screen:
            app.call_later(self._release, token)      # after the callbacks the action queued (a focus)
            return
        # A screen opened or closed: after it mounted, focused and painted.
        app.call_later(lambda: app.screen.call_after_refresh(app.call_later, self._release, token))

    async def _release(self, token: int) -> None:
        if token != self.token:
            return
        self.token = 0
        await self._next()

    async def _next(self) -> None:
        # A loop, not a recursion: a pasted page of keys must not exhaust the stack.
        while self.waiting and not self.token:
            await self._send(self.waiting.popleft())
