"""store.monitor.conditions, the gaps its mutation run showed (make mutate-guards): a symlinked
auth.json is one condition, word for word (every write through the link is refused, so the
operator must hear of it), and only for the profiles its rule covers; a Codex token's expiry
read from the token itself; low headroom in a pool after one its rule leaves out."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from store.agent.headroom import RowReadings
from store.dialects.readings import Reading
from store.errors import LinkedStore
from store.monitor import rules as R
from store.monitor.conditions import evaluate
from store.monitor.sample import ProfileSample, Sample
from store.pools.view import build_pools
from tests.conftest import make_row, make_store
from tests.monitor.samples import HOME, NOW
from tests.mutant import mutant

LINKED = LinkedStore(Path("/h/auth.json"), "is a symlink to /shared/auth.json; hermes-admin will not write",
                     "nothing was written")


def _sample(*, store_error: str | None = None) -> Sample:
    return Sample([ProfileSample("default", HOME, [], store_error, NOW, store_linked=LINKED)], [])


def test_a_linked_store_is_one_condition_word_for_word() -> None:
    (cond,) = evaluate(_sample(), R.defaults(), NOW).conditions.values()
    assert cond.to_json() == {
        "key": "store_unreadable/default/linked", "rule": "store_unreadable", "severity": "critical",
        "profile": "default", "pool": None, "id": None, "label": None, "fingerprint": None,
        "title": "default: auth.json is a symlink; every write is refused", "text": f"{LINKED}."}


def test_a_linked_and_unreadable_store_raises_both() -> None:
    got = evaluate(_sample(store_error="auth.json: not valid JSON"), R.defaults(), NOW).conditions
    assert sorted(got) == ["store_unreadable/default", "store_unreadable/default/linked"]


def test_the_rule_narrowed_elsewhere_or_off_raises_nothing() -> None:
    work = R.parse({"rules": {R.STORE_UNREADABLE: {"profiles": ["work"]}}})
    assert evaluate(_sample(), work, NOW).conditions == {}
    home = R.parse({"rules": {R.STORE_UNREADABLE: {"profiles": ["default"], "severity": "warning"}}})
    (cond,) = evaluate(_sample(), home, NOW).conditions.values()
    assert cond.severity == "warning"
    assert evaluate(_sample(), R.parse({"rules": {R.STORE_UNREADABLE: False}}), NOW).conditions == {}


def _jwt(claims: dict) -> str:
    part = [base64.urlsafe_b64encode(json.dumps(c).encode()).rstrip(b"=").decode() for c in ({"alg": "none"}, claims)]
    return f"{part[0]}.{part[1]}.c2lnbmF0dXJlLXNpZ25hdHVyZQ"


def test_a_codex_token_without_a_refresh_token_expires_when_its_jwt_says() -> None:
    rows = [make_row("c", token=_jwt({"exp": int(NOW + 3600)}), auth_type="oauth")]
    pools = build_pools(make_store({"openai-codex": rows}), now=NOW)
    got = evaluate(Sample([ProfileSample("default", HOME, pools, None, NOW)], []), R.defaults(), NOW)
    (cond,) = [c for c in got.conditions.values() if c.rule == R.OAUTH_EXPIRY]
    assert cond.key == "oauth_expiry/default/openai-codex/c"
    assert cond.text.endswith("expires in 1h (2027-01-15 09:00:00 UTC) and holds no refresh token to renew it.")


def test_low_headroom_is_seen_in_a_pool_after_one_the_rule_leaves_out() -> None:
    rows = {"aaa": [make_row("p", token="sk-or-v1-" + "p" * 48)], "zzz": [make_row("q", token="sk-or-v1-" + "q" * 48)]}
    pools = build_pools(make_store(rows), now=NOW)
    assert [pv.key for pv in pools] == ["aaa", "zzz"]
    low = Reading("requests", "openai", NOW, limit=100.0, remaining=4.0, reset_at=NOW + 90)
    headroom = {(pv.key, cv.id): RowReadings(cv.fingerprint, {"requests": low})
                for pv in pools for cv in pv.credentials}
    only_zzz = R.parse({"rules": {R.LOW_HEADROOM: {"pools": ["zzz"]}}})
    got = evaluate(Sample([ProfileSample("default", HOME, pools, None, NOW, headroom=headroom)], []), only_zzz, NOW)
    assert [k for k in got.conditions if k.startswith("low_headroom/")] == ["low_headroom/default/zzz/q"]


def test_control_the_linked_store_check_dropped_raises_nothing() -> None:
    bad = mutant("store.monitor.conditions", "if p.store_linked is not None and unreadable.applies(p.name):",
                 "if False:")
    assert bad.evaluate(_sample(), R.defaults(), NOW).conditions == {}
