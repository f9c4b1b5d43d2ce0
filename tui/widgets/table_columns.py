"""Which columns the credential table shows, and how wide each is: pure functions of the
terminal's width, the layout the operator picked and the longest texts.

Three layouts:

- ``auto`` (the default): the columns of ``cells.NARROW``, then as many of :data:`EXTRAS` as
  the terminal has room for, in that order, once the columns shown have room for their
  longest texts and the code/reason column for every reason Hermes writes; a wider
  terminal shows more columns, never fewer;
- ``wide`` (``w``): every column of ``cells.WIDE``; a terminal narrower than that scrolls
  sideways;
- ``custom``: the operator's own set (the column chooser, ``W``).

The headroom column (the tightest window a provider reported, #21) joins the auto and wide
layouts once any key has a reading, from 80 columns on; it is the first to give way: it
shrinks before any other column (a shorter bar, then none) and goes first when the terminal
is narrower than 80. The spend column (today's cost, #29) joins the same way once any key has
a figure, as the auto layout's second extra (after the message), and gives way before the
code/reason column does. Whatever the layout, columns keep one order (:data:`ORDER`). While
the code/reason column is short of every Hermes reason (80 columns), the label and the key give
it the cells their longest texts do not need (:data:`RECLAIM`). Spare cells go, in order, to
the label and the key (up to their longest texts), the code/reason or reason column (up to
the longest reason Hermes writes, :data:`REASON_WANT`, or the longest shown when that is
longer), the source (up to its longest text), and the message column takes the rest. The set
of columns depends on the terminal alone, and the reason column is sized for Hermes's
reasons rather than for the texts of the moment, so a value that changes moves no column:
only a longer label, key or source does, or a reason longer than any Hermes writes.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from tui.text.format import NULL
from tui.widgets.cells import HEADROOM, NARROW, SPEND, WIDE, ColumnSpec

PAD = 1  # blank cells on each side of a column

AUTO, WIDE_MODE, CUSTOM = "auto", "wide", "custom"

# Every last_error_reason / failure_reason Hermes 0.19 writes (agent/credential_pool.py,
# agent/error_classifier.py: the terminal OAuth reasons, the billing codes, the classifier's
# verdicts), the provider codes the spec names, and the console's own manual_cooldown.
# tests/console/test_table_layout.py checks this list against the hermes-agent wheel.
HERMES_REASONS: tuple[str, ...] = (
    # 401s that make a row dead
    "token_invalidated", "token_revoked", "invalid_token", "invalid_grant",
    "unauthorized_client", "refresh_token_reused",
    # refresh and rate limits
    "token_expired", "credential_pool_refresh_failure", "rate_limit_exceeded",
    "usage_limit_reached", "manual_cooldown",
    # billing codes
    "insufficient_quota", "billing_not_active", "payment_required", "insufficient_credits",
    "no_usable_credits", "balance_depleted", "model_not_supported_on_free_tier",
    "personal-team-blocked:spending-limit",
    # the classifier's verdicts (failure_reason)
    "auth", "auth_permanent", "billing", "billing_unverified", "rate_limit",
    "upstream_rate_limit", "overloaded", "server_error", "timeout", "ssl_cert_verification",
    "context_overflow", "payload_too_large", "image_too_large", "model_not_found",
    "provider_policy_blocked", "content_policy_blocked", "format_error",
    "invalid_encrypted_content", "multimodal_tool_content_unsupported", "thinking_signature",
    "long_context_tier", "oauth_long_context_beta_forbidden", "llama_cpp_grammar_pattern",
    "unknown",
)
REASON_WANT = max(map(len, HERMES_REASONS))
CODE_WIDTH = 4          # "429 " before the reason in the code/reason column
REASON_CAP = 60         # longer reasons are cut, however wide the terminal

# The one order of every column, whichever are shown.
ORDER: tuple[str, ...] = (
    "pos", "label", "auth", "source", "status", "left", "headroom", "spend", "resets", "error", "code", "reason",
    "requests", "priority", "id", "message", "fingerprint",
)
_NARROW_KEYS = tuple(s.key for s in NARROW)
# Base widths in the auto and custom layouts: the narrow ones, and for the rest the wide
# ones (a smaller message: it takes whatever is left).
BASE: dict[str, ColumnSpec] = {
    **{s.key: s for s in WIDE},
    "source": ColumnSpec("source", "source", 12),
    "message": ColumnSpec("message", "message", 16),
    "error": ColumnSpec("error", "code/reason", 17),
    "headroom": HEADROOM,
    "spend": SPEND,
    **{s.key: s for s in NARROW},
}
TITLES: dict[str, str] = {k: BASE[k].label for k in ORDER}
# What the auto layout adds as the terminal widens, in this order.
EXTRAS: tuple[str, ...] = ("message", "spend", "requests", "resets", "source", "priority", "id", "auth")

# Below the base widths (under 80 columns; the wide layout under 180), these give way
# first, in order, down to these widths: the message and the source, then the label down
# to ten, before the reason; the label's last cells go last.
SHRINK: tuple[tuple[str, int], ...] = (
    ("headroom", 6), ("spend", 7), ("message", 10), ("source", 8), ("label", 10), ("error", 9), ("reason", 8),
    ("label", 8),
)
FLOOR: dict[str, int] = {k: min(f for key, f in SHRINK if key == k) for k, _ in SHRINK}
NATURAL, WANT, REST = "natural", "want", "rest"
# Which columns take spare cells, in order, how (up to their longest text; up to the longest
# reason Hermes writes or the longest shown; all that is left) and up to how wide.
GROW: tuple[tuple[str, str, int], ...] = (
    ("label", NATURAL, 40), ("fingerprint", NATURAL, 24), ("headroom", NATURAL, 22),
    ("spend", NATURAL, 24),
    ("error", WANT, CODE_WIDTH + REASON_CAP),
    ("reason", WANT, REASON_CAP), ("source", NATURAL, 30), ("message", REST, 120),
)


# A title too long for its column's width reads as this instead of being cut (the headroom
# column, once it has given way to its words at 80 columns).
SHORT_TITLES: dict[str, str] = {"headroom": "room"}


def title(spec: ColumnSpec, width: int) -> str:
    """*spec*'s title in *width* cells: whole, else its short form, else cut."""
    if len(spec.label) > width and len(SHORT_TITLES.get(spec.key, spec.label)) <= width:
        return SHORT_TITLES[spec.key]
    return spec.label[:width]


def want(key: str) -> int:
    """How wide a WANT column should be to show every reason Hermes writes whole."""
    return CODE_WIDTH + REASON_WANT if key == "error" else REASON_WANT


def padded(specs: Iterable[ColumnSpec]) -> int:
    return sum(s.width + 2 * PAD for s in specs)


# The narrowest table the headroom column joins (80 columns less the scrollbar's cell).
HEADROOM_FROM = padded(NARROW) + 1


def has_readings(natural: dict[str, int]) -> bool:
    """Whether any row's headroom cell says more than ``—`` (the column is worth its cells)."""
    return natural.get("headroom", 0) > len(NULL)


def has_spend(natural: dict[str, int]) -> bool:
    """Whether any row's spend cell says more than ``—`` (the column is worth its cells)."""
    return natural.get("spend", 0) > len(NULL)


def growth(key: str, base: int, natural: dict[str, int]) -> int:
    """Cells a column of *base* width takes beyond it before the message gets any: up to
    its longest text (NATURAL), up to every Hermes reason (WANT); none for the rest."""
    for k, how, cap in GROW:
        if k == key and how != REST:
            target = natural.get(key, 0) if how == NATURAL else max(natural.get(key, 0), want(key))
            return max(0, min(cap, target) - base)
    return 0


def columns_for(mode: str, chosen: Sequence[str], total: int,
                natural: dict[str, int] | None = None) -> tuple[ColumnSpec, ...]:
    """The columns a table *total* cells wide shows in layout *mode* (*chosen*: the custom
    layout's keys). The auto layout adds an extra column only when, with it, every column
    shown still has room for its longest text (or every Hermes reason) first."""
    natural = natural or {}
    if mode == WIDE_MODE:
        sides = {"headroom"} if has_readings(natural) else set()
        sides |= {"spend"} if has_spend(natural) else set()
        return tuple(BASE[k] for k in ORDER if k in {s.key for s in WIDE} | sides) if sides else WIDE
    if mode == CUSTOM:
        return tuple(BASE[k] for k in ORDER if k in {"pos", *chosen})

    def need(key: str) -> int:
        base = BASE[key].width
        return base + 2 * PAD + growth(key, base, natural)

    keys = set(_NARROW_KEYS)
    if has_readings(natural) and total >= HEADROOM_FROM:
        keys.add("headroom")
    used = sum(need(k) for k in keys)
    for key in EXTRAS:
        if key == "spend" and not has_spend(natural):
            continue    # a column of dashes is not worth its cells
        if used + need(key) > total:
            break   # in order: a wider terminal only ever adds columns
        keys.add(key)
        used += need(key)
    return tuple(BASE[k] for k in ORDER if k in keys)


# Short of room for every reason Hermes writes (80 columns), these give the code/reason (or
# reason) column the cells their longest text does not need, down to at least their title.
RECLAIM: tuple[str, ...] = ("label", "fingerprint")


def _reclaim(out: dict[str, int], spare: int, natural: dict[str, int], minimum: dict[str, int]) -> None:
    """Move into the reason column, from the RECLAIM columns, the cells it lacks that the
    *spare* cells will not give it: a label column 13 wide for 10-cell labels leaves a
    ``429 rate_limit_e…``. A column whose longest text is not known keeps its width."""
    for wanting in ("error", "reason"):
        if wanting not in out or spare < 0:
            continue
        cap = CODE_WIDTH + REASON_CAP if wanting == "error" else REASON_CAP
        short = min(cap, max(natural.get(wanting, 0), want(wanting))) - out[wanting] - spare
        for key in RECLAIM:
            if short <= 0 or key not in out or key not in natural:
                continue
            least = max(natural[key], len(TITLES[key]), minimum.get(key, 0))
            take = min(short, out[key] - least)
            if take > 0:
                out[key] -= take
                out[wanting] += take
                short -= take


def widths(specs: Sequence[ColumnSpec], total: int, natural: dict[str, int],
           minimum: dict[str, int] | None = None) -> tuple[int, ...]:
    """Each column's text width for a table *total* cells wide.

    Every column gets its base width (or *minimum*, when larger). Too narrow for that, the
    SHRINK columns give back the cells their texts do not need, then give way, but only
    when that makes the table fit (else it scrolls sideways at full widths); spare cells
    go to the GROW columns in order.
    """
    minimum = minimum or {}
    out = {s.key: max(s.width, minimum.get(s.key, 0)) for s in specs}
    spare = total - sum(w + 2 * PAD for w in out.values())
    for key in ("headroom", "spend", "label", "source", "message"):
        # First the cells no text needs (a label column wider than every label); not the
        # reason's: sized for Hermes's reasons, it must not move when one appears...
        if spare >= 0:
            break
        if key in out:
            take = min(max(0, out[key] - max(FLOOR[key], natural.get(key, 0))), -spare)
            out[key] -= take
            spare += take
    # ...then text, message text before the reason's.
    give = sum(max(0, out[k] - floor) for k, floor in FLOOR.items() if k in out)
    for key, floor in SHRINK:
        # Too narrow for the base widths: give up message text before the key's tail.
        if spare >= 0 or give < -spare:
            break
        if key in out and out[key] > floor:
            take = min(out[key] - floor, -spare)
            out[key] -= take
            spare += take
    _reclaim(out, spare, natural, minimum)
    for key, how, cap in GROW:
        if spare <= 0:
            break
        if key not in out:
            continue
        grow = (cap - out[key]) if how == REST else growth(key, out[key], natural)
        if grow > 0:
            take = min(grow, spare)
            out[key] += take
            spare -= take
    return tuple(out[s.key] for s in specs)
