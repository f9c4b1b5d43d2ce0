"""Every rule applied to a sample: :mod:`store.monitor.conditions`' rules, then ``burn_rate``
(:mod:`store.monitor.burn`, with the history of the windows' use) and ``budget``
(:mod:`store.monitor.budget`). Pure: the sample, the rules, the history and the clock in."""

from __future__ import annotations

from store.monitor import budget, burn
from store.monitor.burn import BurnHistory
from store.monitor.conditions import Evaluation
from store.monitor.conditions import evaluate as base_evaluate
from store.monitor.rules import Rules
from store.monitor.sample import Sample


def evaluate(sample: Sample, rules: Rules, now: float, history: BurnHistory | None = None) -> Evaluation:
    """Every condition of *sample* under *rules* at *now*, and when they can next change."""
    ev = base_evaluate(sample, rules, now)
    if history is not None:
        burn.add(ev, sample, rules, history, now)
    budget.add(ev, sample, rules, now)
    return ev
