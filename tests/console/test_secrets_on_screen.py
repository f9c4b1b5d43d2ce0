"""Any secret of the home, placed anywhere, never shows on a console screen (issue 19, by property).

The homes of tests/secret_homes.py (seven secrets of the home copied into labels, reasons,
messages, unknown fields, base URLs with userinfo, config.yaml and .env) are opened in the
console (pilot, headless): the dashboard narrow and wide, each row's detail, every tab of
the config view, the events log after an agent's bench that echoes the secrets. Always on
the plan with every secret in every slot, then on drawn plans. The text of
each screenshot holds the secrets only as fingerprints, and every base URL's password as
``***``. Negative control: with the redactor switched to identity, the screens show them.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings

from screens.detail import DetailScreen
from store.paths import Home
from store.pools import policy
from store.redaction.redact import Redactor
from store.transaction import transaction
from tests.secret_homes import Plan, fixed_plan, leaks, plant, secret_homes
from tests.tui_sample import NOW, app_for, key, tour_events_and_config
from tests.tui_sample import visible_text as screen_text
from tui.widgets import CredentialTable

pytestmark = pytest.mark.usefixtures("utc")

# Each example is a whole console tour (about 3 s on a quiet machine). The explicit example
# puts every secret in every slot (70 placements); the drawn ones add the forms (inside a
# sentence, a URL's userinfo, JSON) over random subsets: 3 of them by default, not 7.
EXAMPLES = max(3, int(os.environ.get("HERMES_FUZZ_EXAMPLES", "300")) // 100)


async def tour(home: Home, plan: Plan) -> dict[str, str]:
    seen: dict[str, str] = {}
    app = app_for(home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        seen["dashboard narrow"] = screen_text(app)
        await pilot.resize_terminal(230, 40)
        await pilot.press("w")
        await pilot.pause()
        seen["dashboard wide"] = screen_text(app)
        table = app.dashboard.query_one(CredentialTable)
        for rid in ("aaaaaa", "bbbbbb", "cccccc"):
            table.move_to_key(key("openrouter", rid))
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, DetailScreen)
            seen[f"detail {rid}"] = screen_text(app)
            await pilot.press("escape")
            await pilot.pause()
        with transaction(home) as doc:   # an agent benches a row with an answer that echoes them
            rows = doc["credential_pool"]["openrouter"]
            policy.mark_exhausted(rows, rows[0], NOW, code=402, reason=plan.first("last_error_reason", "quota"),
                                  message=" ".join(plan.secrets.values()))
        await tour_events_and_config(app, pilot, seen)
    return seen


def found(seen: dict[str, str], plan: Plan) -> dict[str, Any]:
    return {name: leaks(text, plan) for name, text in seen.items() if leaks(text, plan)}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(plan=secret_homes())
@example(plan=fixed_plan())
def test_no_screen_shows_a_secret(tmp_path_factory: pytest.TempPathFactory, plan: Plan) -> None:
    root = tmp_path_factory.mktemp("home")
    root.chmod(0o700)
    home = Home(root)
    plant(home, plan)
    seen = asyncio.run(tour(home, plan))
    assert found(seen, plan) == {}
    assert "bob:***@proxy.test" in seen["detail aaaaaa"]


def test_negative_control_without_the_redactor_the_screens_show_them(tmp_path_factory: pytest.TempPathFactory,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Redactor, "redact", lambda self, text: str(text))
    plan = fixed_plan()
    root = tmp_path_factory.mktemp("home")
    root.chmod(0o700)
    home = Home(root)
    plant(home, plan)
    got = found(asyncio.run(tour(home, plan)), plan)
    assert {"dashboard wide", "detail aaaaaa", "detail cccccc", "events"} <= set(got), sorted(got)
    assert "url" in got["detail aaaaaa"]
