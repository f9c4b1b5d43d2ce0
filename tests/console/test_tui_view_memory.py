"""Sort, direction, columns, wide mode and folded pools are kept between sessions in
hermes-admin's own settings (``hermes-admin.yaml``, the ``console:`` section), #28."""

from __future__ import annotations

import os
import stat

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from screens.view_memory import ViewMemory
from store.config import console_view as cv
from store.config import settings as admin_settings
from store.errors import ConfigUnreadable, WriteFailed
from store.paths import Home
from tests.tui_sample import app_for, table_of, write_sample

SIZE = (120, 30)


def saved(home: Home) -> dict:
    return yaml.safe_load((home.root / "hermes-admin.yaml").read_text())["console"]


async def first_session(home: Home) -> None:
    app = app_for(home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("o", "O", "w")                 # status, turned round, every column
        await pilot.pause()
        table = table_of(app)
        assert table.move_to_key("pool\x1fanthropic")
        await pilot.press("enter")                       # fold anthropic
        await pilot.pause()
        await app.workers.wait_for_complete()


@pytest.mark.parametrize("control", [False, True], ids=["as-built", "control-no-restore"])
async def test_the_view_comes_back_in_the_next_session(tmp_home: Home, monkeypatch, control) -> None:
    """The control opens the second session without restoring: the defaults show, so the
    as-built view comes from the saved section, not from the harness."""
    write_sample(tmp_home)
    await first_session(tmp_home)
    assert saved(tmp_home) == {"sort": "status", "reverse": True, "columns": "wide", "folded": ["anthropic"]}
    if control:
        monkeypatch.setattr(ViewMemory, "restore", lambda self: None)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = table_of(app)
        view = (app.dashboard.sort, table.reverse, table.wide, table.rows.is_folded("anthropic"))
        assert view == (("priority", False, False, False) if control else ("status", True, True, True))


async def test_chosen_columns_are_kept_and_an_unchanged_session_writes_nothing(tmp_home: Home) -> None:
    write_sample(tmp_home)
    path = tmp_home.root / "hermes-admin.yaml"
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
    assert not path.exists()                             # opened and closed: nothing written
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("W", "space", "enter")          # untick label
        await pilot.pause()
        await app.workers.wait_for_complete()
        shown = [c.value for c in table_of(app).columns]
    assert saved(tmp_home)["columns"] == [k for k in shown if k != "pos"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert [c.value for c in table_of(app).columns] == shown


async def test_read_only_writes_nothing(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("o", "w")
        await pilot.pause()
        await app.workers.wait_for_complete()
    assert not (tmp_home.root / "hermes-admin.yaml").exists()


def test_a_save_keeps_comments_and_the_other_sections(tmp_home: Home) -> None:
    path = tmp_home.root / "hermes-admin.yaml"
    path.write_text("# operator notes\nheadroom:\n  threshold: 0.05   # yield early\n")
    assert cv.save_view(tmp_home, cv.ConsoleView(sort="label", folded=("x",)))
    text = path.read_text()
    assert "# operator notes" in text and "# yield early" in text
    assert admin_settings.read(tmp_home).threshold == 0.05          # agents read it as before
    assert cv.read_view(tmp_home) == cv.ConsoleView(sort="label", folded=("x",))
    assert not cv.save_view(tmp_home, cv.ConsoleView(sort="label", folded=("x",)))   # unchanged


def test_a_link_at_the_name_is_never_written_through(tmp_home: Home, tmp_path) -> None:
    target = tmp_path / "elsewhere.yaml"
    target.write_text("history:\n  keep: 5\n")
    link = tmp_home.root / "hermes-admin.yaml"
    os.symlink(target, link)
    with pytest.raises(WriteFailed, match="symlink"):
        cv.save_view(tmp_home, cv.ConsoleView(sort="label"))
    assert target.read_text() == "history:\n  keep: 5\n"            # the link's target untouched
    assert link.is_symlink()


async def test_an_unusable_section_is_said_and_left_alone(tmp_home: Home) -> None:
    write_sample(tmp_home)
    path = tmp_home.root / "hermes-admin.yaml"
    path.write_text("console:\n  reverse: maybe\n")
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("o")
        await pilot.pause()
        await app.workers.wait_for_complete()
        said = [m for m in app.messages if "saved view is not used" in "\n".join(m.lines)]
        assert said and "console.reverse" in "\n".join(said[0].lines)
    assert path.read_text() == "console:\n  reverse: maybe\n"


NAMES = st.text(min_size=0, max_size=8)
HOSTILE = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | NAMES,
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(NAMES, inner, max_size=4),
                       max_leaves=12)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(section=st.one_of(HOSTILE, st.dictionaries(st.sampled_from(["sort", "reverse", "columns", "folded", "x"]),
                                                  HOSTILE, max_size=4)))
def test_hostile_sections_are_refused_naming_the_field(section) -> None:
    try:
        view = cv.parse_view(section, "hermes-admin.yaml")
    except ConfigUnreadable as exc:
        assert str(exc.reason).startswith("console"), exc.reason
        return
    assert isinstance(view, cv.ConsoleView)
    assert cv.parse_view(cv.as_section(view), "x") == view     # what is read can be written back
