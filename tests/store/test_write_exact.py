"""The store's write path in process (``store.transaction``, ``store.ops.write``), value by value.

``test_write_path.py`` holds the lock-wait stamp and the audit failure with real processes;
these pin the rest exactly: the new document, a home that may not be created, a skipped
write and a raised one (nothing written, no backup, no history copy), the hook called only
over an existing file, the backup and the orphan sweep; and for ``perform``: the value and
stamp, the history record (rows as left, ``created``, a group, the remote address), the
audit line's extras, each note a failed side step leaves, and ``outcomes_of``,
``config_outcome`` and ``touched_rows`` exactly. Negative control: the last test makes the
transaction write after ``skip_write`` and sees a file appear.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from store import authfile
from store.config.edit import ConfigChange
from store.errors import StoreUnreadable
from store.ops import audit, history
from store.ops.actions import Change, Outcome
from store.ops.write import Group, StoreChange, config_outcome, outcomes_of, perform, touched_rows
from store.paths import TEMP_PREFIX, Home
from store.redaction import redact
from store.transaction import apply, new_document, skip_write, transaction
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.mutant import mutant

KEY = "sk-or-v1-writeexact-" + "a" * 40
KEY2 = "sk-or-v1-writeexact-" + "b" * 40
T = 1_700_000_000.0


def _store(home: Home) -> None:
    write_store(home, make_store({"openrouter": [make_row("a", label="k0", token=KEY),
                                                 make_row("b", label="k1", token=KEY2, priority=1)]}))


# --- transaction ------------------------------------------------------------------------------------

def test_new_document_is_an_empty_store():
    assert new_document() == {"version": authfile.STORE_VERSION, "providers": {}, "credential_pool": {}}
    assert authfile.STORE_VERSION == 1


def test_a_missing_store_is_written_as_a_new_document(tmp_home):
    calls = []
    with transaction(tmp_home, before_replace=calls.append) as doc:
        assert doc == new_document()
        doc["credential_pool"]["openrouter"] = []
    got = read_doc(tmp_home)
    got.pop("updated_at")
    assert got == {**new_document(), "credential_pool": {"openrouter": []}}
    assert calls == [] and not tmp_home.backup.exists()          # no file before: no hook, no backup


def test_an_existing_store_is_backed_up_and_the_hook_called_before_the_replace(tmp_home):
    _store(tmp_home)
    old = tmp_home.auth.read_bytes()
    seen = []
    with transaction(tmp_home, before_replace=lambda p: seen.append((p, p.read_bytes()))) as doc:
        doc["credential_pool"]["openrouter"][0]["label"] = "renamed"
    assert seen == [(tmp_home.auth, old)]
    assert tmp_home.backup.read_bytes() == old
    assert read_doc(tmp_home)["credential_pool"]["openrouter"][0]["label"] == "renamed"


def test_create_false_needs_the_home(tmp_path):
    home = Home(tmp_path / "typo")
    with pytest.raises(StoreUnreadable, match="home directory does not exist"), transaction(home, create=False):
        pass
    assert not home.root.exists()
    with transaction(Home(tmp_path / "new"), create=True) as doc:
        doc["providers"]["x"] = {}
    assert os.stat(tmp_path / "new").st_mode & 0o777 == 0o700


def test_create_false_on_a_home_without_a_store_writes_one(tmp_home):
    with transaction(tmp_home, create=False) as doc:
        doc["providers"]["x"] = {}
    assert read_doc(tmp_home)["providers"] == {"x": {}}


def test_skip_write_and_a_raise_write_nothing(tmp_home):
    _store(tmp_home)
    old = tmp_home.auth.read_bytes()
    with transaction(tmp_home, before_replace=lambda p: pytest.fail("hook on a skipped write")) as doc:
        doc["providers"]["x"] = {}
        skip_write()
    with pytest.raises(ValueError), transaction(tmp_home) as doc:
        doc["providers"]["x"] = {}
        raise ValueError("no")
    assert tmp_home.auth.read_bytes() == old and not tmp_home.backup.exists()


def test_a_write_sweeps_a_killed_writers_temp_copy(tmp_home):
    _store(tmp_home)
    orphan = tmp_home.root / f"{TEMP_PREFIX}auth.json.99999999.x1y2.tmp"      # its writer is long gone
    orphan.write_text("{}")
    os.utime(orphan, (T, T))
    with transaction(tmp_home) as doc:
        doc["providers"]["x"] = {}
    assert not orphan.exists()


def test_apply_returns_the_changes_value(tmp_home):
    _store(tmp_home)
    assert apply(tmp_home, lambda doc: doc["credential_pool"]["openrouter"].pop()["id"]) == "b"
    assert [r["id"] for r in read_doc(tmp_home)["credential_pool"]["openrouter"]] == ["a"]


def test_a_linked_store_is_refused_before_any_file_is_made(tmp_home, tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps(make_store({})))
    tmp_home.auth.symlink_to(target)
    with pytest.raises(StoreUnreadable), transaction(tmp_home):
        pass
    assert sorted(os.listdir(tmp_home.root)) == ["auth.json"]


# --- outcomes_of, config_outcome, touched_rows --------------------------------------------------------

class _Report:
    def __init__(self, outcome):
        self.outcome = outcome


def test_outcomes_of_every_shape():
    a, b = Outcome("reset", "or"), Outcome("add", "an")
    cfg = ConfigChange("set", "model.provider", "a", "b")
    assert outcomes_of(None) == []
    assert outcomes_of(a) == [a]
    assert outcomes_of([a, (b, None), []]) == [a, b]
    assert outcomes_of(_Report(a)) == [a]
    assert outcomes_of(_Report(None)) == [] and outcomes_of("text") == [] and outcomes_of(3) == []
    assert outcomes_of(ConfigChange("set", "k", 1, 2, written=False)) == []
    assert outcomes_of(cfg) == [config_outcome(cfg)]


def test_config_outcome_exact():
    got = config_outcome(ConfigChange("set", "model.provider", "a", "b", pool="openrouter", notes=("n1", "n2")))
    assert (got.action, got.pool, got.notes) == ("config.set", "openrouter", ["n1", "n2"])
    assert got.changes == [Change("openrouter", "model.provider", "config.yaml", {"value": "a"}, {"value": "b"})]
    assert config_outcome(ConfigChange("set", "k", None, 1)).pool == "config.yaml"


def test_touched_rows_as_the_write_leaves_them_labels_fingerprinted():
    row = make_row("a", label=f"mine {KEY}", token=KEY)
    doc = make_store({"openrouter": [row]})
    out = Outcome("reset", "openrouter", changes=[Change("openrouter", "a", row["label"], {}, {}),
                                                  Change("openrouter", "gone", "x", {}, {})])
    got = touched_rows(doc, [out])
    assert got[0]["pool"] == "openrouter" and got[0]["id"] == "a" and got[0]["after"] == history.digests(row)
    assert KEY not in got[0]["label"] and got[0]["label"].startswith("mine ")
    assert got[1] == {"pool": "openrouter", "id": "gone", "label": "x", "after": None}


# --- perform --------------------------------------------------------------------------------------------

def _bench(doc, now):
    row = doc["credential_pool"]["openrouter"][0]
    row["last_status"], row["last_status_at"] = "exhausted", now
    return Outcome("cooldown", "openrouter", changes=[Change("openrouter", "a", "k0", {}, {"last_status": "x"})])


def test_perform_stamps_keeps_and_audits(tmp_home):
    _store(tmp_home)
    w = perform(tmp_home, StoreChange(_bench), via="cli", clock=lambda: T, remote="10.0.0.9")
    assert w.at == T and w.audit_error is None and [o.action for o in w.outcomes] == ["cooldown"]
    assert read_doc(tmp_home)["credential_pool"]["openrouter"][0]["last_status_at"] == T
    meta = history.load(tmp_home, w.history_id)
    assert meta["via"] == "cli" and meta["actions"] == ["cooldown"] and meta["remote"] == "10.0.0.9"
    assert meta["kept"] == {"auth.json": f"auth.json.{w.history_id}"} and "created" not in meta
    assert [(r["id"], r["after"]["last_status"]) for r in meta["rows"]] == [("a", history.digest("exhausted"))]
    line = audit.tail(tmp_home)[-1]
    assert (line["time"], line["via"], line["history"], line["remote"]) == (T, "cli", w.history_id, "10.0.0.9")


def test_perform_on_a_new_store_records_that_it_created_it(tmp_home):
    def add(doc, now):
        doc["credential_pool"]["openrouter"] = [make_row("a", label="k0", token=KEY)]
        return Outcome("add", "openrouter", changes=[Change("openrouter", "a", "k0", {}, {})])

    w = perform(tmp_home, StoreChange(add, create=True), via="cli", clock=lambda: T)
    meta = history.load(tmp_home, w.history_id)
    assert meta["created"] is True and meta["kept"] == {} and "remote" not in meta


def test_perform_of_a_skipped_write_keeps_nothing(tmp_home):
    _store(tmp_home)

    def noop(doc, now):
        skip_write()

    w = perform(tmp_home, StoreChange(noop), via="cli", clock=lambda: T)
    assert w.value is None and w.history_id is None and w.outcomes == [] and audit.tail(tmp_home) == []


def test_perform_as_part_of_a_group(tmp_home):
    _store(tmp_home)
    g = Group(history.new_id(time.time()), {"scope": "everywhere", "profiles": ["default"]}, {"group": "g1"})
    w = perform(tmp_home, StoreChange(_bench), via="console", clock=lambda: T, group=g)
    assert w.history_id == g.id
    assert history.load(tmp_home, g.id)["group"] == g.meta
    line = audit.tail(tmp_home)[-1]
    assert line["group"] == "g1" and line["history"] == g.id and "remote" not in line


def test_perform_an_edit_with_its_own_lock(tmp_home):
    times = iter([T, T + 5])
    w = perform(tmp_home, lambda: ConfigChange("set", "k", 1, 2, written=False), via="cli", clock=lambda: next(times))
    assert w.at == T and w.outcomes == [] and w.history_id is None


def test_perform_redacts_with_the_callers_redactor_and_the_rows_written(tmp_home):
    _store(tmp_home)

    def noisy(doc, now):
        return Outcome("cooldown", "openrouter", changes=[Change("openrouter", "a", "k0", {}, {})],
                       notes=[f"echoed {KEY}"])

    perform(tmp_home, StoreChange(noisy), via="cli", clock=lambda: T, redactor=redact.Redactor())
    text = tmp_home.audit.read_text()
    assert KEY not in text and "echoed " in text


def test_perform_notes_each_side_step_that_failed(tmp_home, monkeypatch):
    _store(tmp_home)
    (tmp_home.root / "hermes-admin.yaml").write_text("history: {keep: 0}\n")
    monkeypatch.setattr(history, "save", lambda pending, meta: (_ for _ in ()).throw(OSError(28, "No space")))
    w = perform(tmp_home, StoreChange(_bench), via="cli", clock=lambda: T)
    assert w.history_id is None
    assert w.audit_error.startswith("history record not kept: ")
    assert "; history pruned by the defaults: " in w.audit_error and "history.keep" in w.audit_error


def test_perform_notes_an_audit_log_it_cannot_write(tmp_home):
    _store(tmp_home)
    tmp_home.audit.mkdir()
    w = perform(tmp_home, StoreChange(_bench), via="cli", clock=lambda: T)
    assert w.audit_error.startswith("audit log ") and "not written" in w.audit_error
    assert read_doc(tmp_home)["credential_pool"]["openrouter"][0]["last_status"] == "exhausted"


def test_perform_prunes_by_the_homes_settings(tmp_home):
    _store(tmp_home)
    (tmp_home.root / "hermes-admin.yaml").write_text("history: {keep: 1}\n")
    first = perform(tmp_home, StoreChange(_bench), via="cli", clock=lambda: T).history_id
    second = perform(tmp_home, StoreChange(_bench), via="cli", clock=lambda: T).history_id
    assert undo_ids(tmp_home) == [second] and first != second


def undo_ids(home: Home) -> list[str]:
    return sorted(n[:-5] for n in os.listdir(history.folder(home)) if n.endswith(".json"))


# --- negative control ------------------------------------------------------------------------------------

def test_control_a_transaction_that_writes_after_skip_write_is_caught(tmp_home):
    broken = mutant("store.transaction", "        except _NoChange:\n            return\n",
                    "        except _NoChange:\n            pass\n")
    with broken.transaction(tmp_home) as doc:
        doc["providers"]["x"] = {}
        broken.skip_write()
    assert tmp_home.auth.exists()                       # the slip: a skipped write wrote
