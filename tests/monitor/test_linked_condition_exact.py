"""store.monitor.conditions: a symlinked auth.json is one condition, word for word (every write
through the link is refused, so the operator must hear of it), and only for the profiles its
rule covers. Written from the mutation run of conditions.py (make mutate-guards)."""

from __future__ import annotations

from pathlib import Path

from store.errors import LinkedStore
from store.monitor import rules as R
from store.monitor.conditions import evaluate
from store.monitor.sample import ProfileSample, Sample
from tests.monitor.samples import HOME, NOW

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
