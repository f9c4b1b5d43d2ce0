"""Which rule gave a row's countdown, in words, naming the Hermes generation it follows.

The detail view shows it, so an operator can tell a 60 s only-row cap from a provider's
reset time, and an admin-era rule (:mod:`store.pools.generations`) from the older rule that
holds while the generation is not told. Pure: the row, its pool and the TTLs in, a sentence
out (None for a row that is not benched).
"""

from __future__ import annotations

from typing import Sequence

from store.model import STATUS_DEAD, STATUS_EXHAUSTED, Row, as_int, parse_epoch
from store.pools import generations
from store.pools.policy import DEFAULT_TTLS, Ttls, is_billing, is_only_live_row, ttl_for


def _generation(ttls: Ttls) -> str:
    told = ttls.told
    return f"Hermes {told.name}, {told.how}" if told.generation else f"Hermes generation {told.how}"


def _ttl_name(row: Row, only: bool, ttls: Ttls) -> str:
    code = as_int(row.get("last_error_code"), -1) if row.get("last_error_code") is not None else None
    ttl = ttl_for(row, only, ttls)
    if ttls.told.admin and row.get("failure_reason") == generations.ENTITLEMENT:
        return f"the entitlement bench, {ttl:g} s (admin-era rule)"
    if code == 401:
        return f"the 401 TTL, {ttl:g} s"
    if row.get("failure_reason") == "billing_unverified" and code != 402 and ttl == ttls.billing_unverified:
        return f"the billing_unverified TTL, {ttl:g} s"
    if only and not is_billing(row) and ttls.told.only_row_rule and ttl == ttls.only_row_cap:
        return f"the only-row cap, {ttl:g} s (the pool's only live row)"
    base = "the 429 TTL" if code == 429 else "the default TTL"
    return f"{base}, {ttl:g} s" + (" (0.19 has no only-row cap)" if only and not ttls.told.only_row_rule else "")


def explain(row: Row, rows: Sequence[Row], ttls: Ttls = DEFAULT_TTLS) -> str | None:
    """The rule behind :func:`store.pools.policy.until` for *row* in the pool *rows*, or None
    when not benched. No copy of *rows* is made: a view asks this for every benched row."""
    status = row.get("last_status")
    if status == STATUS_DEAD:
        return "dead: never expires (a reset or a new token clears it)"
    if status != STATUS_EXHAUSTED:
        return None
    at = parse_epoch(row.get("last_status_at"))
    reset = parse_epoch(row.get("last_error_reset_at"))
    cleared = parse_epoch(row.get("status_cleared_at"))
    gen = _generation(ttls)
    if ttls.told.admin and at is not None and is_billing(row) and (cleared or 0) > at:
        return f"billing bench lifted: status_cleared_at is after it (clear_billing_benches; {gen})"
    only = is_only_live_row(row, rows)
    if reset is not None:
        said = "the provider's reset time (last_error_reset_at)"
        if at is None or is_billing(row) or not only:
            return f"{said}; {gen}"
        cap = at + ttl_for(row, True, ttls)
        if cap >= reset:
            return f"{said}; {gen}"
        if ttls.told.admin:
            return f"{said}, capped at last_status_at + {cap - at:g} s: the pool's only row (#119163; {gen})"
        return (f"{said}; an admin-era Hermes would cap it at last_status_at + {cap - at:g} s (#119163), "
                f"not applied: {gen}")
    if at is None:
        return "no time stored: usable now"
    return f"last_status_at + {_ttl_name(row, only, ttls)}; {gen}"
