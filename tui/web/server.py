"""The server of ``hermes-admin web``: textual-serve's, behind the gate of :mod:`tui.web.access`.

:class:`WebConsole` extends ``textual_serve.server.Server`` through its public API: it
builds its own aiohttp application (the gate as middleware, our page, textual-serve's
static files) and its own WebSocket handler, which starts one console process per
connection through textual-serve's ``AppService`` (``python -m tui.web.child`` with the
browser's address, read-only unless ``--allow-writes``), and:

- forwards keys, pastes and resizes; never forwards the browser's *blur*: a page that
  loses focus is not a terminal that does, and a blurred Textual app drops its focused
  widget (a plain textual-serve setup got a blur at start, so ``Down`` moved nothing
  while ``r`` acted on a row the operator did not choose);
- counts a key, a paste or a resize as activity; a session idle for ``idle`` seconds
  ends, its process with it, and the page says why;
- stops the process when the socket closes (the tab was closed or reloaded).

The access log never holds a query string (the first URL holds the token).
"""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
import signal
import sys
from dataclasses import dataclass

from aiohttp import WSMsgType, web
from aiohttp.abc import AbstractAccessLogger
from textual_serve.app_service import AppService
from textual_serve.server import Server

from tui.text.ready import say_ready
from tui.web.access import TOKEN_PARAM, Gate, Served, Session, Sessions, Tokens
from tui.web.page import console_page

log = logging.getLogger("hermes-admin.web")

MAX_MESSAGE = 64 * 1024          # one key, paste or resize: a paste beyond this is refused
ENDED_CLOSE = 4000               # the WebSocket close code of a session ended here (the page shows why)


@dataclass(frozen=True)
class WebOptions:
    """What ``hermes-admin web`` was asked for."""

    host: str = "127.0.0.1"
    port: int = 8765
    public_url: str | None = None
    allow_writes: bool = False
    idle: float = 15 * 60.0
    max_sessions: int = 4
    home: str | None = None          # exactly one of home and root, as the child takes them
    root: str | None = None
    lock_timeout: float | None = None
    title: str = "hermes-admin"


class PathOnlyLog(AbstractAccessLogger):
    """One line per request: method, path (no query: it may hold the token), status."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info("%s %s %s %s", request.remote, request.method, request.path, response.status)


def child_command(opts: WebOptions, remote: str) -> str:
    """The shell command textual-serve runs for one session's console (``exec``: one process)."""
    argv = [sys.executable, "-m", "tui.web.child", "--remote", remote]
    if opts.root:
        argv += ["--root", opts.root]
    elif opts.home:
        argv += ["--home", opts.home]
    if opts.lock_timeout is not None:
        argv += ["--lock-timeout", repr(opts.lock_timeout)]
    if not opts.allow_writes:
        argv.append("--read-only")
    return "exec " + shlex.join(argv)


def _size(text: str | None, default: int, top: int) -> int:
    try:
        return max(2, min(top, int(text or default)))
    except ValueError:
        return default


class WebConsole(Server):
    """textual-serve's Server with the gate, our page and one console process per socket."""

    def __init__(self, opts: WebOptions, *, check_origin: bool = True) -> None:
        self.opts = opts
        self.served = Served.of(opts.host, opts.port, opts.public_url)
        super().__init__(child_command(opts, "—"), host=opts.host, port=opts.port, title=opts.title,
                         public_url=opts.public_url or self.served.base_url)
        self.tokens = Tokens()
        self.sessions = Sessions(idle=opts.idle, limit=opts.max_sessions)
        self.gate = Gate(self.served, self.tokens, self.sessions, check_origin=check_origin,
                         on_redeem=self._next_link)
        self.started = 0                 # console processes started (tests read it)
        self.printed: list[str] = []     # the links printed, newest last
        self._reaper: asyncio.Task[None] | None = None
        self._withheld = False           # a link is due as soon as a session ends
        self.out = sys.stdout

    # ------------------------------------------------------------ links
    def link(self) -> str:
        """A new one-time link (printed by the caller, never logged)."""
        return f"{self.public_url}/?{TOKEN_PARAM}={self.tokens.issue()}"

    def _next_link(self) -> None:
        if self.sessions.full():
            self._withheld = True
            self._say(f"{len(self.sessions)} session(s) open: no new link until one ends (--max-sessions)")
            return
        self._withheld = False
        self._say(f"link for another browser (works once): {self._print_link()}")

    def _print_link(self) -> str:
        url = self.link()
        self.printed.append(url)
        return url

    def _say(self, line: str) -> None:
        self.out.write(f"hermes-admin web: {line}\n")
        self.out.flush()

    # ------------------------------------------------------------ app
    def make_app(self) -> web.Application:
        """The aiohttp application: gate first, then the page, the socket and the statics."""
        app = web.Application(middlewares=[self.gate.middleware])
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws", self.handle_websocket, name="websocket"),
            web.get("/download/{key}", self.handle_download, name="download"),
            web.static("/static", self.statics_path, show_index=False, name="static"),
        ])
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    async def on_startup(self, app: web.Application) -> None:
        self._reaper = asyncio.create_task(self._reap())

    def announce(self) -> None:
        """Print where the console is served and the first link: only once the port is bound
        (after the site starts, not in ``on_startup``, which runs before the bind), so whoever
        follows the link at once finds the server listening. A link stdout does not take:
        ``CannotAnnounce`` (:func:`start` stops serving first)."""
        mode = "writes allowed" if self.opts.allow_writes else "read-only (--allow-writes to change keys)"
        say_ready(f"hermes-admin web: serving the console at {self.public_url}, {mode}\n"
                  f"hermes-admin web: open this link (it works once): {self._print_link()}",
                  "the console's link", self.out)

    async def on_shutdown(self, app: web.Application) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        self._withheld = False           # stopping: no new link
        for s in self.sessions.live():
            await self._end(s, "hermes-admin web stopped")

    async def handle_index(self, request: web.Request) -> web.Response:  # type: ignore[override]
        # The socket on the host the page came from (already checked): its cookie goes with it.
        ws_url = ("wss" if self.served.secure else "ws") + f"://{request.host}/ws"
        font = _size(request.query.get("fontsize"), 16, 40)
        return web.Response(text=console_page(title=self.title, ws_url=ws_url, font_size=font),
                            content_type="text/html")

    # ------------------------------------------------------------ sessions
    async def _reap(self) -> None:
        every = max(0.2, min(30.0, self.opts.idle / 4))
        while True:
            await asyncio.sleep(every)
            for s in self.sessions.idle_ones():
                await self._end(s, f"idle for {_words(self.opts.idle)}: the session ended. "
                                   "Use a new link from hermes-admin web.")

    async def _end(self, s: Session, why: str) -> None:
        self.sessions.end(s)
        for close in list(s.closers):
            await close(why)
        if self._withheld and not self.sessions.full():
            self._next_link()

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:  # type: ignore[override]
        session = self.gate.session_of(request)
        if session is None:                       # the gate let no such request through
            raise web.HTTPForbidden()
        ws = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE)
        await ws.prepare(request)
        for close in list(session.closers):       # a reload: the old page's console ends
            await close("this session was opened in another page")
        width = _size(request.query.get("width"), 80, 1000)
        height = _size(request.query.get("height"), 24, 500)
        service = AppService(self.command_for(request), write_bytes=ws.send_bytes,
                             write_str=ws.send_str, close=ws.close,
                             download_manager=self.download_manager, debug=False)

        async def close(why: str) -> None:
            await ws.close(code=ENDED_CLOSE, message=why[:120].encode())

        session.closers.append(close)
        self.sessions.touch(session)
        self.started += 1
        try:
            await service.start(width, height)
            await self.pump(ws, service, session)
        except asyncio.CancelledError:
            await ws.close()
        except Exception as exc:   # noqa: BLE001 - one line, no traceback locals (they may hold keys)
            log.error("console session failed: %s", type(exc).__name__)
        finally:
            if close in session.closers:
                session.closers.remove(close)
            await service.stop()
        return ws

    def command_for(self, request: web.Request) -> str:
        """The shell command of this connection's console process."""
        return child_command(self.opts, remote_of(request, self.opts.public_url is not None))

    async def pump(self, ws: web.WebSocketResponse, service: AppService, session: Session) -> None:
        """The browser's messages to the console: keys, pastes, resizes, focus (never blur)."""
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                self.sessions.touch(session)
                await service.send_bytes(data.encode("utf-8", "replace"))
            elif kind == "resize" and isinstance(data, dict):
                self.sessions.touch(session)
                await service.set_terminal_size(_size(str(data.get("width")), 80, 1000),
                                                _size(str(data.get("height")), 24, 500))
            elif kind == "ping" and isinstance(data, str) and len(data) < 40:
                await ws.send_json(["pong", data])
            elif kind == "focus":
                await service.focus()
            # "blur" is dropped on purpose: see the module docstring.

    # ------------------------------------------------------------ run
    async def start(self) -> web.AppRunner:
        """Start serving (tests and the CLI); the caller keeps the runner and cleans it up."""
        runner = web.AppRunner(self.make_app(), access_log_class=PathOnlyLog, access_log=log,
                               handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.opts.host, self.opts.port)
        await site.start()
        try:
            self.announce()
        except Exception:
            await runner.cleanup()       # nobody can have the link: stop serving
            raise
        return runner


def remote_of(request: web.Request, proxied: bool) -> str:
    """The browser's address: the peer's, or, behind the --public-url proxy, what it forwarded."""
    peer = request.remote or "—"
    if proxied:
        forwarded = request.headers.get("X-Real-IP") or request.headers.get("X-Forwarded-For", "")
        first = forwarded.split(",")[-1].strip()[:64]
        if first:
            return f"{first} (through {peer})"
    return peer


def _words(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    return f"{seconds:g} s"


async def serve_forever(console: WebConsole, stop: asyncio.Event) -> None:
    """Serve until *stop* is set (SIGINT/SIGTERM in the CLI)."""
    runner = await console.start()
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def run(console: WebConsole) -> int:
    """Serve until interrupted; exit 0."""
    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await serve_forever(console, stop)

    logging.basicConfig(level=logging.INFO, format="hermes-admin web: %(message)s", stream=sys.stderr)
    asyncio.run(main())
    return 0


__all__ = ["WebConsole", "WebOptions", "child_command", "remote_of", "run", "serve_forever"]
