"""The console's fleet view (`hermes-admin --fleet URL`) against a real redis-server.

Another host is simulated with a FleetClient of its own (heartbeat + mark), so what the
view shows comes from Redis only. Every wait is bounded polling with ``pilot.pause``.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Callable

import pytest

from screens import fleet_view as fv
from screens.confirm import ConfirmScreen
from screens.cooldown import CooldownScreen
from screens.fleet_view import FleetScreen
from store.fleet import keys as fkeys
from store.fleet.client import FleetClient, connect
from tests.conftest import run_cli
from tests.fleet_helpers import BOUND, KEY_1, KEY_2, SECRET, RedisServer, free_port, make_home
from tests.tui_sample import audit_lines, notes
from tui.app.console import HermesAdminApp
from tui.services.fleet_feed import FleetConfig, FleetLink
from tui.text.sentences import READ_ONLY

pytestmark = pytest.mark.slow

FP_1 = fkeys.fleet_fingerprint(SECRET, "token:" + KEY_1)
FP_2 = fkeys.fleet_fingerprint(SECRET, "token:" + KEY_2)
PASSWORD = "pw-CANARY-fleetview-0123456789"


def other_host(url: str, name: str = "host-b", holders: dict[str, int] | None = None) -> FleetClient:
    c = FleetClient(connect(url), name)
    c.heartbeat(holders if holders is not None else {FP_1: 7, FP_2: 1}, interval=2.0,
                started_at=c.server_time(), seen_version=c.version(), offset=0.0)
    return c


def fleet_app(home: Any, url: str, **kw: Any) -> HermesAdminApp:
    cfg = FleetConfig(url=url, host="host-a", secret=kw.pop("secret", SECRET), interval=0.2)
    return HermesAdminApp(home, watch=False, tick=False, fleet=cfg, **kw)


def on_screen(app: Any, cls: type) -> bool:
    """*cls* is on top and mounted: a question answers only to keys pressed after that."""
    return isinstance(app.screen, cls) and app.screen.shown_at is not None


async def until(pilot: Any, cond: Callable[[], bool], what: str, bound: float = BOUND) -> None:
    deadline = time.monotonic() + bound
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {bound}s: {what}")
        await pilot.pause(0.05)


def view(app: HermesAdminApp) -> FleetScreen:
    assert isinstance(app.screen, FleetScreen), type(app.screen)
    return app.screen


async def select(app: HermesAdminApp, pilot: Any, fp: str) -> None:
    table = view(app).table
    table.move_cursor(row=table.get_row_index(fp))
    await pilot.pause()


async def test_a_bench_from_another_host_shows_with_its_host_and_since(tmp_path, redis_server):
    home = make_home(tmp_path, "a")
    b = other_host(redis_server.url)
    b.mark(FP_1, until_in=600, code=429, reason="rate_limit_exceeded")
    since = b.states([FP_1])[FP_1].since
    app = fleet_app(home, redis_server.url)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: FP_1 in view(app)._cells, "the benched key listed")
        screen = view(app)
        cells = screen._cells[FP_1]
        assert cells["status"] == "◐ benched"
        assert cells["by"] == "host-b"
        assert cells["since"] == time.strftime("%H:%M:%S", time.localtime(since))
        assert re.fullmatch(r"(9m \d{1,2}s|10m)", cells["left"]), cells["left"]   # a countdown
        assert cells["key"] == fkeys.short(FP_1)[:11] + " one"     # this host's label
        assert "host-b 7" in cells["holders"]
        assert screen._cells[FP_2]["status"] == "● ok" and screen._cells[FP_2]["by"] == "—"
        assert "host-b" in screen.text and "heartbeat" in screen.text
        assert app.focused is screen.table                        # focus lands on the table
        await pilot.press("escape")
        assert not isinstance(app.screen, FleetScreen)            # Esc backs out
        await pilot.press("F")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen), "F reopens the view")
        await pilot.press("q")                                     # q backs out, does not quit
        await pilot.pause()
        assert not isinstance(app.screen, FleetScreen) and app.is_running


async def test_redis_unreachable_says_disconnected_since_and_disables_actions(tmp_path, redis_server):
    home = make_home(tmp_path, "a")
    other_host(redis_server.url)
    app = fleet_app(home, redis_server.url)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: FP_1 in view(app)._cells, "connected first")
        assert view(app).check_action("bench", ()) is True
        redis_server.kill()
        await until(pilot, lambda: view(app).down is not None, "the view noticing Redis is gone")
        screen = view(app)
        assert "fleet: disconnected since " in screen.text
        assert time.strftime("%H:%M", time.localtime(screen.down.since)) in screen.text
        assert FP_1 in screen._cells                               # the last view stays
        assert screen.check_action("bench", ()) is None and screen.check_action("reset", ()) is None
        await pilot.press("b")
        await pilot.pause()
        assert not isinstance(app.screen, CooldownScreen)
        await pilot.press("escape")
        assert app.dashboard is app.screen                         # the local console still works
        redis_server.start()
        await pilot.press("F")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen) and view(app).down is None,
                    "reconnected after Redis came back")


async def test_no_redis_at_all_from_the_start(tmp_path):
    home = make_home(tmp_path, "a")
    app = fleet_app(home, f"redis://127.0.0.1:{free_port()}/0")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: view(app).down is not None, "disconnected state")
        assert "fleet: disconnected since" in view(app).text


async def test_bench_and_reset_fleet_wide_reach_the_store_and_are_audited(tmp_path, redis_server):
    home = make_home(tmp_path, "a")
    other_host(redis_server.url)
    probe = FleetClient(connect(redis_server.url), "probe")
    app = fleet_app(home, redis_server.url)
    toasts: list[str] = []   # every notification, kept (the app's own list drops expired toasts)
    notify = app.notify
    app.notify = lambda message, **kw: (toasts.append(message), notify(message, **kw))[1]  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: FP_1 in view(app)._cells, "keys listed")
        await select(app, pilot, FP_1)
        await pilot.press("b")
        await until(pilot, lambda: on_screen(app, CooldownScreen), "the duration prompt")
        await pilot.press(*"15m", "enter")
        await until(pilot, lambda: probe.states([FP_1]).get(FP_1) is not None
                    and probe.states([FP_1])[FP_1].status == "exhausted", "the bench in Redis")
        st = probe.states([FP_1])[FP_1]
        assert st.host == "host-a" and 800 < st.until - st.since <= 900.5   # 15m, less the time to apply
        await until(pilot, lambda: view(app)._cells[FP_1]["status"] == "◐ benched", "the view updating")
        await until(pilot, lambda: any(n.startswith("bench fl:") and "fleet-wide: applied" in n for n in toasts),
                    "the bench toast")
        await select(app, pilot, FP_1)
        await pilot.press("r")
        await until(pilot, lambda: on_screen(app, ConfirmScreen), "the reset question")
        await pilot.press("y")
        await until(pilot, lambda: probe.states([FP_1])[FP_1].status == "ok", "the reset in Redis")
        await until(pilot, lambda: any(n.startswith("reset fl:") and "fleet-wide: applied" in n for n in toasts),
                    "the reset toast")
    audited = [json.dumps(line) for line in audit_lines(home)]
    assert any("fleet-bench" in a for a in audited) and any("fleet-reset" in a for a in audited)
    assert not any(KEY_1 in a for a in audited)


@pytest.mark.parametrize("read_only", [True, False])  # False: the control, the prompt opens
async def test_read_only_disables_fleet_actions(tmp_path, redis_server, read_only):
    home = make_home(tmp_path, "a")
    other_host(redis_server.url)
    app = fleet_app(home, redis_server.url, read_only=read_only)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: FP_1 in view(app)._cells, "keys listed")
        await select(app, pilot, FP_1)
        assert view(app).check_action("bench", ()) is (None if read_only else True)
        await pilot.press("b")
        await pilot.pause()
        assert isinstance(app.screen, CooldownScreen) is (not read_only)
        assert (READ_ONLY in notes(app)) is read_only
        if read_only:
            await pilot.press("r")
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen)
    if read_only:
        assert FleetClient(connect(redis_server.url), "p").states([FP_1]) == {}


@pytest.mark.parametrize("leak_url", [False, True])  # True: the negative control
async def test_no_key_and_no_redis_password_on_any_screen(tmp_path, monkeypatch, leak_url):
    d = tmp_path / "redis"
    d.mkdir()
    srv = RedisServer(d, password=PASSWORD)
    try:
        if leak_url:   # a view that printed the raw URL must be caught
            monkeypatch.setattr(FleetLink, "safe_url", property(lambda self: self.config.url))
        home = make_home(tmp_path, "a")
        b = other_host(srv.url)
        b.mark(FP_1, until_in=600, code=429, reason="rate_limit_exceeded", message="slow down")
        app = fleet_app(home, srv.url)
        shots: list[str] = []
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: FP_1 in view(app)._cells, "keys listed")
            shots += [app.export_screenshot(), view(app).text]
            await select(app, pilot, FP_1)
            await pilot.press("b")
            await until(pilot, lambda: on_screen(app, CooldownScreen), "prompt")
            shots.append(app.export_screenshot())
            await pilot.press("escape", "r")
            await until(pilot, lambda: on_screen(app, ConfirmScreen), "question")
            shots += [app.export_screenshot(), app.screen.text]
            await pilot.press("n")
            srv.kill()
            await until(pilot, lambda: view(app).down is not None, "disconnected")
            shots += [app.export_screenshot(), view(app).text]
        text = "\n".join(shots)
        assert "127.0.0.1" in text
        for key in (KEY_1, KEY_2, SECRET.decode()):
            assert key not in text
        assert (PASSWORD in text) is leak_url
    finally:
        srv.stop()


@pytest.mark.parametrize("escape", [True, False])  # False: the control, the raw text would reach the screen
async def test_text_from_other_hosts_is_inert(tmp_path, redis_server, monkeypatch, escape):
    if not escape:
        monkeypatch.setattr(fv, "inert", lambda text: text)
    home = make_home(tmp_path, "a")
    b = other_host(redis_server.url)
    b.mark(FP_1, until_in=600, code=429, reason="slow\x1b]0;pwned\x07down")
    app = fleet_app(home, redis_server.url)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: FP_1 in view(app)._cells, "keys listed")
        await select(app, pilot, FP_1)
        detail = str(view(app).query_one("#fleet-detail").render())
    assert ("\x1b" in detail) is (not escape)
    assert ("slow\\x1b]0;pwned\\x07down" in detail) is escape


@pytest.mark.parametrize("args, field", [
    (["--fleet", f"redis://:{PASSWORD}@127.0.0.1:notaport/0"], "--fleet"),
    (["--fleet", f"http://:{PASSWORD}@127.0.0.1/0"], "--fleet"),
    (["--fleet", "redis://127.0.0.1/0", "--fleet-name", "bad name"], "--fleet-name"),
])
def test_bad_fleet_options_exit_2_naming_the_option_without_the_password(tmp_home, args, field):
    proc = run_cli(tmp_home, *args, ok=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"hermes-admin: error: {field}:")
    assert PASSWORD not in proc.stdout + proc.stderr


async def test_f_without_fleet_says_how_to_get_one(tmp_path):
    home = make_home(tmp_path, "a")
    app = HermesAdminApp(home, watch=False, tick=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("F")
        await pilot.pause()
        assert app.screen is app.dashboard
        assert any("--fleet URL" in n for n in notes(app))


async def test_malformed_hosts_and_states_show_what_is_readable_and_name_the_rest(tmp_path, redis_server):
    home = make_home(tmp_path, "a")
    b = other_host(redis_server.url)
    b.mark(FP_2, until_in=600, code=429, reason="rate_limit_exceeded")
    r = connect(redis_server.url)
    ns = "hermes-admin:fleet:"
    r.sadd(ns + "hosts", "host-c")
    r.hset(ns + "host:host-c", mapping={"heartbeat_at": "nan", "keys": "abc", "interval": "1e300"})
    r.hset(ns + "s:" + FP_1, mapping={"status": "exhausted", "until": "1e300", "since": "inf", "version": "1"})
    r.hset(ns + "h:" + FP_1, "host-b", "lots")
    app = fleet_app(home, redis_server.url)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: FP_2 in view(app)._cells and FP_1 in view(app)._cells, "keys listed")
        screen = view(app)
        assert "connecting" not in screen.status_text and "unreadable" in screen.status_text
        assert screen._cells[FP_2]["status"] == "◐ benched"                  # the readable key
        assert screen._cells[FP_1]["status"] == "⚠ unread"                   # the forged one, named
        await select(app, pilot, FP_1)
        detail = str(screen.query_one("#fleet-detail").render())
        assert "unreadable: until" in detail and "since" in detail
        hosts = str(screen.query_one("#fleet-hosts").render())
        line = next(li for li in hosts.splitlines() if "host-c" in li)
        assert "⚠ unreadable:" in line and "heartbeat_at: 'nan'" in line and "keys:" in line
        assert screen.check_action("bench", ()) is True                      # the view still works


@pytest.mark.parametrize("old_loop", [False, True])  # True: the control, errors that were not Redis's escaped
async def test_the_view_leaves_connecting_once_it_has_an_answer_or_an_error(tmp_path, redis_server, monkeypatch,
                                                                             old_loop):
    from store.fleet import channel
    from tui.services import fleet_feed

    def broken(self):
        raise ValueError(f"could not convert string to float: '{KEY_1}'")   # a reader's bug, quoting Redis

    monkeypatch.setattr(FleetClient, "snapshot", broken)
    ended = []                                      # the feed worker returned or raised
    run = fleet_feed.FleetLink.run

    def recorded(self, stop, post):
        try:
            run(self, stop, post)
        finally:
            ended.append(True)
    monkeypatch.setattr(fleet_feed.FleetLink, "run", recorded)
    if old_loop:
        def only_redis_errors(subscribe, stop, *, on_error, **kw):
            import redis

            def on_redis_error(exc):
                if not isinstance(exc, (redis.RedisError, OSError)):
                    raise exc
                on_error(exc)
            channel.follow_channel(subscribe, stop, on_error=on_redis_error, **kw)
        monkeypatch.setattr(fleet_feed, "follow_channel", only_redis_errors)
    home = make_home(tmp_path, "a")
    app = fleet_app(home, redis_server.url)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: view(app).down is not None or ended, "an answer, or the feed gone")
        await pilot.pause()
        text = view(app).status_text
        if old_loop:
            assert text.startswith("fleet: connecting to")                 # forever, as the tester found
        else:
            assert "cannot read the fleet's answer" in text and "ValueError" in text
            assert KEY_1 not in view(app).text                             # the type only, never its text
