"""At 80 columns the code/reason column takes the cells the label and key columns do not need
(the label column is as wide as the longest label, at least its title), so Hermes's own
reasons are cut as little as the width allows, and every pool id of the provider registry
shows whole in its pool's header. (tests/console/test_table_layout.py checks 200 columns.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from store.config.providers import KNOWN_PROVIDERS
from store.paths import Home
from store.profiles.root import Root
from tests.conftest import make_row, make_store, write_store
from tests.profiles_sample import home, root_app, table
from tests.tui_sample import NOW, app_for, key, table_of
from tui.widgets import table_columns as TC

pytestmark = pytest.mark.usefixtures("utc")

SIZE = (80, 24)
LABELS = 10    # an operator's labels: key-ant-01


def bench(rid: str, label: str, reason: str, code: int = 429) -> dict:
    return make_row(rid, label=label, token=f"sk-or-v1-{rid:0>32}", last_status="exhausted",
                    last_status_at=NOW - 10, last_error_code=code, last_error_reason=reason,
                    last_error_reset_at=NOW + 600)


def widths(table) -> dict[str, int]:
    return {c.value: c.width for c in table.column_layout.columns}


@pytest.mark.parametrize("label_len", [LABELS, 3])
async def test_code_reason_takes_the_cells_labels_do_not_need(tmp_home: Home, label_len: int) -> None:
    rows = [bench(f"r{i:03d}", f"k{i:0{label_len - 1}d}", r) for i, r in enumerate(TC.HERMES_REASONS)]
    write_store(tmp_home, make_store({"openrouter": rows}))
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = table_of(app)
        w = widths(table)
        assert list(w) == ["pos", "label", "status", "left", "error", "fingerprint"]
        assert w["label"] == max(label_len, len("label"))          # no cell no label needs
        assert w["fingerprint"] == len("sk-or-…0000")
        room = w["error"]
        assert room == 79 - 2 * len(w) - sum(v for k, v in w.items() if k != "error")
        cells = {r["last_error_reason"]: table.cell_text(key("openrouter", r["id"]), "error") for r in rows}
        fits = [r for r in TC.HERMES_REASONS if len(f"429 {r}") <= room]
        assert {r: cells[r] for r in fits} == {r: f"429 {r}" for r in fits}
        # What the operator saw cut at 80 columns with 10-cell labels, now whole.
        assert {"insufficient_quota", "token_expired", "billing_not_active"} <= set(fits)
        if label_len < LABELS:
            assert "rate_limit_exceeded" in fits and "refresh_token_reused" in fits


async def test_every_registry_pool_id_is_whole_in_its_header(tmp_home: Home) -> None:
    pools = {p: [bench(f"{i:06d}", f"key-{i:06d}", "rate_limit_exceeded")]
             for i, p in enumerate(sorted(KNOWN_PROVIDERS))}
    write_store(tmp_home, make_store(pools))
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = table_of(app)
        names = {p: [t for t in table.row_texts(f"pool\x1f{p}") if t.strip()][1] for p in pools}
        assert names == {p: p for p in pools}


async def test_every_registry_pool_id_is_whole_under_a_profile(tmp_path: Path) -> None:
    """On a root of profiles a pool's header names it profile/pool (``default/openai-codex``)."""
    root = Root(tmp_path / "hermes")
    pools = {p: [bench(f"{i:06d}", f"key-{i:06d}", "rate_limit_exceeded")]
             for i, p in enumerate(sorted(KNOWN_PROVIDERS))}
    write_store(home(root, "default"), make_store(pools))
    write_store(home(root, "team-a"), make_store({"openrouter": [bench("a1a1a1", "key-a1a1a1", "auth")]}))
    app = root_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        t = table(app)
        names = {p: [x for x in t.row_texts(f"pool\x1fdefault/{p}") if x.strip()][1] for p in pools}
        assert names == {p: f"default/{p}" for p in pools}
