"""``V``: what a profile's config.yaml and cron store say beyond its pools.

Delegation overrides (sub-agents; the api_key only as a fingerprint), cron jobs that pin
their own provider or model, the gateway's multiplex settings and the auxiliary chains.
Read only; text is plain (never markup). Nulls render as ``—``.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from store.profiles.inventory import ProfileInventory
from tui.text.format import NULL
from tui.text.shown import shown_lines


def _v(value: Any) -> str:
    return NULL if value is None or value == "" else str(value)


def profile_config_lines(inv: ProfileInventory) -> list[str]:
    """Every section as text lines (the api_key is already a fingerprint in the inventory)."""
    d = inv.delegation
    out = [f"profile {inv.name}  ({inv.home.root})", "", "Delegation (sub-agents)"]
    if d.overrides:
        out += [f"  provider {_v(d.provider)} · model {_v(d.model)} · base_url {_v(d.base_url)}",
                f"  api_key {_v(d.api_key)} · api_mode {_v(d.api_mode)}"]
    else:
        out.append("  — (inherits the profile's primary)")
    out += ["", "Cron jobs overriding provider/model"]
    if inv.cron_error is not None:
        out.append(f"  ✖ {inv.cron_error.path}: {inv.cron_error.reason}")
    for j in inv.cron_jobs:
        state = "enabled" if j.enabled else "disabled"
        out.append(f"  {j.name or j.id} ({state}): provider {_v(j.provider)} · model {_v(j.model)}"
                   f" · base_url {_v(j.base_url)}")
    if not inv.cron_jobs and inv.cron_error is None:
        out.append("  —")
    g = inv.gateway
    out += ["", "Gateway multiplex",
            f"  multiplex_profiles {_v(g.multiplex_profiles)} · max_concurrent_sessions "
            f"{_v(g.max_concurrent_sessions)}"]
    for r in g.profile_routes:
        out.append("  route " + " · ".join(f"{k} {_v(v)}" for k, v in r.items()))
    out += ["", "Auxiliary chains"]
    for task, aux in sorted(inv.auxiliary.items()):
        chain = " → ".join(_v(e.get("provider")) for e in aux.get("fallback_chain") or [])
        out.append(f"  {task}: provider {_v(aux.get('provider'))} · model {_v(aux.get('model'))}"
                   + (f" → {chain}" if chain else ""))
    if not inv.auxiliary:
        out.append("  —")
    return out


class ProfileConfigScreen(ModalScreen[None]):
    """One profile's delegation, cron, gateway and auxiliary settings; Esc closes."""

    BINDINGS = [Binding("escape,q", "close", "Close", id="profile_config.close")]

    def __init__(self, inv: ProfileInventory) -> None:
        super().__init__(classes="modal")
        self.lines = profile_config_lines(inv)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="modal-box", id="profile-config-box"):
            yield Static(Text(shown_lines(self.text)))

    def action_close(self) -> None:
        self.dismiss(None)
