"""The console on a root of profiles: grouping, per-profile actions, a corrupt profile, the
switcher, findings and their row markers, act-everywhere (with a partial failure), and no
key on any of these screens. Each protection has its negative case."""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path

import pytest
from textual.widgets import OptionList

import tui.app.console
import tui.app.root_console
from screens.command_line import CommandLine
from screens.confirm import ConfirmScreen
from screens.findings_view import FindingsScreen
from screens.profile_config_view import ProfileConfigScreen
from screens.profile_picker import ProfilePicker
from store.paths import Home
from store.profiles.live import RootChange
from store.profiles.root import Root
from store.transaction import transaction
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.profiles_sample import (
    CANARIES,
    OWN_B,
    SHARED,
    banner_key,
    home,
    make_root,
    root_app,
    row_key,
    screen_text,
    table,
)
from tests.tui_sample import NOW, audit_lines, notes, settle
from tui.cli import entry
from tui.demo.profiles import PROFILE_KEYS, seed_profiles
from tui.text import shown

pytestmark = pytest.mark.usefixtures("utc")


def profiles_shown(app) -> list[str]:
    return [k.split("\x1f")[-1] for k in table(app).order if k.startswith("pool\x1fprofile\x1f")]


async def on(app, pilot, key: str) -> None:
    assert table(app).move_to_key(key), key
    await pilot.pause()


# ---------------------------------------------------------------- the view

async def test_rows_group_by_profile_then_pool_under_a_banner(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = root_app(root)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        order = table(app).order
        assert profiles_shown(app) == ["default", "team-a", "team-b"]
        # team-a's banner, then its pool, then its rows, before team-b's banner.
        assert order.index(banner_key("team-a")) < order.index("pool\x1fteam-a/openrouter") \
            < order.index(row_key("team-a", "openrouter", "b2b2b2")) < order.index(banner_key("team-b"))
        text = " ".join(table(app).row_texts(banner_key("team-a")))
        assert "primary openrouter/openai/gpt-5" in text
        assert "→ anthropic/claude-son… → nous/hermes-4" in text
        assert "1 ok · 1 cooling" in text
        # The same id in two profiles is two rows.
        assert row_key("default", "openrouter", "a1a1a1") in order


def test_a_single_home_opens_the_plain_console(tmp_path: Path, monkeypatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr(tui.app.console, "run", lambda *a, **k: seen.append("home") or 0)
    monkeypatch.setattr(tui.app.root_console, "run_root", lambda *a, **k: seen.append("root") or 0)
    monkeypatch.setattr(entry, "no_terminal", lambda: None)     # in-process: no terminal, not the point here
    single = home(Root(tmp_path / "single"), "default")
    write_store(single, make_store({"openrouter": [make_row("x", token=SHARED)]}))
    entry.main(["--home", str(single.root)])
    root = make_root(tmp_path)
    entry.main(["--home", str(root.path)])
    assert seen == ["home", "root"]


# ---------------------------------------------------------------- discovery

async def _until(pilot, cond, tries: int = 400) -> bool:
    for _ in range(tries):
        if cond():
            return True
        await pilot.pause(0.05)
    return cond()


async def test_profiles_added_and_removed_while_running_follow_one_watcher(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = root_app(root, watch=True)
    async with app.run_test(size=(140, 40)) as pilot:
        assert await _until(pilot, lambda: profiles_shown(app) == ["default", "team-a", "team-b"])
        write_store(home(root, "team-c"), make_store({"nous": [make_row("n1", token="x-nous-1234567890")]}))
        assert await _until(pilot, lambda: "team-c" in profiles_shown(app))
        shutil.rmtree(root.profile("team-b").home.root)
        assert await _until(pilot, lambda: "team-b" not in profiles_shown(app))
        assert profiles_shown(app) == ["default", "team-a", "team-c"]


# ---------------------------------------------------------------- actions

async def test_a_reset_on_a_row_changes_only_that_profiles_store(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    a, d, b = home(root, "team-a"), home(root, "default"), home(root, "team-b")
    before_d, before_b = d.auth.read_bytes(), b.auth.read_bytes()
    app = root_app(root)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await on(app, pilot, row_key("team-a", "openrouter", "a1a1a1"))
        assert app.acting == "team-a" and app.home == a
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(app, pilot)
        # team-a's row (same id as default's) was reset; default and team-b are byte-identical.
        assert read_doc(a)["credential_pool"]["openrouter"][0]["last_status"] is None
        assert d.auth.read_bytes() == before_d and b.auth.read_bytes() == before_b
        assert [e["action"] for e in audit_lines(a)] == ["reset"] and audit_lines(d) == []
        # Control: the same keys on default's row change default.
        await on(app, pilot, row_key("default", "openrouter", "a1a1a1"))
        await pilot.press("r", "y")
        await settle(app, pilot)
        assert read_doc(d)["credential_pool"]["openrouter"][0]["last_status"] is None


async def test_tags_in_another_profile_refuse_a_bulk_action_instead_of_acting_on_the_cursor(
        tmp_path: Path) -> None:
    root = make_root(tmp_path)
    a, d = home(root, "team-a"), home(root, "default")
    before_a, before_d = a.auth.read_bytes(), d.auth.read_bytes()
    app = root_app(root)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await on(app, pilot, row_key("default", "openrouter", "a1a1a1"))
        await pilot.press("space")  # tag default's row
        await on(app, pilot, row_key("team-a", "openrouter", "a1a1a1"))
        assert app.acting == "team-a"
        await pilot.press("r")
        await settle(app, pilot)
        # Neither the tagged row (another profile) nor the cursor's row was written.
        assert not isinstance(app.screen, ConfirmScreen)
        assert a.auth.read_bytes() == before_a and d.auth.read_bytes() == before_d
        assert any("tagged rows are in profile default" in n for n in notes(app))
        # Control: with the cursor back in the tagged row's profile, the same key acts.
        await on(app, pilot, row_key("default", "openrouter", "a1a1a1"))
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(app, pilot)
        assert read_doc(d)["credential_pool"]["openrouter"][0]["last_status"] is None
        assert a.auth.read_bytes() == before_a


async def test_the_events_timeline_names_the_profile_a_change_happened_in(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = root_app(root)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        # Another process benches team-b's key (a 429), as an agent of that profile would.
        b = home(root, "team-b")
        write_store(b, make_store({"anthropic": [make_row(
            "c3c3c3", label="own-b", token=OWN_B, last_status="exhausted", last_status_at=NOW - 5,
            last_error_code=429, last_error_reason="rate_limit_exceeded")]}))
        app.reload()
        await pilot.pause()
        lines = [e.pool for e in app.events]
        assert "team-b/anthropic" in lines
        # Only the profile that changed speaks: default and team-a were read again unchanged.
        assert not any(p.startswith(("default/", "team-a/")) for p in lines)


async def test_a_corrupt_profile_is_an_error_row_and_is_never_written(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    b = home(root, "team-b")
    b.auth.write_text("{ not json")
    before = b.auth.read_bytes()
    app = root_app(root)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        text = " ".join(table(app).row_texts(banner_key("team-b")))
        assert "✖ ERROR" in text and str(b.auth) in text
        assert row_key("team-a", "openrouter", "b2b2b2") in table(app).order   # the others stay live
        await on(app, pilot, banner_key("team-b"))
        assert app.acting == "team-b"
        for k in ("a", "s", "p"):
            await pilot.press(k)
            await settle(app, pilot)
            assert app.screen is app.dashboard
        assert any("team-b" in n and "nothing is written" in n for n in notes(app))
        assert b.auth.read_bytes() == before and not b.audit.exists()
        # Negative control: on a healthy profile the same key opens the add modal.
        await on(app, pilot, row_key("team-a", "openrouter", "b2b2b2"))
        await pilot.press("a")
        await pilot.pause()
        assert app.screen is not app.dashboard


# ---------------------------------------------------------------- the switcher

async def test_picker_and_command_line_narrow_the_view(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = root_app(root)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, ProfilePicker)
        app.screen.query_one(OptionList).highlighted = 2      # all, default, team-a, team-b
        await pilot.press("enter")
        await pilot.pause()
        assert profiles_shown(app) == ["team-a"] and app.context == "team-a"
        assert "profile: team-a" in str(app.dashboard.query_one("#status").render())
        await pilot.press("colon")
        await pilot.pause()
        assert isinstance(app.screen, CommandLine)
        await pilot.press(*"profile nope", "enter")
        await pilot.pause()
        assert isinstance(app.screen, CommandLine)               # refused, says why
        assert "no profile 'nope'" in str(app.screen.query_one("#command-error").render())
        app.screen.query_one("Input").value = ""
        await pilot.press(*"profile team-b", "enter")
        await pilot.pause()
        assert profiles_shown(app) == ["team-b"] and app.acting == "team-b"
        await pilot.press("colon", *"profile all", "enter")
        await pilot.pause()
        assert profiles_shown(app) == ["default", "team-a", "team-b"]


# ---------------------------------------------------------------- findings

async def test_findings_view_and_row_markers(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = root_app(root)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        t = table(app)
        assert "⚑ shared" in t.row_texts(row_key("team-a", "openrouter", "a1a1a1"))[4]
        # Two kinds on default's row: the gravest in words, then how many more.
        assert "⚑ primary-down+1" in t.row_texts(row_key("default", "openrouter", "a1a1a1"))[4]
        assert "⚑" not in " ".join(t.row_texts(row_key("team-a", "openrouter", "b2b2b2")))
        await pilot.press("exclamation_mark")
        await pilot.pause()
        assert isinstance(app.screen, FindingsScreen)
        assert "shared" in app.screen.text and "default, team-a" in app.screen.text
        await pilot.press("escape")
        # Negative case: once team-a's copy is gone, the finding and both markers go.
        store = read_doc(home(root, "team-a"))
        store["credential_pool"]["openrouter"] = store["credential_pool"]["openrouter"][1:]
        write_store(home(root, "team-a"), store)
        app.reload()
        await pilot.pause()
        assert "⚑ shared" not in screen_text(app)
        assert "⚑ primary-down " in " ".join(t.row_texts(row_key("default", "openrouter", "a1a1a1")))
        await pilot.press("exclamation_mark")
        await pilot.pause()
        assert "shared" not in app.screen.text and "primary-down" in app.screen.text


# ---------------------------------------------------------------- act everywhere

async def test_reset_everywhere_changes_every_holder(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = root_app(root)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await on(app, pilot, row_key("team-a", "openrouter", "a1a1a1"))
        await pilot.press("R")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "default, team-a" in app.screen.text
        await pilot.press("y")
        await settle(app, pilot)
        for name in ("default", "team-a"):
            assert read_doc(home(root, name))["credential_pool"]["openrouter"][0]["last_status"] is None
        assert any("changed default, team-a" in n for n in notes(app))


async def test_reset_everywhere_partial_failure_names_the_profile_not_changed(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    a = home(root, "team-a")
    before = a.auth.read_bytes()
    app = root_app(root, lock_timeout=0.2)
    with open(a.lock, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)        # another process's hold, as Hermes takes it
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause()
            await on(app, pilot, row_key("default", "openrouter", "a1a1a1"))
            await pilot.press("R", "y")
            await settle(app, pilot)
            text = " ".join(notes(app))
            assert "changed default" in text and "NOT changed team-a" in text
        fcntl.flock(held, fcntl.LOCK_UN)
    assert a.auth.read_bytes() == before
    assert read_doc(home(root, "default"))["credential_pool"]["openrouter"][0]["last_status"] is None


# ---------------------------------------------------------------- canary

async def test_no_key_on_any_profiles_screen(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    home(root, "team-a").config.write_text(
        f"model:\n  provider: openrouter\n  default: m\ndelegation:\n  provider: openrouter\n"
        f"  api_key: {SHARED}\n")
    app = root_app(root)
    seen: list[str] = []
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        seen.append(screen_text(app))
        await pilot.press("exclamation_mark")
        await pilot.pause()
        seen.append(app.screen.text)
        await pilot.press("escape")
        await on(app, pilot, row_key("team-a", "openrouter", "b2b2b2"))
        await pilot.press("V")
        await pilot.pause()
        assert isinstance(app.screen, ProfileConfigScreen)
        seen.append(app.screen.text)
        assert "delegation" in app.screen.text.lower() and "openrouter" in app.screen.text
        await pilot.press("escape", "P")
        await pilot.pause()
        seen.append(" ".join(str(o.prompt) for o in app.screen.query_one(OptionList)._options))
    blob = "\n".join(seen)
    assert not any(c in blob for c in CANARIES)
    # Negative control: the keys are there to be leaked (rows hold them).
    st = app.root_state.states["team-a"]
    assert SHARED in str(st.doc) and SHARED in home(root, "team-a").config.read_text()


async def test_canary_control_the_capture_sees_what_rows_show(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    write_store(home(root, "team-b"), make_store({
        "anthropic": [make_row("c3c3c3", label=f"x{SHARED[-6:]}", token=CANARIES[2])]}))
    app = root_app(root, clock=None)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        assert f"x{SHARED[-6:]}" in screen_text(app)   # a label is on screen, so a key would be
        assert NOW


async def test_a_key_added_to_one_profile_while_running_is_redacted(tmp_path: Path) -> None:
    """The root console keeps each unchanged profile's redactor; the profile written to gets
    a new one, so a key that arrived in it (here not key-shaped: only knowing it hides it)
    is redacted where the console shows text, e.g. a provider echoing it in a message."""
    root = make_root(tmp_path)
    canary = "canary-Secret-Added-While-Running-0077"
    app = root_app(root)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        before = shown.shown(f"echo {canary}")
        with transaction(home(root, "team-b")) as doc:
            pool = next(iter(doc["credential_pool"].values()))
            pool.append(make_row("d4d4d4", label="late", token=canary, priority=len(pool),
                                 last_error_message=f"bad key {canary}"))
        kept = dict(app._redactors)
        # What the watcher does for this write: team-b read again, the others as they were.
        app.accept_root(app.root_loader.load(RootChange({"team-b": {"auth.json"}})))
        await pilot.pause()
        assert app._redactors["team-a"] is kept["team-a"]
        assert app._redactors["team-b"] is not kept["team-b"]
        assert canary not in shown.shown(f"echo {canary}")
        assert canary not in screen_text(app)
        # Control: the redactor from before the write did not know the key.
        assert canary in before


async def test_demo_root_shows_three_teams_and_both_findings(tmp_path: Path) -> None:
    h = Home(tmp_path / "demo")
    write_store(h, make_store({"openrouter": [make_row("d1", token="sk-or-v1-demo-default-000000001")]}))
    seed_profiles(h, NOW)
    app = root_app(Root(h.root))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert profiles_shown(app) == ["default", "team-cheap", "team-local", "team-premium"]
        assert "primary custom:lab-gpu/llama-3.3-70b" in " ".join(table(app).row_texts(banner_key("team-local")))
        kinds = {f.kind for f in app.root_state.findings}
        assert {"shared_key", "shared_refresh_token"} <= kinds
        assert "⚑ shared" in screen_text(app) and "⚑ copied" in screen_text(app)
        assert not any(v in screen_text(app) for v in PROFILE_KEYS.values())
