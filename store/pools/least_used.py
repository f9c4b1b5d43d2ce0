"""What ``least_used`` minimises: Hermes's request count, and hermes-admin's option to weigh
the headroom a key's provider reported first (``least_used_weighs_headroom`` in
hermes-admin.yaml, #21). Pure: the readings come in as a *weigh* function.
"""

from __future__ import annotations

from typing import Callable

from store.model import Row, as_int, priority_of

Weigh = Callable[[Row], float | None]   # a row's share of its quota left (None: unknown)


def least_used_key(weigh: Weigh | None = None) -> Callable[[Row], tuple]:
    """What ``least_used`` minimises: the request count, ties by priority (Hermes). With
    *weigh* (hermes-admin's option) the share of quota left comes first, to the percent:
    the most headroom, then the least used; a row no reading speaks for counts as full."""
    if weigh is None:
        return lambda r: (as_int(r.get("request_count")), priority_of(r))

    def key(r: Row) -> tuple:
        left = weigh(r)
        share = 100 if left is None else round(max(0.0, min(1.0, left)) * 100)
        return (-share, as_int(r.get("request_count")), priority_of(r))
    return key
