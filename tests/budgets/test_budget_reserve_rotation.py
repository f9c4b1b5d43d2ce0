"""The reserve rule after a failure (#29): a reserve key is picked only when no other key may
serve the request, in a rotation within a request too (the agent's rules choose the next key
there, not the proxy's pick). Through a running proxy with the real ``openai`` SDK: the first
key fails by its own fault, and the request is rotated to the other ordinary key, not to the
reserve key listed before it. Negative control: the reserve rule taken out of the rotation's
filter, the reserve key serves while an ordinary key was usable."""

from __future__ import annotations

import openai
import pytest

from store.proxy.routing import chain as chain_mod
from tests.budgets.conftest import MSG, budgets
from tests.proxy.upstream import OK_BODY, ScriptedUpstream, http
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy

pytestmark = pytest.mark.slow

PAYMENT = http(402, {}, {"error": {"message": "insufficient credits on this key", "code": 402}})


def served_after_a_failure(home, keys: int = 3) -> tuple[str, list[int]]:
    """or0edg is the reserve; or1edg answers 402 (the key's fault); which key serves the
    request in the end, and how many requests each key saw."""
    with ScriptedUpstream() as up:
        up.script(None, http(200, {}, OK_BODY))
        up.script(EDGE_KEYS[1], PAYMENT)
        edge_seed(home, up.url, keys=keys, fallback=False)
        budgets(home, "openrouter:\n  reserve: [or0edg]")
        with running_chain_proxy(home) as p:
            c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
            raw = c.chat.completions.with_raw_response.create(**MSG)
            return raw.headers["X-Hermes-Credential"], [up.hits(k) for k in EDGE_KEYS[:keys]]


def test_a_rotation_skips_the_reserve_while_another_key_serves(tmp_home):
    row, hits = served_after_a_failure(tmp_home)
    assert row == "or2edg"
    assert hits == [0, 1, 1]            # the reserve key was never sent to


def test_a_rotation_takes_the_reserve_when_no_other_key_is_left(tmp_home):
    """Two keys: the ordinary one fails, the reserve is all that is left: it serves."""
    row, hits = served_after_a_failure(tmp_home, keys=2)
    assert row == "or0edg" and hits == [1, 1]


def test_control_without_the_rule_in_the_rotation_the_reserve_serves_first(tmp_home, monkeypatch):
    monkeypatch.setattr(chain_mod.Chain, "serves_other", lambda self, pool, row_id, tried, scope: False)
    row, hits = served_after_a_failure(tmp_home)
    assert row == "or0edg" and hits == [1, 1, 0]
