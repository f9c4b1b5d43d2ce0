"""What tui/web relies on of textual-serve and Textual's web driver, checked so an upgrade that
changes it fails here first (pyproject pins textual-serve <2).

- ``AppService``'s public constructor and methods, and ``Server``'s attributes we read;
- the page's contract with textual-serve's script: the terminal's data attributes and the
  ``-first-byte`` / ``-closed`` body classes our page styles;
- Textual's web driver still blurs the app at start: the reason the console ignores a web
  blur (if this ever fails, the guard in tui/app/console.py may be dropped).
"""

from __future__ import annotations

import inspect
from pathlib import Path

from textual.drivers import web_driver
from textual_serve.app_service import AppService
from textual_serve.server import Server


def test_app_service_keeps_its_public_api() -> None:
    params = list(inspect.signature(AppService.__init__).parameters)
    assert params[:2] == ["self", "command"]
    for kw in ("write_bytes", "write_str", "close", "download_manager", "debug"):
        assert kw in params
    for method in ("start", "stop", "send_bytes", "set_terminal_size", "focus", "blur"):
        assert inspect.iscoroutinefunction(getattr(AppService, method)), method


def test_server_keeps_what_the_web_console_reads(tmp_path) -> None:
    s = Server("true", host="127.0.0.1", port=1, title="t", public_url="http://127.0.0.1:1")
    assert s.public_url == "http://127.0.0.1:1" and s.title == "t"
    assert (Path(s.statics_path) / "js" / "textual.js").is_file()
    assert hasattr(s, "download_manager") and inspect.iscoroutinefunction(s.handle_download)


def test_the_script_still_reads_what_our_page_gives_it() -> None:
    js = (Path(Server("true").statics_path) / "js" / "textual.js").read_text(encoding="utf-8")
    for needle in ("sessionWebsocketUrl", "fontSize", "-first-byte", "-closed", "xterm-helper-textarea"):
        assert needle in js, needle


def test_textuals_web_driver_still_blurs_the_app_at_start() -> None:
    source = inspect.getsource(web_driver.WebDriver.start_application_mode)
    assert "AppBlur" in source
