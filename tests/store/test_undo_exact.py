"""Undo (``store.ops.undo``) in process, value by value.

``test_undo.py`` drives undo through the CLI in a subprocess, which no mutant of this module
reaches; ``test_undo_harm.py`` covers the refusals in process. These pin the rest exactly,
on records written by hand: which id ``resolve`` names for each form of *which* and its
bounds, the ids ``list_ids`` keeps, each refusal of ``plan`` and the later actions it
names, the words of ``describe``, and what ``store_change`` does to a fresh document (a
removed row back at its place with its source let go, an added row gone, each field put back
or kept, a rotated key kept, a priority moved back). Negative control: the last test
makes undo of a field ignore later writers and sees an agent's newer bench overwritten.
"""

from __future__ import annotations

import json

import pytest

from store.errors import BadInput, StoreUnreadable
from store.ops import history, undo
from store.ops.actions import NothingToChange
from store.ops.undo import Plan, store_change
from store.paths import Home
from tests.conftest import make_row, make_store
from tests.mutant import mutant

T = 1_700_000_000.0                # 2023-11-14T22:13:20Z
POOL = "openrouter"
KEY = "sk-or-v1-undoexact-" + "a" * 40
KEY2 = "sk-or-v1-undoexact-" + "b" * 40


def _id(n: int) -> str:
    """The n-th action, n seconds after T."""
    return f"20231114T2213{20 + n:02d}000000Z-{n:06x}"


def _record(home: Home, aid: str, meta: dict, before: dict | None = None) -> None:
    d = history.folder(home)
    d.mkdir(mode=0o700, exist_ok=True)
    kept = {}
    if before is not None:
        (d / f"auth.json.{aid}").write_text(json.dumps(before))
        kept["auth.json"] = f"auth.json.{aid}"
    (d / f"{aid}.json").write_text(json.dumps({"version": 1, "id": aid, "at": T, "kept": kept, **meta}))


def _rows_meta(*rows: tuple[str, str, dict | None]) -> dict:
    return {"rows": [{"pool": p, "id": i, "after": a} for p, i, a in rows], "actions": ["reset"]}


# --- list_ids, resolve ------------------------------------------------------------------------------

def test_list_ids_oldest_first_without_future_or_foreign_names(tmp_home):
    for n in (3, 1, 2):
        _record(tmp_home, _id(n), _rows_meta((POOL, "r0", {})))
    d = history.folder(tmp_home)
    (d / "notes.json").write_text("{}")
    (d / f"{_id(1)}.txt").write_text("")
    future = "20991114T221320000000Z-ffffff"
    (d / f"{future}.json").write_text("{}")
    assert undo.list_ids(tmp_home, T + 10) == [_id(1), _id(2), _id(3)]
    assert undo.list_ids(tmp_home, T - 300 + 2) == [_id(1), _id(2)]     # _id(3) lies past the slack


def test_list_ids_without_a_folder_is_empty(tmp_home):
    assert undo.list_ids(tmp_home, T) == []
    history.folder(tmp_home).write_text("")      # a file there is reported, not read as no history
    with pytest.raises(StoreUnreadable, match="not the history folder"):
        undo.list_ids(tmp_home, T)


@pytest.mark.parametrize("which,want", [
    (None, 3), ("1", 3), (" 1 ", 3), ("01", 3), ("2", 2), ("3", 1), ("0003", 1), ("000003", 1),
])
def test_resolve_names_the_nth_newest(tmp_home, which, want):
    for n in (1, 2, 3):
        _record(tmp_home, _id(n), _rows_meta((POOL, "r0", {})))
    assert undo.resolve(tmp_home, which, T + 10) == _id(want)


@pytest.mark.parametrize("which,field,words", [
    ("4", "N", "only 3 operator actions are kept (1 is the newest)"),
    ("0", "N", "only 3"),
    ("1234567", "N", "only 3"),              # more than six digits: no N
    ("0000003", "N", "only 3"),
    ("٣", "ID", "is not a history id"),        # a digit, but not ASCII
    ("../x", "ID", "is not a history id (see `hermes-admin history`)"),
    ("20991114T221320000000Z-ffffff", "ID", "lies in the future"),
    ("20231114T221320000000Z-ffffff", "ID", "is not kept in this home's history"),
    ("", "ID", "is empty"),                  # `undo --yes "$ID"` with ID unset: never the newest
    ("  ", "ID", "is empty"),
])
def test_resolve_refuses_with_the_argument_named(tmp_home, which, field, words):
    for n in (1, 2, 3):
        _record(tmp_home, _id(n), _rows_meta((POOL, "r0", {})))
    with pytest.raises(BadInput) as err:
        undo.resolve(tmp_home, which, T + 10)
    assert err.value.field == field and words in str(err.value)


def test_resolve_an_id_and_an_empty_history(tmp_home):
    with pytest.raises(BadInput) as err:
        undo.resolve(tmp_home, None, T)
    assert err.value.field == "ID" and "no operator action is kept in the history of this home" in str(err.value)
    _record(tmp_home, _id(1), _rows_meta((POOL, "r0", {})))
    assert undo.resolve(tmp_home, f" {_id(1)} ", T + 10) == _id(1)
    assert undo.resolve(tmp_home, _id(1), T - 300 + 1) == _id(1)       # at the slack: not the future


def test_resolve_judges_the_future_by_the_clock_it_is_given(tmp_home):
    _record(tmp_home, _id(1), _rows_meta((POOL, "r0", {})))
    later = "20231114T230000000000Z-0000aa"                 # T + 47 min: the past today, the future at T
    _record(tmp_home, later, _rows_meta((POOL, "r0", {})))
    assert undo.resolve(tmp_home, None, T + 10) == _id(1)
    with pytest.raises(BadInput, match="lies in the future"):
        undo.resolve(tmp_home, later, T + 10)


# --- plan --------------------------------------------------------------------------------------------

def _doc(*rows: dict) -> dict:
    return make_store({POOL: list(rows)})


def test_plan_reads_the_copy_and_names_later_actions_on_the_same_rows(tmp_home):
    before = _doc(make_row("r0", token=KEY))
    _record(tmp_home, _id(1), _rows_meta((POOL, "r0", {}), (POOL, "r1", {})), before)
    _record(tmp_home, _id(2), {**_rows_meta((POOL, "r1", {})), "actions": ["cooldown", "reset"]}, before)
    _record(tmp_home, _id(3), _rows_meta((POOL, "r9", {})), before)
    _record(tmp_home, _id(4), {"rows": [{"pool": POOL, "id": "r0", "after": {}}]}, before)
    _record(tmp_home, _id(0), _rows_meta((POOL, "r0", {})), before)          # earlier: no conflict
    (history.folder(tmp_home) / f"{_id(5)}.json").write_text("broken")      # unreadable: skipped
    p = undo.plan(tmp_home, _id(1))
    assert p.id == _id(1) and p.before_doc == before
    assert p.conflicts == [f"{_id(2)} (cooldown, reset) changed {POOL}/r1 since",
                           f"{_id(4)} (?) changed {POOL}/r0 since"]


def test_plan_conflicts_on_rows_of_an_action_that_also_edited_config(tmp_home):
    before = _doc(make_row("r0", token=KEY))
    cfg = {"config": {"file": "config.yaml", "touched": ["model"], "after": {}}}
    _record(tmp_home, _id(1), {**_rows_meta((POOL, "r0", {})), **cfg}, before)
    _record(tmp_home, _id(2), _rows_meta((POOL, "r0", {})), before)
    assert undo.plan(tmp_home, _id(1)).conflicts == [f"{_id(2)} (reset) changed {POOL}/r0 since"]


def test_plan_conflicts_on_config_keys_name_at_most_three(tmp_home):
    cfg = {"config": {"file": "config.yaml", "touched": ["a", "b", "c", "d"], "after": {}}}
    _record(tmp_home, _id(1), cfg)
    _record(tmp_home, _id(2), {**cfg, "actions": ["config"]})
    assert undo.plan(tmp_home, _id(1)).conflicts == [
        f"{_id(2)} (config) changed config.yaml:a, config.yaml:b, config.yaml:c since"]


@pytest.mark.parametrize("meta,words", [
    ({"rows": [{"pool": POOL, "id": 3, "after": None}]}, "holds rows that are not rows"),
    ({"rows": [{"pool": POOL, "id": "r0", "after": "x"}]}, "holds rows that are not rows"),
    ({"rows": [{"pool": 1, "id": "r0"}]}, "holds rows that are not rows"),
    ({"rows": ["r0"]}, "holds rows that are not rows"),
    ({"rows": {"pool": POOL}}, "holds rows that are not rows"),
    ({"rows": [], "actions": ["restore"]}, "records no row and no config key that restore changed"),
    ({}, "records no row and no config key that this action changed"),
    ({"rows": [{"pool": POOL, "id": "r0"}], "unreadable_before": "line 1"},
     "replaced a file that did not parse (line 1)"),
])
def test_plan_refuses_a_record_it_cannot_use(tmp_home, meta, words):
    _record(tmp_home, _id(1), meta, _doc())
    with pytest.raises(StoreUnreadable) as err:
        undo.plan(tmp_home, _id(1))
    assert words in str(err.value) and err.value.path.name == f"{_id(1)}.json"


def test_plan_without_a_copy_of_the_rows(tmp_home):
    _record(tmp_home, _id(1), _rows_meta((POOL, "r0", {})))
    with pytest.raises(StoreUnreadable, match="keeps no copy of auth.json"):
        undo.plan(tmp_home, _id(1))
    _record(tmp_home, _id(2), {**_rows_meta((POOL, "r0", {})), "created": True})     # auth.json was new
    assert undo.plan(tmp_home, _id(2)).before_doc is None


def test_plan_refuses_a_copy_that_is_not_a_store(tmp_home):
    _record(tmp_home, _id(1), _rows_meta((POOL, "r0", {})), _doc())
    (history.folder(tmp_home) / f"auth.json.{_id(1)}").write_text("not json")
    with pytest.raises(StoreUnreadable) as err:
        undo.plan(tmp_home, _id(1))
    assert err.value.path.name == f"auth.json.{_id(1)}"


# --- describe ----------------------------------------------------------------------------------------

def test_describe_says_what_comes_back():
    before = _doc(make_row("r0", label="k0"), make_row("r1", label="k1"))
    meta = {"id": _id(1), "rows": [{"pool": POOL, "id": "r0", "label": "k0", "after": None},
                                   {"pool": POOL, "id": "r2", "after": {}},
                                   {"pool": POOL, "id": "r1", "label": "k1", "after": {}}, "junk"],
            "config": {"touched": ["model", "x"]}}
    assert Plan(meta, before).describe() == [
        f"{POOL} k0 (id=r0): comes back", f"{POOL} r2 (id=r2): is removed again",
        f"{POOL} k1 (id=r1): fields put back", "config.yaml: model, x put back where unchanged since the action"]
    assert Plan({"id": "x", "rows": "junk"}, None).rows == []


# --- store_change --------------------------------------------------------------------------------------

def _plan(before: dict | None, *rows: tuple[str, dict | None]) -> Plan:
    return Plan({"id": _id(1), "rows": [{"pool": POOL, "id": i, "after": a} for i, a in rows]}, before)


def _ids(doc: dict) -> list[tuple[str, int]]:
    return [(r["id"], r["priority"]) for r in doc["credential_pool"][POOL]]


def test_a_removed_row_comes_back_at_its_place_and_its_source_is_let_go():
    a, b, c = (make_row("a", priority=0, token=KEY), make_row("b", priority=1, source="env:OPENROUTER_API_KEY"),
               make_row("c", priority=2, token=KEY2))
    before = _doc(a, b, c)
    before["suppressed_sources"] = {POOL: ["env:OTHER"]}
    fresh = _doc(json.loads(json.dumps(a)), json.loads(json.dumps(c)))
    fresh["credential_pool"][POOL][1]["priority"] = 1
    fresh["suppressed_sources"] = {POOL: ["env:OTHER", "env:OPENROUTER_API_KEY"]}
    out = store_change(_plan(before, ("b", None)))(fresh, T)
    assert _ids(fresh) == [("a", 0), ("b", 1), ("c", 2)]
    assert fresh["suppressed_sources"] == {POOL: ["env:OTHER"]}
    assert [(o.action, o.pool, o.notes) for o in out] == [("undo", POOL, [f"undo of {_id(1)}"])]
    assert [(ch.pool, ch.id, ch.label, ch.before) for ch in out[0].changes] == [(POOL, "b", "key-b", {})]
    assert out[0].changes[0].after["priority"] == 1


def test_a_source_suppressed_before_the_action_stays_suppressed():
    b = make_row("b", priority=0, source="env:OPENROUTER_API_KEY")
    before = _doc(b)
    before["suppressed_sources"] = {POOL: ["env:OPENROUTER_API_KEY"]}
    fresh = _doc()
    fresh["suppressed_sources"] = {POOL: ["env:OPENROUTER_API_KEY"]}
    store_change(_plan(before, ("b", None)))(fresh, T)
    assert fresh["suppressed_sources"] == {POOL: ["env:OPENROUTER_API_KEY"]}
    manual = make_row("m", priority=0, source="manual:x")
    before, fresh = _doc(manual), _doc()
    fresh["suppressed_sources"] = {POOL: ["manual:x"]}
    store_change(_plan(before, ("m", None)))(fresh, T)
    assert fresh["suppressed_sources"] == {POOL: ["manual:x"]}


def test_a_removed_row_at_the_end_of_a_shorter_pool_comes_back_last():
    rows = [make_row(x, priority=i, token=KEY + x) for i, x in enumerate("abc")]   # one key each: no twin
    before = _doc(*rows)
    fresh = _doc(json.loads(json.dumps(rows[0])))
    store_change(_plan(before, ("c", None)))(fresh, T)
    assert _ids(fresh) == [("a", 0), ("c", 1)]


def test_a_removed_row_already_there_is_left_and_said():
    row = make_row("a", token=KEY)
    fresh = _doc(dict(row, label="renamed"))
    with pytest.raises(NothingToChange) as got:          # nothing goes back: nothing is written
        store_change(_plan(_doc(row), ("a", None), ("z", None)))(fresh, T)
    assert fresh["credential_pool"][POOL][0]["label"] == "renamed"
    assert str(got.value) == ("auth.json: nothing undone: a: already there, left as it is; "
                              "z: already there, left as it is")


def test_an_added_row_goes_and_the_pool_is_renumbered():
    rows = [make_row(x, priority=i, token=KEY) for i, x in enumerate("abc")]
    after = history.digests(rows[1])
    fresh = _doc(*json.loads(json.dumps(rows)))
    out = store_change(_plan(_doc(rows[0], rows[2]), ("b", after)))(fresh, T)
    assert _ids(fresh) == [("a", 0), ("c", 1)]
    assert [(ch.pool, ch.id, ch.label, ch.before["priority"], ch.after) for ch in out[0].changes] == [
        (POOL, "b", "key-b", 1, {})]


def test_an_added_row_already_gone_is_said():
    with pytest.raises(NothingToChange, match="^auth.json: nothing undone: b: already gone$"):
        store_change(_plan(_doc(), ("b", {})))(_doc(), T)


def test_an_untouched_outcome_is_left_out():
    with pytest.raises(NothingToChange, match="nothing undone: nothing to put back"):
        store_change(Plan({"id": _id(1), "rows": []}, _doc()))(_doc(), T)
    row, gone = make_row("a", token=KEY), make_row("b", token=KEY)
    fresh = _doc(dict(row, label="renamed"), gone)              # "a" already there; "b" goes again
    out = store_change(_plan(_doc(row), ("a", None), ("b", history.digests(gone))))(fresh, T)
    assert [c.id for c in out[0].changes] == ["b"] and out[0].notes[1] == "a: already there, left as it is"
    assert [(r["id"], r["label"]) for r in fresh["credential_pool"][POOL]] == [("a", "renamed")]


def test_a_changed_row_gets_back_each_field_nobody_changed_since():
    before = make_row("a", priority=0, token=KEY, last_status=None, note="old")
    left = dict(before, last_status="exhausted", last_status_at=T, last_error_code=429, added="new")
    left.pop("note")
    fresh = dict(left, last_error_code=402)                 # an agent changed the code since
    doc = _doc(fresh)
    out = store_change(_plan(_doc(before), ("a", history.digests(left))))(doc, T)
    got = doc["credential_pool"][POOL][0]
    # The bench is one unit: the agent's code stays, and so does the rest of the bench it left.
    assert got["last_status"] == "exhausted" and got["last_status_at"] == T
    assert got["last_error_code"] == 402 and got["note"] == "old" and "added" not in got
    assert out[0].notes == [f"undo of {_id(1)}", "key-a: kept its whole bench (last_error_code changed) "
                            "as another writer left it (changed since the action)"]
    ch = out[0].changes[0]
    assert (ch.pool, ch.id, ch.label) == (POOL, "a", "key-a")
    assert (ch.before["last_status"], ch.after["last_status"]) == ("exhausted", "exhausted")


def test_a_field_outside_any_unit_changed_since_is_kept_alone():
    before = make_row("a", token=KEY, last_status=None, note="old", tag="x")
    left = dict(before, last_status="exhausted", note="new", tag="y")
    doc = _doc(dict(left, tag="z"))                          # another writer changed tag since
    out = store_change(_plan(_doc(before), ("a", history.digests(left))))(doc, T)
    got = doc["credential_pool"][POOL][0]
    assert (got["last_status"], got["note"], got["tag"]) == (None, "old", "z")
    assert out[0].notes[1] == "key-a: kept tag as another writer left it (changed since the action)"


def test_a_field_put_back_is_a_copy_of_the_kept_value():
    before = make_row("a", token=KEY, extra={"n": [1]})
    left = dict(before, extra={"n": [2]})
    before_doc = _doc(before)
    doc = _doc(dict(left))
    store_change(_plan(before_doc, ("a", history.digests(left))))(doc, T)
    doc["credential_pool"][POOL][0]["extra"]["n"].append(9)
    assert before_doc["credential_pool"][POOL][0]["extra"] == {"n": [1]}


def test_a_priority_change_is_moved_back():
    rows = [make_row(x, priority=i, token=KEY) for i, x in enumerate("abc")]
    before_doc = _doc(*json.loads(json.dumps(rows)))
    moved = [dict(rows[2], priority=0), dict(rows[0], priority=1), dict(rows[1], priority=2)]
    doc = _doc(*moved)
    store_change(_plan(before_doc, ("c", history.digests(moved[0]))))(doc, T)
    assert _ids(doc) == [("a", 0), ("b", 1), ("c", 2)]


def test_a_row_whose_key_changed_since_is_kept_whole():
    before = make_row("a", token=KEY, last_status=None)
    left = dict(before, last_status="exhausted")
    fresh = dict(left, access_token=KEY2)
    doc = _doc(dict(fresh))
    with pytest.raises(NothingToChange) as got:
        store_change(_plan(_doc(before), ("a", history.digests(left))))(doc, T)
    assert doc["credential_pool"][POOL][0] == fresh
    assert str(got.value) == ("auth.json: nothing undone: key-a: kept as it is: its key changed since the action "
                              "(another writer put a new one in this row)")
    gone = dict(left)
    gone.pop("access_token")
    doc = _doc(dict(gone))
    with pytest.raises(NothingToChange):
        store_change(_plan(_doc(before), ("a", history.digests(left))))(doc, T)
    assert doc["credential_pool"][POOL][0] == gone                      # a key removed: changed too
    grown = dict(left, refresh_token="rt-" + "r" * 30)
    doc = _doc(dict(grown))
    with pytest.raises(NothingToChange):
        store_change(_plan(_doc(before), ("a", history.digests(left))))(doc, T)
    assert doc["credential_pool"][POOL][0] == grown                     # a key added: changed too
    added = make_row("n", token=KEY)
    doc = _doc(dict(added, access_token=KEY2))
    with pytest.raises(NothingToChange):
        store_change(_plan(_doc(), ("n", history.digests(added))))(doc, T)
    assert [r["id"] for r in doc["credential_pool"][POOL]] == ["n"]     # an added row rotated since stays


def test_each_pool_has_its_own_outcome():
    a, b = make_row("a", token=KEY), make_row("b", token=KEY2)
    before = make_store({POOL: [a], "anthropic": [b]})
    p = Plan({"id": _id(1), "rows": [{"pool": POOL, "id": "a", "after": None},
                                     {"pool": "anthropic", "id": "b", "after": None}]}, before)
    out = store_change(p)(make_store({POOL: [], "anthropic": []}), T)
    assert [(o.pool, [c.pool for c in o.changes]) for o in out] == [(POOL, [POOL]), ("anthropic", ["anthropic"])]


def test_a_changed_row_removed_since_is_said():
    before = make_row("a", token=KEY)
    with pytest.raises(NothingToChange, match="^auth.json: nothing undone: a: removed since; nothing to put back$"):
        store_change(_plan(_doc(before), ("a", history.digests(dict(before, x=1)))))(_doc(), T)


# --- negative control ----------------------------------------------------------------------------------

def test_control_an_undo_that_ignores_later_writers_is_caught():
    broken = mutant("store.ops.undo", "        if key in since:\n            kept.append(key)\n"
                    "            continue\n", "")
    before = make_row("a", token=KEY, tag=None)
    left = dict(before, tag="ours")
    doc = _doc(dict(left, tag="theirs"))
    broken.store_change(broken.Plan({"id": _id(1), "rows": [{"pool": POOL, "id": "a",
                                                            "after": history.digests(left)}]}, _doc(before)))(doc, T)
    assert doc["credential_pool"][POOL][0]["tag"] is None     # the slip: the other writer's value is gone


def test_control_an_undo_that_reverts_half_a_bench_is_caught():
    broken = mutant("store.ops.undo", "if changed & set(unit) and since & set(unit):", "if False:")
    before = make_row("a", token=KEY)
    left = dict(before, last_status="exhausted", last_error_code=None, last_error_reset_at=T + 60)
    doc = _doc(dict(left, last_error_code=402, last_error_reset_at=T + 86400))     # an agent benched it again
    broken.store_change(broken.Plan({"id": _id(1), "rows": [{"pool": POOL, "id": "a",
                                                            "after": history.digests(left)}]}, _doc(before)))(doc, T)
    got = doc["credential_pool"][POOL][0]
    assert got["last_status"] is None and got["last_error_code"] == 402     # the slip: half a bench



# --- config_edit ---------------------------------------------------------------------------------------

BEFORE_CFG = "# mine\nmodel:\n  provider: a   # the first\nkeep: 1\n"


def _config_plan(home: Home, after: dict, touched: list) -> Plan:
    aid = _id(1)
    d = history.folder(home)
    d.mkdir(mode=0o700, exist_ok=True)
    (d / f"config.yaml.{aid}").write_text(BEFORE_CFG)
    return Plan({"id": aid, "kept": {"config.yaml": f"config.yaml.{aid}"},
                 "config": {"file": "config.yaml", "touched": touched, "after": after}}, None)


def test_config_edit_puts_back_changed_keys_and_keeps_later_edits(tmp_home):
    after = {"model": history.digest({"provider": "b"}), "new": history.digest("x"), "keep": history.digest(1),
             "other": history.digest("z")}
    p = _config_plan(tmp_home, after, ["model", "new", "keep", "other", 7])
    tmp_home.config.write_text("# mine\nmodel:\n  provider: b\nkeep: 1\nnew: x\nother: changed-since\n")
    got = undo.config_edit(tmp_home, p)
    text = tmp_home.config.read_text()
    assert "provider: a   # the first" in text and "new:" not in text and "other: changed-since" in text
    assert "keep: 1" in text and text.startswith("# mine\n")
    assert (got.action, got.key, got.written) == ("undo", "model,new", True)
    assert got.before == {"model": "as the action left it", "new": "as the action left it"}
    assert got.after == {"model": {"provider": "a"}, "new": None}
    assert got.notes == (f"undo of {_id(1)}", "config.yaml: kept other as it is now: changed since the action "
                         "(by hand or by another writer), so not put back")


def test_config_edit_with_everything_changed_since_writes_nothing(tmp_home):
    p = _config_plan(tmp_home, {"model": history.digest({"provider": "b"})}, ["model"])
    tmp_home.config.write_text("model:\n  provider: c\n")
    with pytest.raises(NothingToChange) as got:      # never a ConfigChange the CLI calls "undone"
        undo.config_edit(tmp_home, p)
    assert tmp_home.config.read_text() == "model:\n  provider: c\n"
    assert str(got.value) == ("config.yaml: nothing undone: kept model as it is now: changed since the action "
                              "(by hand or by another writer), so not put back")


def test_config_edit_of_a_config_the_action_created(tmp_home):
    p = Plan({"id": _id(1), "kept": {}, "config": {"touched": ["model"], "after": {
        "model": history.digest({"provider": "b"})}}}, None)
    tmp_home.config.write_text("model:\n  provider: b\n")
    got = undo.config_edit(tmp_home, p)
    assert "model" not in tmp_home.config.read_text() and got.key == "model" and got.written is True
    assert got.notes == (f"undo of {_id(1)}",)


@pytest.mark.parametrize("cfg", [None, "x", {"touched": ["model"]}, {"touched": ["model"], "after": "x"}])
def test_config_edit_without_a_config_record_is_nothing(tmp_home, cfg):
    assert undo.config_edit(tmp_home, Plan({"id": _id(1), "kept": {}, "config": cfg}, None)) is None
