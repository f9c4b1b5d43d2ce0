"""The files shipped beside the code say what the code does: the Grafana dashboard asks only for
metrics the monitor exports, docs/metrics.md lists every one, and the unit runs the monitor."""

from __future__ import annotations

import json
import re
from pathlib import Path

from store.monitor.metrics import CRED_FAMILIES, OTHER_FAMILIES

ROOT = Path(__file__).resolve().parents[2]
NAMES = {f.name + ("_total" if f.kind == "counter" else "") for f in CRED_FAMILIES + OTHER_FAMILIES}


def _exprs(node: object) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "expr" and isinstance(v, str)] + \
            [e for v in node.values() for e in _exprs(v)]
    if isinstance(node, list):
        return [e for v in node for e in _exprs(v)]
    return []


def test_the_dashboard_queries_only_exported_metrics() -> None:
    dash = json.loads((ROOT / "contrib" / "grafana-hermes-admin.json").read_text())
    used = {m for e in _exprs(dash) for m in re.findall(r"hermes_admin_[a-z_]+", e)}
    assert used and used <= NAMES, sorted(used - NAMES)
    assert dash["__inputs"][0]["pluginId"] == "prometheus"
    # Negative control: a misspelt name is seen.
    assert not {"hermes_admin_pool_usable"} <= NAMES


def test_docs_list_every_metric() -> None:
    text = (ROOT / "docs" / "metrics.md").read_text()
    listed = set(re.findall(r"`(hermes_admin_[a-z_]+)`", text))
    assert listed >= NAMES, sorted(NAMES - listed)
    assert listed <= NAMES, sorted(listed - NAMES)


def test_the_unit_runs_the_monitor_and_does_not_loop_on_bad_input() -> None:
    unit = (ROOT / "contrib" / "hermes-admin-monitor@.service").read_text()
    assert re.search(r"^ExecStart=\S*hermes-admin monitor --home ", unit, re.M)
    assert "RestartPreventExitStatus=2 3" in unit and "EnvironmentFile=" in unit
