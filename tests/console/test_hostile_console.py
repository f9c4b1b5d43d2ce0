"""The console's redaction and inert-text funnel (RELIABILITY 18-20), screen by screen.

A canary key sits in every store field (label, reason, failure reason, message, base URL,
unknown fields), in config.yaml and in a ``.env`` value a row borrows; a label holds an
escape sequence that would set the terminal title and clear the screen. Every screen is
opened through the Pilot (dashboard narrow and wide, detail, audit view, events, the
config tabs, the probe result, the add dialog with a key pasted in the label field, and
notifications), and the text of each screenshot is searched for any slice of a canary and
for raw control characters. The negative control switches the redactor to identity and
sees the canaries.
"""

from __future__ import annotations

import html
import json
import re
import secrets
from typing import Any

import pytest
from textual.widgets import Input

from screens.add_key import AddKeyScreen
from screens.detail import DetailScreen
from screens.probe_result import ProbeResultScreen
from store.ops.probe_report import ProbeReport, ProbeRow
from store.paths import Home
from store.redaction import redact
from store.transaction import transaction
from tests.conftest import make_row, make_store, write_store
from tests.tui_sample import NOW, tour_events_and_config
from tui.app.console import HermesAdminApp
from tui.services.clock import FakeClock
from tui.widgets import CredentialTable

pytestmark = pytest.mark.usefixtures("utc")

KEY = f"sk-or-v1-CANARYk{secrets.token_hex(16)}"        # the stored key (and echoed everywhere)
PLAIN = f"plainCANARYp{secrets.token_hex(12)}"           # a store secret with no key shape
CONFIG_KEY = f"localCANARYc{secrets.token_hex(12)}"      # config.yaml api_key, no key shape
ENV_KEY = f"envCANARYe{secrets.token_hex(12)}"           # .env value a row borrows
PASTED = f"sk-or-v1-CANARYq{secrets.token_hex(16)}"      # pasted into the add dialog's label
CANARIES = (KEY, PLAIN, CONFIG_KEY, ENV_KEY, PASTED)
EVIL = "evil\x1b]2;PWNED\x07\x1b[2J"


def hostile_doc() -> dict[str, Any]:
    echo = f"provider said: invalid key {KEY} / {PLAIN} / {ENV_KEY}"
    rows = [
        make_row("aaaaaa", label=KEY, priority=0, token=KEY, base_url=f"https://x.test/{KEY}",
                 extra_unknown={"note": KEY, "deep": [PLAIN]}),
        make_row("bbbbbb", label=EVIL, priority=1, token=PLAIN, last_status="exhausted",
                 last_status_at=NOW - 10, last_error_code=429, last_error_reason=f"why {KEY}",
                 last_error_message=echo, failure_reason=f"fail {KEY}", last_error_reset_at="NaN"),
        make_row("cccccc", label="OPENROUTER_API_KEY", priority=2, source="env:OPENROUTER_API_KEY",
                 last_status="exhausted", last_status_at=NOW - 5, last_error_code=401,
                 last_error_message=f"{ENV_KEY} {CONFIG_KEY}", custom_field=ENV_KEY),
    ]
    return make_store({"openrouter": rows})


def plant(home: Home) -> None:
    write_store(home, hostile_doc())
    home.config.write_text("credential_pool_strategies:\n  openrouter: round_robin\n"
                           "fallback_providers:\n  - provider: custom\n    model: m\n"
                           f"    base_url: http://localhost:1/v1\n    api_key: {CONFIG_KEY}\n")
    home.env.write_text(f"OPENROUTER_API_KEY={ENV_KEY}\n")
    entry = {"time": NOW, "user": "u", "host": "h", "via": "other-tool", "action": f"reset {EVIL}",
             "pool": "openrouter", "changes": [{"label": KEY, "id": "aaaaaa"}], "notes": [PLAIN]}
    home.audit.write_text(json.dumps(entry) + "\n")


def screen_text(app: HermesAdminApp) -> str:
    """The visible text of the current screen, from its screenshot (spans joined in order)."""
    svg = app.export_screenshot()
    return html.unescape("".join(re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S))).replace("\xa0", " ")


def leaks(text: str) -> list[str]:
    out = []
    for c in CANARIES:
        body = c.split("CANARY", 1)[1]
        if c in text or body[:10] in text or body[-10:] in text:
            out.append(c[:16])
    return out


async def tour(home: Home) -> dict[str, str]:
    """Open every screen and return {screen: text}."""
    seen: dict[str, str] = {}
    app = HermesAdminApp(home, clock=FakeClock(NOW), watch=False, tick=False)
    async with app.run_test(size=(80, 30)) as pilot:
        await pilot.pause()
        seen["dashboard narrow"] = screen_text(app)
        await pilot.resize_terminal(220, 40)
        await pilot.press("w")
        await pilot.pause()
        seen["dashboard wide"] = screen_text(app)
        table = app.dashboard.query_one(CredentialTable)
        for rid in ("aaaaaa", "bbbbbb", "cccccc"):
            table.move_to_key(f"cred\x1fopenrouter\x1f{rid}")
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, DetailScreen)
            seen[f"detail {rid}"] = screen_text(app)
            await pilot.press("escape")
            await pilot.pause()
        await pilot.press("L")
        await pilot.pause()
        seen["audit view"] = screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        with transaction(home) as doc:  # an agent benches a row: the events log says so
            doc["credential_pool"]["openrouter"][0].update(
                last_status="exhausted", last_status_at=NOW, last_error_code=402,
                last_error_reason=f"quota {KEY}", last_error_message=f"again {KEY}")
        await tour_events_and_config(app, pilot, seen, screen_text)
        await pilot.press("escape")
        await pilot.pause()
        report = ProbeReport("openrouter", NOW, True, [ProbeRow(
            "aaaaaa", KEY, 1, None, "unknown", f"answer {KEY} {ENV_KEY}", False, False, "cooling",
            f"unknown ({KEY})")])
        app.push_screen(ProbeResultScreen(report))
        await pilot.pause()
        seen["probe result"] = screen_text(app)
        app.pop_screen()
        await pilot.pause()
        app.push_screen(AddKeyScreen(["openrouter"], pool="openrouter"))
        await pilot.pause()
        label = app.screen.query_one("#add-label", Input)
        label.focus()
        await pilot.pause()
        await pilot.press(*PASTED)
        await pilot.pause()
        seen["add dialog, key pasted as label"] = screen_text(app)
        assert label.password, "a key-shaped label is masked at once"
        await pilot.press("ctrl+s")
        await pilot.pause()
        seen["add dialog, refused"] = screen_text(app)
        assert isinstance(app.screen, AddKeyScreen), "a key-shaped label is never saved"
        await pilot.press("escape")
        await pilot.pause()
        app.notify(f"something about {KEY} and {CONFIG_KEY} {EVIL}")
        app.notify(f"{ENV_KEY} {PLAIN}", severity="error")
        await pilot.pause()
        seen["notifications"] = screen_text(app)
    assert PASTED not in home.auth.read_text()
    return seen


async def test_no_canary_and_no_raw_control_on_any_screen(tmp_home: Home) -> None:
    plant(tmp_home)
    seen = await tour(tmp_home)
    found = {name: leaks(text) for name, text in seen.items() if leaks(text)}
    assert not found, found
    raw = {name for name, text in seen.items() if re.search(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e]", text)}
    assert not raw, raw
    assert "evil\\x1b]2;PWNED" in seen["detail bbbbbb"]
    assert "sk-or-…" in seen["detail aaaaaa"]  # keys show as fingerprints
    assert "data error" in seen["detail bbbbbb"] and "'NaN'" in seen["detail bbbbbb"]


async def test_negative_control_without_the_funnel_the_canaries_show(tmp_home: Home,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redact.Redactor, "redact", lambda self, text: str(text))
    monkeypatch.setattr("tui.text.shown.escape_controls", lambda text: text)
    plant(tmp_home)
    seen = await tour(tmp_home)
    found = {name: leaks(text) for name, text in seen.items() if leaks(text)}
    for name in ("dashboard wide", "detail aaaaaa", "detail bbbbbb", "audit view", "events",
                 "probe result", "notifications"):
        assert name in found, (name, sorted(found))
    assert any("\x1b" in text for text in seen.values())
