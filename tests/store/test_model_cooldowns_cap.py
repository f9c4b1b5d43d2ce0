"""``model_cooldowns`` keeps at most a fixed number of models per row (issue 27): past the
cap the benches that have ended go first (the oldest seen first), then the oldest seen;
the model just benched always stays. Hypothesis: any history of benches."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from store.pools import model_cooldowns
from store.pools.model_cooldowns import MAX_MODELS, bench_model

NOW = 1_800_000_000.0


def _row(n: int, *, ended: set[int] = frozenset()) -> dict:
    return {"id": "r1", "access_token": "sk-or-v1-captest-" + "0" * 30,
            "model_cooldowns": {f"m{i}": NOW - 5 if i in ended else NOW + 100 + i for i in range(n)},
            "model_cooldown_observed_at": {f"m{i}": NOW - 1000 + i for i in range(n)}}


def test_the_ended_benches_go_first_then_the_oldest_seen() -> None:
    row = _row(MAX_MODELS, ended={7, 20})
    bench_model([row], row, "new-1", NOW, NOW + 60)
    assert "m7" not in row["model_cooldowns"] and "m20" in row["model_cooldowns"]   # oldest ended first
    bench_model([row], row, "new-2", NOW, NOW + 60)
    assert "m20" not in row["model_cooldowns"]
    bench_model([row], row, "new-3", NOW, NOW + 60)
    assert "m0" not in row["model_cooldowns"] and "m1" in row["model_cooldowns"]   # then the oldest seen
    assert len(row["model_cooldowns"]) == MAX_MODELS
    assert set(row["model_cooldowns"]) == set(row["model_cooldown_observed_at"])


@given(st.lists(st.tuples(st.text(min_size=1, max_size=8), st.floats(-100, 100)), max_size=120))
def test_any_history_keeps_the_row_within_the_cap(history) -> None:
    row = _row(0)
    for model, end in history:
        bench_model([row], row, model, NOW, NOW + end)
        assert model in row["model_cooldowns"]
        assert len(row["model_cooldowns"]) <= MAX_MODELS
        assert set(row["model_cooldowns"]) == set(row["model_cooldown_observed_at"])


def test_control_without_the_cap_the_row_grows(monkeypatch) -> None:
    monkeypatch.setattr(model_cooldowns, "capped", lambda *a, **k: None)
    row = _row(MAX_MODELS)
    bench_model([row], row, "one-more", NOW, NOW + 60)
    assert len(row["model_cooldowns"]) == MAX_MODELS + 1
