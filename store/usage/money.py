"""The one way a cost is shown (#29): a sub-cent cost never renders as ``$0.00``. Apart
from :mod:`store.usage.cost` so that showing a cost does not load the price table."""

from __future__ import annotations

import math
from importlib import metadata

from store.usage.record import ESTIMATED, INCLUDED

SETTINGS_VERSION = "settings"     # an estimate from the operator's own prices


def prices_version() -> str:
    """The installed genai-prices version (pinned in pyproject.toml)."""
    try:
        return metadata.version("genai-prices")
    except metadata.PackageNotFoundError:
        return "absent"


def money(usd: float | None, status: str = ESTIMATED, version: str | None = None) -> str:
    """A cost as the operator reads it: ``$1.23``; below a cent 4 significant digits
    (``$0.0004235``), never ``$0.00``; ``incl.`` for a subscription, ``—`` when unknown;
    an estimate says so (``~$0.12 est. genai-prices 0.2.3``) when *version* is given."""
    if status == INCLUDED:
        return "incl."
    if usd is None or not math.isfinite(usd):
        return "—"
    if usd == 0:
        text = "$0"
    elif abs(usd) >= 0.01:
        text = f"${usd:,.2f}"
    elif abs(usd) < 1e-9:
        text = "<$0.000000001"
    else:
        decimals = 3 - math.floor(math.log10(abs(usd)))
        text = f"${usd:.{decimals}f}"
    if status == ESTIMATED:
        text = "~" + text
        if version:
            text += f" est. {'your prices' if version == SETTINGS_VERSION else 'genai-prices ' + version}"
    return text
