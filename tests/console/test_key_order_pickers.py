"""The strategy picker and the proxy's route chooser answer only to keys pressed after they
are on screen, as the confirmations do (tui.widgets.guarded.GuardedModal; issue 28).

``s`` ``down`` ``enter`` in one burst on the dashboard opens the picker and chooses nothing
(config.yaml untouched, nothing audited); ``p`` ``down`` ``enter`` in the proxy panel opens
the route chooser and pins nothing. A deliberate ``down`` ``enter`` afterwards chooses.
Controls: the guard off (``answers_to`` always true), the same burst chooses (the strategy
is written; the chooser is answered and the pin's confirmation opens); the whole mechanism
off (``HERMES_ADMIN_KEY_ORDER=off``, Textual's dispatch), the same: the burst chooses.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual import events

from screens.confirm import ConfirmScreen
from screens.proxy_view import ProxyScreen, RouteScreen
from screens.strategy import StrategyScreen
from store.paths import Home
from store.proxy import CLIENT_KEYS_FILE
from store.proxy.observing.stats import write_status
from tests.console.proxy_panel_helpers import CLIENT_KEY, SIZE, status
from tests.proxy_helpers import seed
from tests.tui_sample import app_for, audit_lines, settle, write_sample
from tui.app.key_order import ENV
from tui.demo.fake_provider import FakeProvider
from tui.widgets.guarded import GuardedModal

pytestmark = pytest.mark.usefixtures("utc")


async def burst(app: Any, pilot: Any, keys: list[tuple[str, str | None]]) -> None:
    """Every key posted before the app handles the first (one read of the terminal), then
    bounded pauses until each has gone."""
    for key, ch in keys:
        app.post_message(events.Key(key, ch))
    for _ in range(200):
        await pilot.pause()
        if not (app.key_order.token or app.key_order.waiting):
            break
    await settle(app, pilot)


PICK = [("down", None), ("enter", "\r")]


@pytest.mark.parametrize("mode", ["guarded", "control-guard-off", "control-order-off"])
async def test_the_strategy_picker_takes_no_key_of_the_burst_that_opened_it(
        tmp_home: Home, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    write_sample(tmp_home)
    if mode == "control-guard-off":
        monkeypatch.setattr(GuardedModal, "answers_to", lambda self, t: True)
    if mode == "control-order-off":
        monkeypatch.setenv(ENV, "off")
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        before = tmp_home.config.read_bytes() if tmp_home.config.exists() else None
        await burst(app, pilot, [("s", "s"), *PICK])
        if mode != "guarded":
            # Without the guard (or the whole mechanism) the burst's down+enter chose a
            # strategy, and it was written.
            assert [e["action"] for e in audit_lines(tmp_home)] == ["config.strategy"]
            return
        written = tmp_home.config.read_bytes() if tmp_home.config.exists() else None
        assert written == before and audit_lines(tmp_home) == []
        assert isinstance(app.screen, StrategyScreen) and app.key_order.dropped == ["down", "enter"]
        await pilot.press("down", "enter")          # deliberate: the picker is on screen
        await settle(app, pilot)
        assert [e["action"] for e in audit_lines(tmp_home)] == ["config.strategy"]


@pytest.fixture
def seeded(tmp_home: Home) -> Home:
    with FakeProvider() as fake:     # only for the rows' base_url; nothing calls it
        seed(tmp_home, fake)
    (tmp_home.root / CLIENT_KEYS_FILE).write_text(CLIENT_KEY + "\n")
    write_status(tmp_home, status())
    return tmp_home


@pytest.mark.parametrize("mode", ["guarded", "control-guard-off", "control-order-off"])
async def test_the_route_chooser_takes_no_key_of_the_burst_that_opened_it(
        seeded: Home, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    if mode == "control-guard-off":
        monkeypatch.setattr(GuardedModal, "answers_to", lambda self, t: True)
    if mode == "control-order-off":
        monkeypatch.setenv(ENV, "off")
    app = app_for(seeded)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await settle(app, pilot)
        assert isinstance(app.screen, ProxyScreen)
        await burst(app, pilot, [("p", "p"), *PICK])
        if mode != "guarded":
            # The burst chose a route: the pin's confirmation is up (its own guard holds it).
            assert isinstance(app.screen, ConfirmScreen)
            return
        assert isinstance(app.screen, RouteScreen) and app.key_order.dropped == ["down", "enter"]
        await pilot.press("down", "enter")           # deliberate
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
