"""The one text funnel: store, config, client and provider text is shown only through :func:`shown`.

It passes the one redactor (the home's secrets, the keys this process was given, and
key shapes) and then renders control, bidi and zero-width characters inert (``\\x1b``,
``\\x0d``, and a line break as ``\\x0a``), before any cell, line or modal cuts or folds
the text, so a key never shows even in part, a hostile label never reaches the terminal
raw, and no text from outside can start a line an operator would read as ours.

Both faces use it: the console installs the redactor for its home with :func:`use` (and
again on every reload, as keys come and go); the CLI installs the one its boundary built
(``tui.cli.boundary``) and every printer passes each outside field through :func:`shown`
before composing its lines. :func:`shown_lines` is only for text of several lines that
hermes-admin composed itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from store.redaction import redact
from store.redaction.redact import Redactor, escape_controls

if TYPE_CHECKING:  # the CLI's start-up does not pay for the watcher's modules
    from store.watch.home import HomeState

_state: dict[str, Any] = {"redactor": Redactor(), "cache": {}}
# Cell texts repeat (statuses, sources, auth types); a bounded cache keeps a 10,000-row
# first paint from redacting the same few words 100,000 times.
_CACHE_MAX = 200_000


def use(redactor: Redactor) -> None:
    """Show text through *redactor* from now on (the same one again keeps what was shown)."""
    if redactor is _state["redactor"]:
        return
    _state["redactor"] = redactor
    _state["cache"] = {}


def redactor() -> Redactor:
    return _state["redactor"]


def shown(value: Any) -> str:
    """*value* as text that is safe to put on one terminal line: redacted, then every control
    character escaped (a line break too: ``a\\x0ab``)."""
    text = value if isinstance(value, str) else str(value)
    cache: dict[str, str] = _state["cache"]
    out = cache.get(text)
    if out is None:
        out = escape_controls(_state["redactor"].redact(text))
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        cache[text] = out
    return out


def shown_lines(value: Any) -> str:
    """:func:`shown` for text of several lines we composed: the newlines stay."""
    text = value if isinstance(value, str) else str(value)
    return "\n".join(shown(line) for line in text.split("\n"))


def secrets_of(state: HomeState, known: redact.HomeSecrets | None = None) -> Redactor:
    """A redactor from what a loaded :class:`store.watch.home.HomeState` already holds (no second
    read of the files). With *known* (one per home, kept across reloads) only the parts
    that changed since the last state are walked, and an unchanged set of secrets gives
    the same redactor back."""
    known = known if known is not None else redact.HomeSecrets()
    return known.redactor(state.store.doc if state.store else None,
                          state.config.data if state.config is not None else None, state.env)
