"""Whose fault it is, checked against the real Hermes 0.19.0 (spec section 9).

Every row of the outcome table (tests/proxy/outcome_table.py) goes, as the OpenAI SDK
would raise it, through Hermes's own ``classify_api_error`` and
``recover_with_credential_pool`` in a partner process, on a fresh two-key pool. hermes-admin
benches the key exactly when Hermes rotates it, except on the rows that name why we
deliberately differ; on those the difference itself is asserted, so a Hermes that comes
round to our reading (or one that drifts further) is noticed.
"""

from __future__ import annotations

import pytest

from store.agent.outcomes import KEY, classify
from tests.conftest import make_row, make_store, write_store
from tests.hermes_real import HermesPartner, judge
from tests.proxy.outcome_table import TABLE, Case

pytestmark = pytest.mark.hermes

KEYS = ("sk-or-v1-judgeAAAAAAAAAAAAAAAAAAAAAA0001", "sk-or-v1-judgeBBBBBBBBBBBBBBBBBBBBBB0002")


@pytest.fixture(scope="module")
def partner(tmp_path_factory, hermes_path):
    home = tmp_path_factory.mktemp("judge") / "hermes-home"
    home.mkdir(mode=0o700)
    with HermesPartner(home, hermes_path) as p:
        yield p


def _fresh_pool(partner: HermesPartner) -> None:
    from store.paths import Home

    write_store(Home(partner.home), make_store({"openrouter": [
        make_row("aaaaaa", label="alpha", priority=0, token=KEYS[0]),
        make_row("bbbbbb", label="bravo", priority=1, token=KEYS[1])]}))


@pytest.mark.parametrize("case", TABLE, ids=[c.name for c in TABLE])
def test_we_bench_exactly_when_hermes_rotates(partner: HermesPartner, case: Case) -> None:
    _fresh_pool(partner)
    hermes = judge(partner, "openrouter", **case.for_hermes())
    rotated = bool(hermes["benched"])
    ours = classify(case.result(), "openrouter").fault == KEY
    assert ours == case.benches
    if case.why is None:
        assert rotated == ours, (f"{case.name}: Hermes says {hermes['reason']} and "
                                 f"{'rotates' if rotated else 'keeps'} the key; hermes-admin "
                                 f"{'benches' if ours else 'does not bench'} it")
    else:
        # A deliberate difference: the row names why (and the docs say it).
        assert rotated == case.hermes_rotates and rotated != ours, f"{case.name}: {hermes}"
    if rotated:
        assert hermes["benched"] == ["aaaaaa"], "Hermes benched the key it was using"


def test_control_the_judge_sees_a_rotation_and_a_keep(partner: HermesPartner) -> None:
    """The harness itself can tell the two apart (a 402 rotates, a 503 keeps the key)."""
    _fresh_pool(partner)
    assert judge(partner, "openrouter", status=402, body='{"error": {"message": "Insufficient credits"}}')["benched"]
    _fresh_pool(partner)
    kept = judge(partner, "openrouter", status=503, body='{"error": {"message": "unavailable"}}')
    assert kept["benched"] == [] and kept["reason"] == "overloaded"
