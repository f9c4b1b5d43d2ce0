"""`hermes-admin web` prints its first link only once its port is listening.

Found in CI: a client that followed the printed link at once was refused (the link was printed
in ``on_startup``, which aiohttp runs before the site binds its port). The check here runs at
the moment the link is printed: it connects to the port. The negative control prints from
``on_startup``, as before, and sees the connection refused.
"""

from __future__ import annotations

import asyncio
import io
import socket

from aiohttp import web

from tests.web.browser import free_port
from tui.web.server import WebConsole, WebOptions


class Probing(io.StringIO):
    """The console's output: on each line with a link, is the port accepting connections?"""

    def __init__(self, port: int) -> None:
        super().__init__()
        self.port = port
        self.listening: list[bool] = []

    def write(self, text: str) -> int:
        if "token=" in text:
            with socket.socket() as s:
                s.settimeout(5)
                self.listening.append(s.connect_ex(("127.0.0.1", self.port)) == 0)
        return super().write(text)


def _served(console: WebConsole) -> list[bool]:
    async def main() -> None:
        runner = await console.start()
        await runner.cleanup()

    asyncio.run(main())
    assert isinstance(console.out, Probing)
    return console.out.listening


def _console(tmp_path, cls: type[WebConsole] = WebConsole) -> WebConsole:
    port = free_port()
    c = cls(WebOptions(port=port, home=str(tmp_path)))
    c.out = Probing(port)
    return c


def test_the_first_link_is_printed_once_the_port_listens(tmp_path) -> None:
    c = _console(tmp_path)
    assert _served(c) == [True]
    assert len(c.printed) == 1


def test_control_a_link_printed_on_startup_finds_nothing_listening(tmp_path) -> None:
    class OnStartup(WebConsole):
        """The order before the fix: the link printed while the app starts, before the bind."""

        async def on_startup(self, app: web.Application) -> None:
            await super().on_startup(app)
            self.announce()

        def announce(self) -> None:
            if not self.printed:
                super().announce()

    assert _served(_console(tmp_path, OnStartup)) == [False]
