"""`hermes-admin web` in a real browser: Debian's chromium, driven by playwright.

The installed `hermes-admin web` serves a home with a canary key; the page's socket frames
are kept and fed to a terminal emulator, so the tests read what the page drew. The writes
are checked in auth.json and the audit log.

Negative controls: a plain textual-serve console (no focus fix) shows the first-key bug;
a server with the Origin check off lets a page on another loopback port drive the console.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterator

import pytest

from store.paths import Home
from tests.terminal.seeds import primary_and_benched_backup
from tests.web import browser
from tests.web.browser import InProcess, PageScreen, chromium, start_web, wait_until
from tui.text.sentences import READ_ONLY_WEB

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.timeout(150),
    pytest.mark.skipif(not browser.available(), reason="chromium or playwright is not installed"),
]

CANARY_A = "sk-or-v1-0123456789abcdefWEBcanaryA1"
CANARY_B = "sk-or-v1-0123456789abcdefWEBcanaryB2"
SECRETS = (CANARY_A, CANARY_B, "WEBcanary")
VIEW = {"width": 1200, "height": 700}


@pytest.fixture(scope="module")
def chrome() -> Iterator[Any]:
    """One headless chromium for the module: its start and stop took 2-3 s a test. Each trial
    opens its own contexts (no cookie or page is shared) and closes them (:func:`own_contexts`)."""
    with chromium() as browser_:
        yield browser_


@contextmanager
def own_contexts(browser_: Any) -> Iterator[Any]:
    """The shared browser for one trial; on exit every context opened in it is closed,
    before the server it talked to stops (as closing a browser of its own did)."""
    try:
        yield browser_
    finally:
        for context in list(browser_.contexts):
            context.close()


def seed(home: Home) -> None:
    primary_and_benched_backup(home, CANARY_A, CANARY_B)


def backup(home: Home) -> dict:
    doc = json.loads(home.auth.read_text(encoding="utf-8"))
    return next(r for r in doc["credential_pool"]["openrouter"] if r["id"] == "bbbbbb")


def no_secret(*texts: str) -> None:
    for text in texts:
        for s in SECRETS:
            assert s not in text


def open_console(browser_, url: str) -> tuple[object, PageScreen]:
    page = browser_.new_page(**({"viewport": VIEW} if hasattr(browser_, "new_context") else {}))
    screen = PageScreen().attach(page)
    response = page.goto(url)
    assert response is not None and response.status == 200
    screen.wait_for(page, "backup")
    return page, screen


def test_token_link_loads_the_console_and_r_y_resets_a_cooling_row(tmp_home: Home, tmp_path, chrome) -> None:
    seed(tmp_home)
    with start_web(tmp_home, tmp_path, "--allow-writes") as web, own_contexts(chrome) as b:
        link = web.first_link()
        page, screen = open_console(b, link)
        # The token was traded for a cookie and is gone from the address bar.
        assert "token" not in page.url and page.url.rstrip("/").endswith(str(web.port))
        assert page.title().startswith("hermes-admin")
        cookie = next(c for c in page.context.cookies() if c["name"] == "hermes_admin_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
        assert "cooling" in screen.line_with("backup")
        # The first keys work: Down moves the cursor to backup, r asks about backup.
        page.keyboard.press("ArrowDown")
        page.keyboard.press("r")
        screen.wait_for(page, "Reset openrouter #2 backup")
        page.keyboard.press("y")
        wait_until(lambda: backup(tmp_home)["last_status"] is None, 15, "the reset in auth.json")
        screen.wait_for(page, "→ ok")      # the flash line: "backup: cooling 59m → ok"
        # Through the page's loop, not a sleep: frames arrive only while playwright runs a call.
        screen.until(page, lambda: "● ok" in screen.line_with("backup"), 15, "backup shown ok on the page")
        page.screenshot(path=str(tmp_path / "after-reset.png"))
        entry = json.loads(tmp_home.audit.read_text().splitlines()[-1])
        assert entry["via"] == "web" and entry["remote"] == "127.0.0.1" and entry["action"] == "reset"
        history = json.loads((tmp_home.root / "hermes-admin-history" / f"{entry['history']}.json").read_text())
        assert history["via"] == "web" and history["remote"] == "127.0.0.1"
        html = page.content()
        page.close()
        # Closing the tab ends the console's process.
        wait_until(lambda: not web.children(), 15, "the console process to end after the tab closed")
        no_secret(screen.wire(), html, web.log(), page.url, *screen.urls, link,
                  tmp_home.audit.read_text())


def test_read_only_by_default_the_same_keys_write_nothing_and_say_why(tmp_home: Home, tmp_path, chrome) -> None:
    seed(tmp_home)
    before = tmp_home.auth.read_bytes()
    with start_web(tmp_home, tmp_path) as web, own_contexts(chrome) as b:
        page, screen = open_console(b, web.first_link())
        assert "READ-ONLY" in screen.text()
        page.keyboard.press("ArrowDown")
        page.keyboard.press("r")
        screen.wait_for(page, READ_ONLY_WEB[:40])
        page.keyboard.press("y")
        page.keyboard.press("c")
        screen.wait_for(page, "READ-ONLY")
        assert tmp_home.auth.read_bytes() == before
        assert not tmp_home.audit.exists()
        no_secret(screen.wire(), page.content(), web.log())


def test_a_link_works_once_a_second_context_is_refused(tmp_home: Home, tmp_path, chrome) -> None:
    seed(tmp_home)
    with start_web(tmp_home, tmp_path) as web, own_contexts(chrome) as b:
        link = web.first_link()
        open_console(b, link)
        other = b.new_context().new_page()
        response = other.goto(link)
        assert response is not None and response.status == 403
        assert "works once" in other.inner_text("body")
        # The server printed a fresh link for the next browser: it works, once.
        fresh = wait_until(lambda: web.links()[1:], 10, "a second link")[0]
        assert fresh != link
        page, screen = open_console(b.new_context(), fresh)
        assert "backup" in screen.text()
        assert len(web.children()) == 2
        no_secret(web.log())


def _focus_trial(chrome: Any, console: Any) -> str:
    """Down then r on a fresh page of *console*: the reset question the page shows."""
    with InProcess(console), own_contexts(chrome) as b:
        page = b.new_page(viewport=VIEW)
        screen = PageScreen().attach(page)
        page.goto(console.printed[0])
        screen.wait_for(page, "backup")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("r")
        return screen.wait_for(page, "Reset openrouter")


def test_the_first_key_moves_the_cursor(tmp_home: Home, chrome) -> None:
    from tui.web.server import WebConsole, WebOptions

    seed(tmp_home)
    opts = WebOptions(port=browser.free_port(), home=str(tmp_home.root), allow_writes=True)
    shown = _focus_trial(chrome, WebConsole(opts))
    assert "Reset openrouter #2 backup" in shown


def test_control_a_plain_textual_serve_console_loses_the_first_key(tmp_home: Home, chrome) -> None:
    """Negative control: the plain console under textual-serve (the app's blur guard off):
    Textual's web driver blurs the app at start, Down moves nothing, and r asks about row 1."""
    import shlex
    import sys

    from tui.web.server import WebConsole, WebOptions

    class Plain(WebConsole):
        def command_for(self, request):
            return shlex.join([sys.executable, "-m", "tui.cli", "--home", str(tmp_home.root)])

    seed(tmp_home)
    opts = WebOptions(port=browser.free_port(), home=str(tmp_home.root))
    shown = _focus_trial(chrome, Plain(opts))
    assert "Reset openrouter #1 primary" in shown


ATTACK = """<!DOCTYPE html><title>elsewhere</title><script>
window.result = {ws: "pending", post: "pending"};
const ws = new WebSocket("ws://127.0.0.1:%(port)d/ws?width=80&height=24");
ws.onopen = () => { window.result.ws = "open";
  // Down and r once the console has drawn its rows (the page cannot see when: it waits),
  // then "y" again and again: a confirmation only takes a key typed after it showed.
  setTimeout(() => {
    ws.send(JSON.stringify(["stdin", "\\u001b[B"])); ws.send(JSON.stringify(["stdin", "r"]));
    let n = 0;
    const t = setInterval(() => { ws.send(JSON.stringify(["stdin", "y"])); if (++n > 20) clearInterval(t); }, 500);
  }, 3000);
};
ws.onerror = () => { window.result.ws = "refused"; };
fetch("http://127.0.0.1:%(port)d/ws", {method: "POST", body: "y", mode: "no-cors",
      credentials: "include", headers: {"Content-Type": "text/plain"}})
  .then(r => { window.result.post = "sent"; }).catch(() => { window.result.post = "failed"; });
</script>"""


def _attacker(port: int):
    """Another origin on loopback (its own port) serving a page that goes for the console."""
    from aiohttp import web

    app = web.Application()

    async def page(request):
        return web.Response(text=ATTACK % {"port": port}, content_type="text/html")

    app.add_routes([web.get("/", page)])
    return app


def _hijack_trial(chrome: Any, tmp_home: Home, *, check_origin: bool):
    from aiohttp import web

    from tui.web.server import WebConsole, WebOptions

    seed(tmp_home)
    port = browser.free_port()
    console = WebConsole(WebOptions(port=port, home=str(tmp_home.root), allow_writes=True),
                         check_origin=check_origin)
    evil_port = browser.free_port()

    class Evil:
        def __init__(self, console):
            self.console = console
            self.printed = ["ready"]

        async def start(self):
            runner = web.AppRunner(_attacker(port))
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", evil_port).start()
            return runner

    with InProcess(console), InProcess(Evil(console)), own_contexts(chrome) as b:
        context = b.new_context()
        own = context.new_page()
        screen = PageScreen().attach(own)
        own.goto(console.printed[0])            # the operator's session: the cookie is in this browser
        screen.wait_for(own, "backup")
        started = console.started
        evil = context.new_page()
        evil.goto(f"http://127.0.0.1:{evil_port}/")
        result = wait_until(lambda: (r := evil.evaluate("window.result"))["ws"] != "pending"
                            and r["post"] != "pending" and r, 15, "the other page's attempts")
        if result["ws"] == "open":
            wait_until(lambda: backup(tmp_home)["last_status"] is None, 15, "the hijacked write")
        return console, started, result


def test_another_loopback_origin_gets_403_for_socket_and_post(tmp_home: Home, chrome) -> None:
    console, started, result = _hijack_trial(chrome, tmp_home, check_origin=True)
    assert result["ws"] == "refused"
    assert console.started == started            # no console process for the other page
    assert console.gate.refused >= 2             # the upgrade and the POST, both 403
    assert backup(tmp_home)["last_status"] == "exhausted"


def test_control_with_the_origin_check_off_the_hijack_works(tmp_home: Home, chrome) -> None:
    console, started, result = _hijack_trial(chrome, tmp_home, check_origin=False)
    assert result["ws"] == "open"
    assert console.started == started + 1
    assert backup(tmp_home)["last_status"] is None   # the other page reset the key


def test_an_idle_session_ends_and_the_page_says_so(tmp_home: Home, tmp_path, chrome) -> None:
    seed(tmp_home)
    with start_web(tmp_home, tmp_path, "--idle-timeout", "4s") as web, own_contexts(chrome) as b:
        page = b.new_page(viewport=VIEW)
        screen = PageScreen().attach(page)
        assert page.goto(web.first_link()).status == 200
        # No key for 4 s: the session ends, its socket closes with the reason, the page shows it.
        page.wait_for_selector("body.-closed", timeout=40_000)
        assert "idle for 4 s" in page.inner_text("#why")
        assert screen.urls                      # the socket had opened before it was closed
        wait_until(lambda: not web.children(), 15, "the console process to end")
        # The session is over: a reload is refused and says what to do.
        response = page.reload()
        assert response is not None and response.status == 403
        assert "hermes-admin web" in page.inner_text("body")
