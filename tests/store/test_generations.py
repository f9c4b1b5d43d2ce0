"""Cooldown rules by Hermes generation: one table per rule, the countdown each generation
gives beside the older generation's value, exact to the second.

Generations (store/pools/generations.py): ``0.19`` (the PyPI release), ``newer`` (the
spec's: 60 s only-row cap, tombstones, model benches), ``admin`` (the admin-module era:
#119163's cap, the 2-day entitlement bench, clear_billing_benches's stamp,
has_available(any_model=True), a changed secret_fingerprint is a new credential), and
*not told*, where the older and safer rule holds. The "next" marker, the countdown, the
proxy's usable rows and the detail's rule sentence follow the same table.

Negative controls: every table has rows where the generations must differ; a rule wired to
the wrong generation (or to none) fails them.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.config import hermes_code
from store.config.read import read_config
from store.config.sections import read_ttls
from store.paths import Home
from store.pools import generations, policy, rule_words, view
from store.proxy.routing import picks
from store.redaction.secret_ids import hash_secret
from tests.conftest import make_row

NOW = 1_800_000_000.0
AT = NOW - 10.0                      # when every bench below was stamped
UNTOLD = policy.DEFAULT_TTLS
TTLS = {g: dataclasses.replace(policy.DEFAULT_TTLS, told=generations.Told(g, "test"))
        for g in generations.GENERATIONS}
TTLS["untold"] = UNTOLD
ORDER = ("untold", "0.19", "newer", "admin")


def _row(rid: str, priority: int = 0, **fields: object) -> dict:
    return make_row(rid, priority=priority, token=f"sk-or-v1-{rid}" + "0" * 24, **fields)


def _countdowns(rows: list[dict], target: int = 0) -> dict[str, float | None]:
    """until - AT for rows[target] under each generation (None: usable now)."""
    out: dict[str, float | None] = {}
    for g in ORDER:
        t = policy.until(rows[target], rows, NOW, TTLS[g])
        out[g] = None if t is None else t - AT
    return out


# --- the table: rule -> rows -> countdown per generation (untold, 0.19, newer, admin) ------------

BENCH = {"last_status": "exhausted", "last_status_at": AT}
TABLE = {
    # The only-row cap: 0.19 benches a sole key for the full TTL.
    "only-row 429, no reset time": (
        [_row("a", **BENCH, last_error_code=429)],
        {"untold": 60, "0.19": 3600, "newer": 60, "admin": 60}),
    # #119163: a sole non-billing row's provider reset is capped at last_status_at + TTL.
    "#119163 sole row, reset in 3 h": (
        [_row("a", **BENCH, last_error_code=429, last_error_reset_at=AT + 10800)],
        {"untold": 10800, "0.19": 10800, "newer": 10800, "admin": 60}),
    "#119163 not for billing (402)": (
        [_row("a", **BENCH, last_error_code=402, last_error_reset_at=AT + 10800)],
        {"untold": 10800, "0.19": 10800, "newer": 10800, "admin": 10800}),
    "#119163 not with a second live row": (
        [_row("a", **BENCH, last_error_code=429, last_error_reset_at=AT + 10800), _row("b", 1)],
        {"untold": 10800, "0.19": 10800, "newer": 10800, "admin": 10800}),
    "#119163 a reset sooner than the cap stands": (
        [_row("a", **BENCH, last_error_code=429, last_error_reset_at=AT + 30)],
        {"untold": 30, "0.19": 30, "newer": 30, "admin": 30}),
    # The entitlement bench lasts 2 days.
    "entitlement 403": (
        [_row("a", **BENCH, last_error_code=403, failure_reason="entitlement"), _row("b", 1)],
        {"untold": 3600, "0.19": 3600, "newer": 3600, "admin": 172800}),
    "entitlement 401": (
        [_row("a", **BENCH, last_error_code=401, failure_reason="entitlement"), _row("b", 1)],
        {"untold": 300, "0.19": 300, "newer": 300, "admin": 172800}),
    # clear_billing_benches stamps status_cleared_at: a billing bench older than it is lifted.
    "billing bench, stamp after it": (
        [_row("a", **BENCH, last_error_code=402, failure_reason="billing", status_cleared_at=AT + 5),
         _row("b", 1)],
        {"untold": 3600, "0.19": 3600, "newer": 3600, "admin": None}),
    "billing bench, stamp before it": (
        [_row("a", **BENCH, last_error_code=402, failure_reason="billing", status_cleared_at=AT - 5),
         _row("b", 1)],
        {"untold": 3600, "0.19": 3600, "newer": 3600, "admin": 3600}),
    "rate-limit bench, stamp after it (not billing)": (
        [_row("a", **BENCH, last_error_code=429, status_cleared_at=AT + 5), _row("b", 1)],
        {"untold": 3600, "0.19": 3600, "newer": 3600, "admin": 3600}),
}


@pytest.mark.parametrize("case", list(TABLE), ids=list(TABLE))
def test_countdown_by_generation(case: str) -> None:
    rows, expected = TABLE[case]
    assert _countdowns(rows) == {g: (None if v is None else float(v)) for g, v in expected.items()}


def test_where_it_cannot_be_told_no_bench_is_shortened_on_a_guess() -> None:
    """The older and safer rule holds untold: never a shorter bench than the admin era's
    (the entitlement bench, which the admin era lengthens, keeps the running Hermes's TTL)."""
    for case, (_rows, expected) in TABLE.items():
        if "entitlement" in case:
            continue
        untold, told = expected["untold"], expected["admin"]
        assert told is None or (untold is not None and untold >= told), case


# --- has_available(any_model=True) ignores per-model benches (admin era) ----------------------

def test_has_available_by_generation() -> None:
    rows = [_row("a", model_cooldowns={"gpt-x": NOW + 600}, model_cooldown_observed_at={"gpt-x": NOW - 5})]
    got = {g: policy.has_available(rows, NOW, TTLS[g]) for g in ORDER}
    assert got == {"untold": False, "0.19": False, "newer": False, "admin": True}
    # A row with no model bench is available in every generation (the control).
    assert all(policy.has_available([_row("b")], NOW, TTLS[g]) for g in ORDER)


# --- a changed secret_fingerprint on a secret-less row is a new credential (admin era) ---------

def _borrowed_pool() -> tuple[list[dict], dict[str, str]]:
    old, new = "sk-or-v1-" + "1" * 32, "sk-or-v1-" + "2" * 32
    a = make_row("a", source="env:OPENROUTER_API_KEY", secret_fingerprint=hash_secret(old),
                 **BENCH, last_error_code=429)
    b = _row("b", 1, **BENCH, last_error_code=429)
    return [a, b], {"OPENROUTER_API_KEY": new}


def test_renewed_secret_by_generation_countdown_and_next() -> None:
    rows, env = _borrowed_pool()
    got = {}
    for g in ORDER:
        pv = view.build_pool("openrouter", rows, strategy="fill_first", now=NOW, ttls=TTLS[g], env=env)
        a = pv.credentials[0]
        got[g] = (a.effective.status, a.effective.seconds_left, a.next)
    assert got == {"untold": ("cooling", 3590.0, False), "0.19": ("cooling", 3590.0, False),
                   "newer": ("cooling", 3590.0, False), "admin": ("ok", None, True)}
    pv = view.build_pool("openrouter", rows, strategy="fill_first", now=NOW, ttls=TTLS["admin"], env=env)
    assert pv.credentials[0].rule == view.RENEWED


def test_an_unchanged_secret_keeps_its_bench_in_every_generation() -> None:
    rows, _ = _borrowed_pool()
    env = {"OPENROUTER_API_KEY": "sk-or-v1-" + "1" * 32}       # the fingerprinted one: same key
    for g in ORDER:
        pv = view.build_pool("openrouter", rows, strategy="fill_first", now=NOW, ttls=TTLS[g], env=env)
        assert pv.credentials[0].effective.status == "cooling"
    assert not generations.renewed(rows[0], None)          # no live value: cannot be told


# --- the "next" marker and the proxy's usable rows follow the table ------------------------------

def test_next_marker_and_proxy_selection_follow_the_generation() -> None:
    for g, usable in (("untold", False), ("newer", False), ("admin", True)):
        rows = [_row("a", **BENCH, last_error_code=429, last_error_reset_at=AT + 10800)]
        now = AT + 61                                   # past the admin-era cap, before the reset
        pv = view.build_pool("openrouter", rows, strategy="fill_first", now=now, ttls=TTLS[g])
        assert pv.credentials[0].next is usable, g
        got = picks.usable_rows(rows, "fill_first", now, TTLS[g], {}, 1)
        assert [r["id"] for r in got.rows] == (["a"] if usable else []), g


# --- the detail says which rule gave the countdown --------------------------------------------

def test_detail_rule_names_the_rule_and_the_generation() -> None:
    rows = TABLE["#119163 sole row, reset in 3 h"][0]
    admin = rule_words.explain(rows[0], rows, TTLS["admin"])
    untold = rule_words.explain(rows[0], rows, UNTOLD)
    assert "capped at last_status_at + 60 s" in admin and "#119163" in admin and "Hermes admin" in admin
    assert "would cap it" in untold and "not applied" in untold and "not told" in untold
    rows = TABLE["only-row 429, no reset time"][0]
    assert "only-row cap, 60 s" in rule_words.explain(rows[0], rows, UNTOLD)
    assert "0.19 has no only-row cap" in rule_words.explain(rows[0], rows, TTLS["0.19"])
    rows = TABLE["entitlement 403"][0]
    assert "entitlement bench, 172800 s" in rule_words.explain(rows[0], rows, TTLS["admin"])
    assert rule_words.explain(_row("z"), [_row("z")], UNTOLD) is None
    pv = view.build_pool("openrouter", TABLE["entitlement 403"][0], strategy="fill_first", now=NOW,
                         ttls=TTLS["admin"])
    assert pv.credentials[0].rule and "entitlement" in pv.credentials[0].rule


# --- telling the generation ---------------------------------------------------------------------

def _checkout(root: Path, code: str, admin: str | None = None) -> None:
    d = root / "hermes-agent" / "agent"
    d.mkdir(parents=True)
    (d / "credential_pool.py").write_text(code)
    if admin is not None:
        (d / "credential_pool_admin.py").write_text(admin)


@pytest.mark.parametrize("code, admin, expected", [
    ("def _exhausted_until(entry): ...", None, "0.19"),
    ("entry.status_cleared_at = now\nmodel_cooldowns = {}", None, "newer"),
    ("model_cooldowns = {}", "def clear_billing_benches(pool): ...", "admin"),
    ("def has_available(self, any_model=False): ...", None, "admin"),
])
def test_the_home_checkout_tells_the_generation(tmp_home: Home, code: str, admin: str | None,
                                                 expected: str) -> None:
    _checkout(tmp_home.root, code, admin)
    (tmp_home.config).write_text("model: {provider: openrouter}\n")
    told = read_config(tmp_home).ttls.told
    assert told.generation == expected and str(tmp_home.root / "hermes-agent") in told.how


def test_a_profile_is_told_by_the_root_checkout(tmp_path: Path) -> None:
    root = tmp_path / "root"
    profile = Home(root / "profiles" / "work")
    profile.root.mkdir(parents=True)
    _checkout(root, "clear_billing_benches")
    assert hermes_code.detect(profile.root).generation == "admin"


def test_config_tells_it_first_and_a_bad_name_is_a_warning(tmp_home: Home) -> None:
    _checkout(tmp_home.root, "def _exhausted_until(entry): ...")
    tmp_home.config.write_text("hermes_admin:\n  hermes_generation: admin\n")
    cfg = read_config(tmp_home)
    assert cfg.ttls.told.generation == "admin" and "hermes_generation" in cfg.ttls.told.how
    tmp_home.config.write_text("hermes_admin:\n  hermes_generation: tomorrow\n")
    cfg = read_config(tmp_home)
    assert cfg.ttls.told.generation == "0.19"      # the checkout tells it instead
    assert any("hermes_generation" in w and "tomorrow" in w and "admin" in w for w in cfg.warnings)


def test_nothing_to_tell_it_by_leaves_it_untold(tmp_home: Home) -> None:
    tmp_home.config.write_text("model: {provider: openrouter}\n")
    assert read_config(tmp_home).ttls.told is generations.UNTOLD
    os.mkfifo(tmp_home.root / "hermes-agent-fifo")   # nothing but the checkout's name counts
    assert hermes_code.detect(tmp_home.root) is generations.UNTOLD


@given(st.one_of(st.text(max_size=40), st.integers(), st.floats(), st.booleans(), st.none(),
                 st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2)))
def test_a_hostile_generation_value_is_a_warning_never_a_crash(value: object) -> None:
    """Whatever sits at hermes_admin.hermes_generation: a known name, or a warning naming the key."""
    w: list[str] = []
    ttls = read_ttls({"hermes_generation": value}, w)
    if ttls.told is generations.UNTOLD:
        assert value is None or any("hermes_admin.hermes_generation" in x for x in w)
    else:
        assert ttls.told.generation in generations.GENERATIONS and not w


def test_the_proxys_usable_rows_follow_the_renewed_secret_rule_by_generation() -> None:
    """The proxy judges a row as the console does (store.pools.view.judge): a secret-less
    row whose .env key changed is usable at once in the admin era, and keeps its bench in
    every other generation; the unchanged key keeps its bench everywhere."""
    rows, env = _borrowed_pool()
    for g in ORDER:
        usable = picks.usable_rows([dict(r) for r in rows], "fill_first", NOW, TTLS[g], env, 1)
        assert [r["id"] for r in usable.rows] == (["a"] if g == "admin" else []), g
    same = {"OPENROUTER_API_KEY": "sk-or-v1-" + "1" * 32}
    assert picks.usable_rows([dict(r) for r in rows], "fill_first", NOW, TTLS["admin"], same, 1).rows == []
