"""The budget side of ``store.proxy.routing.eligibility`` (#29), value by value.

``test_eligibility_exact.py`` pins each filter; ``tests/budgets`` checks budgets through a
Chain. These pin what neither reads exactly: the tally seeded from the usage ledger at the
proxy's start (only when a pool has a budget, on the gate's clock, its notice logged once in
the proxy's log), the env a budget's window cap and the reserve rule read a borrowed key's
secret with, "why no key" wording several budgets and a budget beside another refusal, and
a budget-only hold that never asks the headroom gate. Negative controls: the last tests
make such slips (``tests/mutant.py``) and see these checks fail.
"""

from __future__ import annotations

import calendar
import logging
import sqlite3
from types import SimpleNamespace

from store.config.budgets import Limits, PoolBudget
from store.config.settings import DEFAULTS as settings_defaults
from store.dialects.readings import Reading
from store.pools import policy
from store.pools.view import row_fingerprint
from store.proxy.routing import eligibility as el
from store.proxy.routing.eligibility import Ask, Eligibility, Refusal, why
from store.proxy.routing.upstreams import Breakers
from store.usage.record import ACTUAL, LEDGER_FILE, REQUESTS_TABLE
from store.usage.tally import DAY, MONTH
from tests.conftest import make_row
from tests.mutant import mutant

NOON = calendar.timegm((2026, 12, 3, 12, 0, 0))
POOL = "openrouter"
BORROWED = "sk-or-v1-eligbudget-borrowed" + "5" * 20


class Room:
    """Readings by (pool, row id, fingerprint), as the headroom gate's room keeps them."""

    def __init__(self, at: dict | None = None) -> None:
        self.at = at or {}

    def readings(self, pool, rid, fp):
        return list(self.at.get((pool, rid, fp), ()))


class Gate:
    """What eligibility and its budgets ask a headroom gate, recorded (no holds by default)."""

    settings = settings_defaults

    def __init__(self, room: Room | None = None, holds: set[str] | None = None) -> None:
        self.clock = lambda: NOON
        self.room = room or Room()
        self.holds = holds
        self.calls: list[tuple] = []

    def exhausted_until(self, pool, row, now, env):
        return None

    def holding(self, pool):
        return self.holds is not None

    def held(self, pool, rows, now, env):
        self.calls.append(("held", pool, [r["id"] for r in rows]))
        return set(self.holds or ())


def _row(rid: str, **fields: object) -> dict:
    return make_row(rid, token=f"sk-or-v1-eligbudget-{rid}" + "0" * 24, **fields)


def _el(gate: Gate | None = None, env: dict | None = None, module=el, **budget: object) -> Eligibility:
    e = module.Eligibility(Breakers(), gate or Gate(), env or {}, lambda: policy.DEFAULT_TTLS)
    if budget:
        e.budgets.budgets = {POOL: PoolBudget(**budget)}
    return e


def _ledger(root, *costs: tuple[float, str, float]) -> None:
    conn = sqlite3.connect(root / LEDGER_FILE)
    conn.execute(REQUESTS_TABLE)
    conn.executemany("INSERT INTO requests (at, pool, row_id, fingerprint, cost_usd, cost_status) "
                     "VALUES (?, ?, ?, ?, ?, ?)", [(at, POOL, rid, "fp", usd, ACTUAL) for at, rid, usd in costs])
    conn.commit()
    conn.close()


# --- seed: the tally from the usage ledger, only with a budget --------------------------------------

def test_seed_starts_the_tally_from_the_ledger_on_the_gates_clock(tmp_path, caplog):
    _ledger(tmp_path, (NOON - 60, "a", 0.75), (NOON - 86400, "a", 2.0))     # today, and yesterday
    e = _el(key=Limits(day=1.0))
    with caplog.at_level(logging.DEBUG):
        assert e.seed(SimpleNamespace(root=tmp_path)) is None
    assert e.budgets.tally.key(POOL, "a", DAY, NOON) == 0.75
    assert e.budgets.tally.key(POOL, "a", MONTH, NOON) == 2.75
    assert caplog.records == []                                             # nothing to say


def test_seed_without_a_budget_reads_nothing(tmp_path):
    _ledger(tmp_path, (NOON - 60, "a", 0.75))
    e = _el()
    assert e.seed(SimpleNamespace(root=tmp_path)) is None
    assert e.budgets.tally.key(POOL, "a", DAY, NOON) == 0.0


def test_seed_of_an_unreadable_ledger_is_one_notice_in_the_proxys_log(tmp_path, caplog):
    (tmp_path / LEDGER_FILE).write_bytes(b"not a database at all" * 100)
    e = _el(key=Limits(day=1.0))
    with caplog.at_level(logging.DEBUG):
        notice = e.seed(SimpleNamespace(root=tmp_path))
    assert notice is not None and "could not be read" in notice
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("hermes_admin.proxy", logging.WARNING, f"budgets: {notice}")]
    assert e.budgets.tally.key(POOL, "a", DAY, NOON) == 0.0


# --- a borrowed key's secret: read with the proxy's env ------------------------------------------------

def test_a_window_cap_reads_a_borrowed_keys_windows_by_its_env_fingerprint():
    env = {"ELIG_BUDGET_KEY": BORROWED}
    row = make_row("e", source="env:ELIG_BUDGET_KEY")
    fp = row_fingerprint(POOL, row, env)
    assert fp is not None and fp != row_fingerprint(POOL, row, None)
    full = Reading("5h", "anthropic-unified", NOON, utilization=0.9, reset_at=NOON + 3600)
    e = _el(gate=Gate(Room({(POOL, "e", fp): [full]})), env=env, cap={"5h": 0.8})
    got = e.check(Ask(POOL, [row], NOON), row)
    assert got == Refusal("budget", NOON + 3600, "over its cap: 5h window at 90%, cap 80%, resets 13:00 UTC")


def test_another_serves_counts_a_borrowed_key_the_env_gives_a_secret():
    r = _row("r")
    borrowed = make_row("c", source="env:ELIG_BUDGET_KEY")
    e = _el(env={"ELIG_BUDGET_KEY": BORROWED}, reserve=("r",))
    assert e.another_serves(Ask(POOL, [r, borrowed], NOON), "r") is True
    assert _el(reserve=("r",)).another_serves(Ask(POOL, [r, borrowed], NOON), "r") is False   # no env: no secret


# --- a budget-only hold does not ask the headroom gate -----------------------------------------------

def test_a_hold_with_a_budget_and_no_headroom_holds_never_asks_the_gate():
    r, a = _row("r"), _row("a")
    gate = Gate()                                   # holding nothing
    hold = _el(gate=gate, reserve=("r",)).hold(POOL, NOON, [r, a], 1)
    assert set(hold([r, a])) == {"r"}
    assert gate.calls == []
    held = Gate(holds={"a"})                        # holding: asked (test_eligibility_exact.py has what)
    assert "a" in _el(gate=held, reserve=("r",)).hold(POOL, NOON, [r, a], 1)([r, a])
    assert held.calls != []


# --- why no key: several budgets, and a budget beside another refusal -------------------------------

def test_why_joins_the_words_of_several_budgets():
    kind, parts = why([("r", [(None, Refusal("budget", 1.0, "over budget: $1.00 a day")),
                              (None, Refusal("budget", 2.0, "over its cap: 5h window at 90%")),
                              (None, Refusal("budget", 1.0, "over budget: $1.00 a day"))])])
    assert kind == "over_budget"
    assert parts == ["r: over budget: $1.00 a day; over its cap: 5h window at 90% (3 keys)"]


def test_why_words_each_filter_its_own_way_beside_a_budget():
    kind, parts = why([("r", [(None, Refusal("cooling", 5.0)),
                              (None, Refusal("budget", 1.0, "over budget: $2.00 a month"))])])
    assert kind == "no_usable_credential"
    assert parts == ["r: cooling (1 key), over budget: $2.00 a month (1 key)"]


# --- negative controls ----------------------------------------------------------------------------

def test_control_a_seed_that_skips_the_ledger_is_caught(tmp_path):
    """``seed`` reading the ledger only when no pool has a budget (its ``not`` dropped): the
    seed test above must see the day's cost missing."""
    broken = mutant("store.proxy.routing.eligibility", "if not self.budgets.budgets:\n            return None",
                    "if self.budgets.budgets:\n            return None")
    _ledger(tmp_path, (NOON - 60, "a", 0.75))
    e = _el(module=broken, key=Limits(day=1.0))
    assert e.seed(SimpleNamespace(root=tmp_path)) is None
    assert e.budgets.tally.key(POOL, "a", DAY, NOON) == 0.0              # the slip: today's spend forgotten


def test_control_budget_words_given_to_another_filter_are_caught():
    """``why`` using a budget's words for any filter once a budget spoke (``and`` made
    ``or``): the cooling row is worded as over budget."""
    broken = mutant("store.proxy.routing.eligibility", "if name_ == BUDGET and said else",
                    "if name_ == BUDGET or said else")
    parts = broken.why([("r", [(None, broken.Refusal("cooling", 5.0)),
                               (None, broken.Refusal("budget", 1.0, "over budget: $2.00 a month"))])])[1]
    assert parts == ["r: over budget: $2.00 a month (1 key), over budget: $2.00 a month (1 key)"]
