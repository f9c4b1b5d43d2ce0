"""The home the selection benchmarks share (``bench_budgets.py``, ``bench_select.py``): one
``openrouter`` pool of N API keys under a strategy, and the proxy's chain loaded on it.

Imported after the benchmark has put the tree it measures on ``sys.path`` (``bench_select.py
--tree`` measures another tree's ``store``), so the chain is that tree's.
"""

from __future__ import annotations

from pathlib import Path

from store.paths import Home
from store.proxy.routing.chain import Chain
from tests.conftest import make_row, make_store, write_store


def chain_of(root: Path, rows: int, strategy: str) -> Chain:
    """The chain of a home at *root* whose ``openrouter`` pool holds *rows* keys (``or0000``,
    ``or0001``..., priority in that order; an unreachable base URL: nothing is sent)."""
    home = Home(root)
    write_store(home, make_store({"openrouter": [
        make_row(f"or{i:04d}", token=f"sk-or-v1-bench-{i:032d}", priority=i, base_url="http://127.0.0.1:9/api/v1")
        for i in range(rows)]}))
    home.config.write_text("model:\n  provider: openrouter\n  default: m\n"
                           f"credential_pool_strategies:\n  openrouter: {strategy}\n")
    chain = Chain(home, "openrouter", env={})
    chain.load()
    return chain
