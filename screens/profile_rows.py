"""What the all-profiles view shows: a banner per profile, then its pools (pure functions).

A profile's pools are shown under view keys ``<profile>/<pool>`` (profile names never hold
a ``/``), so two profiles' ``openrouter`` pools are two groups of the one table. The
credentials inside keep their own pool: every write uses the row's real pool and id,
in the row's own profile.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

from store.pools.view import PoolView
from store.profiles import findings as findings_mod
from store.profiles.inventory import ProfileInventory
from tui.widgets.rows import SEP, ProfileBanner

# A finding's marker in a row's reason cell: a symbol and a word, never colour alone.
NOTE_WORDS = {   # gravest first
    findings_mod.SHARED_REFRESH: "copied",   # an OAuth grant copied between profiles
    findings_mod.PRIMARY_UNUSABLE: "primary-down",
    findings_mod.SHARED_KEY: "shared",
    findings_mod.ENV_MISSING: "env-missing",
    findings_mod.UNKNOWN_PROVIDER: "unknown",
}
FLAG = "⚑"


def view_key(profile: str, pool: str) -> str:
    return f"{profile}/{pool}"


def split_view_key(key: str) -> tuple[str, str]:
    """(profile, pool) of a view key; a banner's key gives (profile, '')."""
    if key.startswith("profile" + SEP):
        return key[len("profile" + SEP):], ""
    profile, _, pool = key.partition("/")
    return profile, pool


def short_model(provider: str | None, model: str | None, limit: int = 14) -> str:
    """``anthropic/claude…``: enough to tell a chain's entries apart."""
    p = provider or "—"
    if not model:
        return p
    m = model if len(model) <= limit else model[: limit - 4] + "…"
    return f"{p}/{m}"


def banner(inv: ProfileInventory) -> ProfileBanner:
    """The profile's header: primary, fallback chain in short form, health; or its error."""
    key = "profile" + SEP + inv.name
    if inv.error is not None:
        return ProfileBanner(key, inv.name, (
            f"■ {inv.name}", "✖ ERROR", f"{inv.error.path}: {inv.error.reason}",
            "(nothing is written to it)"), error=True)
    model = inv.primary.model if inv.primary is not None else None
    tokens = [f"■ {inv.name}", f"primary {short_model(inv.primary_provider, model)}"]
    if inv.fallbacks:
        tokens.append(" ".join(f"→ {short_model(f.provider, f.model)}" for f in inv.fallbacks))
    h = inv.health()
    tokens.append(f"{h['ok']} ok · {h['cooling']} cooling · {h['ready']} ready · {h['dead']} dead")
    if inv.config_error is not None:
        tokens.append(f"⚠ config: {inv.config_error.reason}")
    return ProfileBanner(key, inv.name, tuple(tokens))


class GroupCache:
    """Profile-keyed copies of pool views, reused while the loader reuses the original.

    The table skips a pool it is handed unchanged (same object): keeping the copies
    stable keeps a one-row write a one-row repaint across fifty profiles.
    """

    def __init__(self) -> None:
        self._copies: dict[str, tuple[PoolView, PoolView]] = {}
        self._banners: dict[str, tuple[ProfileInventory, ProfileBanner]] = {}
        self._headroom: tuple[tuple[Any, ...], dict[tuple[str, str], Any]] = ((), {})

    def pools(self, profiles: Iterable[ProfileInventory]) -> list[Any]:
        out: list[Any] = []
        copies: dict[str, tuple[PoolView, PoolView]] = {}
        for inv in profiles:
            # A profile nobody wrote to keeps its inventory object, and so its banner.
            old = self._banners.get(inv.name)
            if old is not None and old[0] is inv:
                b = old[1]
            else:
                b = banner(inv)
                b = old[1] if old is not None and old[1] == b else b
            self._banners[inv.name] = (inv, b)
            out.append(b)
            for pv in inv.pools:
                key = view_key(inv.name, pv.key)
                hit = self._copies.get(key)
                copy = hit[1] if hit is not None and hit[0] is pv else dataclasses.replace(pv, key=key)
                copies[key] = (pv, copy)
                out.append(copy)
        self._copies = copies
        return out

    def replace(self, key: str, pv: PoolView) -> PoolView:
        """A pool rebuilt by the tick (a cooldown ran out): its copy, kept for the next state."""
        copy = dataclasses.replace(pv, key=key)
        old = self._copies.get(key)
        if old is not None:
            self._copies[key] = (old[0], copy)
        return copy

    def headroom(self, states: Mapping[str, Any], names: Iterable[str]) -> dict[tuple[str, str], Any]:
        """The headroom readings of the profiles *names* (their HomeStates in *states*) under
        the view's keys, ``(<profile>/<pool>, id)``. The same object again while no profile's
        sidecar changed, so the table's check for a change costs nothing."""
        sources = tuple((n, states[n].headroom) for n in names if n in states)
        seen, merged = self._headroom
        if len(seen) == len(sources) and all(
                a[0] == b[0] and a[1] is b[1] for a, b in zip(seen, sources, strict=True)):
            return merged
        merged = {(view_key(name, pool), rid): readings
                  for name, readings_of in sources for (pool, rid), readings in readings_of.items()}
        self._headroom = (sources, merged)
        return merged


def notes(findings: Iterable[findings_mod.Finding]) -> dict[tuple[str, str], str]:
    """(view key, id) -> ``⚑ shared`` (kinds joined) for every row a finding names."""
    out = {}
    rank = {k: i for i, k in enumerate(NOTE_WORDS)}
    for (profile, pool, rid), kinds in findings_mod.marked_rows(findings).items():
        # The cell is narrow: the gravest kind in words, then how many more (! lists them).
        kinds = sorted(kinds, key=lambda k: rank.get(k, 99))
        more = f"+{len(kinds) - 1}" if len(kinds) > 1 else ""
        out[(view_key(profile, pool), rid)] = f"{FLAG} {NOTE_WORDS.get(kinds[0], kinds[0])}{more}"
    return out
