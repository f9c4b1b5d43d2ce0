"""What the operator is told after a write: the action, the rows and their status after it.

Derived only from what the write path returned (the audit outcomes of
:func:`store.ops.write.perform`), so the feedback says what landed in the file, not what was
asked. It has two forms: one line for the flash line at the bottom of the screen (k9s's),
and the details, with real line breaks, for the message log (``M``). Values are told in the
operator's words (``grok-4 via xai``), never as the store's internal fields. A destructive
action names the way back: ``L, then u`` in the console (the audit view opens on the newest
action, this one, and ``u`` undoes it after a confirmation) and ``hermes-admin undo <id>``
with the id the operator history kept for that very write; an undo names its redo the same
way. A failed write stays on the flash line until the operator dismisses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from store.ops.actions import Change, Outcome
from store.pools.policy import COOLING, effective
from tui.text.format import countdown

NULL = "—"
MAX_ROWS = 3                     # rows named in the details; the rest are counted
DESTRUCTIVE = frozenset({"remove", "reset"})   # auth.json rows lose fields: there is a way back
UNDO = "undo: hermes-admin undo {id}"           # the CLI's line
CONSOLE_UNDO = "{way}: L, then u (or hermes-admin undo {id})"   # the details' line in the console
CONSOLE_UNDO_SHORT = "{way}: L, then u"                          # the flash line's
DONE_TIMEOUT = 6.0               # seconds a write that landed stays on the flash line
DISMISS_KEY = "ctrl+l"
MESSAGES_KEY = "M"
# Fields of a config value that are the store's bookkeeping, not the operator's words.
INTERNAL_FIELDS = frozenset({"has_api_key", "origin", "origin_index", "extra"})


@dataclass(frozen=True)
class Feedback:
    """One write's result: *line* for the flash line, *message* (several lines) for the log."""

    title: str
    message: str
    severity: str = "information"
    sticky: bool = False          # a failed write: on the flash line until dismissed
    line: str = ""                # the one-line form; "" = the title

    @property
    def flash(self) -> str:
        return self.line or self.title


def value_words(value: Any) -> str:
    """A config value as the operator would say it: a fallback entry as ``model via provider``,
    a mapping as ``key: value`` pairs, a list comma-separated; internal fields left out."""
    if value is None or value == "" or value == [] or value == {}:
        return NULL
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        if "model" in value and "provider" in value:
            words = f"{value['model']} via {value['provider']}"
            if value.get("base_url"):
                words += f" [{value['base_url']}]"
            if value.get("key_env"):
                words += f" key ${value['key_env']}"
            elif value.get("has_api_key"):
                words += " (inline api_key)"
            return words
        pairs = [f"{k}: {value_words(v)}" for k, v in value.items()
                 if k not in INTERNAL_FIELDS and v not in (None, "")]
        return ", ".join(pairs) or NULL
    if isinstance(value, (list, tuple)):
        return ", ".join(value_words(v) for v in value)
    return str(value)


# A config edit's action and its setting in the operator's words, not config.yaml's keys.
CONFIG_ACTIONS = {"config.strategy": "strategy", "config.fallback.add": "fallback added",
                  "config.fallback.remove": "fallback removed", "config.fallback.move": "fallback moved",
                  "config.fallback.clear": "fallback cleared", "config.routing.set": "routing set",
                  "config.routing.unset": "routing unset", "config.undo": "config undo"}
CONFIG_SECTIONS = {"credential_pool_strategies": "strategy of", "fallback_providers": "fallback chain",
                   "provider_routing": "routing"}


# auth.json's field names, as a note in the console says them (``M`` never lists internal names).
FIELD_WORDS = {
    "last_status_at": "status time", "last_status": "status", "last_error_code": "error code",
    "last_error_reason": "reason", "last_error_message": "message",
    "last_error_reset_at": "reset time", "failure_reason": "failure reason",
    "status_cleared_at": "cleared time", "request_count": "request count",
    "access_token": "key", "refresh_token": "refresh token", "agent_key": "agent key",
    "model_cooldowns": "model benches", "priority": "priority",
}
_FIELD = re.compile(r"\b(" + "|".join(sorted(FIELD_WORDS, key=len, reverse=True)) + r")\b")


def note_words(note: str) -> str:
    """*note* with auth.json's field names in words: ``kept failure_reason, last_error_code``
    reads ``kept failure reason, error code``."""
    return _FIELD.sub(lambda m: FIELD_WORDS[m.group(1)], note)


def action_words(action: str) -> str:
    """``config.strategy`` -> ``strategy``: a config edit named as the operator would."""
    return CONFIG_ACTIONS.get(action, action.removeprefix("config.").replace(".", " "))


def setting_words(key: str) -> str:
    """``credential_pool_strategies.openrouter`` -> ``strategy of openrouter``;
    ``fallback_providers[1]`` -> ``fallback chain [1]``; ``provider_routing.sort`` -> ``routing sort``."""
    for section, words in CONFIG_SECTIONS.items():
        if key.startswith(section):
            rest = key[len(section):].lstrip(".")
            return f"{words} {rest}".strip() if rest else words
    return key.replace(".", " ")


def status_words(fields: dict[str, Any], now: float | None) -> str:
    """A row's status as the table says it: ``cooling 10m``, ``ready``, ``dead``, ``ok`` (at
    *now*; without a clock, the stored word). A bench's length is what an operator changes,
    so a cooldown reads ``cooling 1m → cooling 10m``, never ``exhausted → exhausted``."""
    if now is None:
        return fields.get("last_status") or "ok"
    row = dict(fields)
    eff = effective(row, [row], now)         # type: ignore[arg-type]
    if eff.status == COOLING:
        return f"{COOLING} {countdown(eff.seconds_left)}"
    return eff.status


def _row_result(action: str, c: Change, now: float | None = None) -> str:
    """"or-primary: cooling 59m → ok" — the row and how its status moved."""
    name = c.label or c.id or NULL
    before, after = c.before or {}, c.after or {}
    if "value" in before or "value" in after:                 # a config.yaml edit
        return f"{setting_words(c.id)}: {value_words(before.get('value'))} → {value_words(after.get('value'))}"
    b, a = status_words(before, now), status_words(after, now)
    if action == "undo":
        if not before:
            return f"{name}: back ({a})"
        if not after:
            return f"{name}: removed again"
        return f"{name}: put back, {b} → {a}"
    if not after:
        return f"{name}: {b} → removed"
    if not before:
        return f"{name}: added ({a})"
    if action == "priority" or before.get("priority") != after.get("priority"):
        return f"{name}: priority {before.get('priority')} → {after.get('priority')}"
    return f"{name}: {b} → {a}"


def _rows(action: str, changes: list[Change], now: float | None = None) -> list[str]:
    lines = [_row_result(action, c, now) for c in changes[:MAX_ROWS]]
    if len(changes) > MAX_ROWS:
        lines.append(f"… and {len(changes) - MAX_ROWS} more")
    return lines


def undo_hint(history_id: str) -> str:
    """The CLI's way back after a destructive write."""
    return UNDO.format(id=history_id)


def done_feedback(what: str, outcomes: Iterable[Outcome], notes: Iterable[str] = (), *,
                  history_id: str | None = None, now: float | None = None) -> Feedback:
    """The feedback for a write that landed (*what* is the request's own words); a destructive
    one names the undo of this write (*history_id*, from the operator history). With *now*,
    statuses read as the table's (``cooling 10m``)."""
    outcomes = list(outcomes)
    if not outcomes:
        extra = "; ".join(map(note_words, notes))
        message = "nothing to change" + (f" ({extra})" if extra else "")
        return Feedback(f"{what}: done", message, line=f"{what}: {message}")
    lines: list[str] = []
    titles: list[str] = []
    rows = 0
    destructive = undone = False
    for out in outcomes:
        n = len(out.changes)
        rows += n
        where = "" if out.pool == "config.yaml" and out.action.startswith("config.") else f" · {out.pool}"
        titles.append(f"{action_words(out.action)}{where}" + (f" · {n} rows" if n > 1 else ""))
        lines += _rows(out.action, out.changes, now)
        lines += [f"note: {note_words(note)}" for note in out.notes]
        destructive |= out.action in DESTRUCTIVE
        undone |= out.action in ("undo", "config.undo")
    head = "; ".join(dict.fromkeys(titles))
    first = next((x for x in lines if not x.startswith("note: ")), "")
    line = head + (f" · {first}" if first else "") + (f" (+{rows - 1} more)" if rows > 1 else "")
    if (destructive or undone) and history_id:
        way = "redo" if undone else "undo"
        lines.append(CONSOLE_UNDO.format(way=way, id=history_id))
        line += " · " + CONSOLE_UNDO_SHORT.format(way=way)
    return Feedback(f"{head}: done", "\n".join(lines), line=line)


def failed_feedback(title: str, message: str, line: str = "") -> Feedback:
    """A failed write: on the flash line until dismissed (the flash line names the key).
    *line* puts what matters first (that nothing was written), before a long reason."""
    return Feedback(title or "write failed", message, severity="error", sticky=True, line=line or message)
