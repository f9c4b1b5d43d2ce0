"""A scriptable fake LLM provider on loopback, shared by the tests and the demo.

A real HTTP server (stdlib ``ThreadingHTTPServer`` on 127.0.0.1, port 0 by default) that
serves:

- ``POST .../chat/completions`` (OpenAI-compatible; also ``.../responses``);
- the Codex usage endpoints ``GET .../wham/usage`` and ``GET .../api/codex/usage``;
- OpenRouter's ``GET .../api/v1/key``;
- an OAuth token endpoint ``POST .../oauth/token`` (refresh_token grant).

Behaviour is scripted per API key (the bearer token):

- ``script(key, reply, ...)``: replies served in order, the last one repeated;
- ``quota(key, ...)``: N requests allowed, then 429 with reset headers until the window
  resets or reopens early; ``lie=True`` makes the usage endpoint say "reopened" while chat
  keeps answering 429;
- ``usage(key, ...)`` / ``key_info(key, ...)`` for the probe endpoints;
- ``oauth(refresh_token, ...)`` for the token endpoint.

Run as a process for the demo: ``python -m tui.demo.fake_provider --port 0 --script FILE
--port-file PATH`` (the script is JSON, see :func:`load_script`). What it answers lives
in :mod:`tui.demo.fake_script`; this module is the server around it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .fake_script import (
    ProviderScript,
    Quota,
    Reply,
    billing,
    load_script,
    ok,
    rate_limited,
    server_error,
    unauthorized,
)

__all__ = ["FakeProvider", "ProviderScript", "Quota", "Reply", "billing", "load_script", "main", "ok",
           "rate_limited", "server_error", "unauthorized"]


class FakeProvider(ProviderScript):
    """The server plus its script. Thread-safe; use as a context manager."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock)
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeProvider:
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-provider",
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _handler_for(provider: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep quiet
            pass

        def _key(self) -> str | None:
            auth = self.headers.get("Authorization") or ""
            return auth[7:].strip() if auth.lower().startswith("bearer ") else None

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body if body is not None else {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def do_GET(self) -> None:  # noqa: N802
            path = urllib.parse.urlsplit(self.path).path
            key = self._key()
            wait = provider._delay_for(path)
            if wait:
                time.sleep(wait)
            if path.endswith(("/wham/usage", "/api/codex/usage")):
                status, body = provider._usage_answer(key)
            elif path.endswith("/api/v1/key"):
                status, body = provider._key_answer(key)
            else:
                status, body = 404, {"error": {"message": f"no route {path}"}}
            provider._record("GET", path, key, status)
            self._send(status, body)

        def do_POST(self) -> None:  # noqa: N802
            path = urllib.parse.urlsplit(self.path).path
            raw = self._body()
            key = self._key()
            wait = provider._delay_for(path)
            if wait:
                time.sleep(wait)
            if path.endswith("/oauth/token"):
                ctype = self.headers.get("Content-Type") or ""
                if "json" in ctype:
                    try:
                        form = json.loads(raw or b"{}")
                    except ValueError:
                        form = {}
                else:
                    form = {k: v[0] for k, v in urllib.parse.parse_qs(raw.decode()).items()}
                status, body = provider._token_answer(form.get("refresh_token"))
                provider._record("POST", path, None, status)
                self._send(status, body)
                return
            if path.endswith(("/chat/completions", "/responses")):
                try:
                    model = str(json.loads(raw or b"{}").get("model") or "fake-model")
                except (ValueError, AttributeError):
                    model = "fake-model"
                reply = provider._chat(key) if key else unauthorized("missing_api_key")
                provider._record("POST", path, key, reply.status)
                self._send(reply.status, reply.body(model), reply.headers)
                return
            provider._record("POST", path, key, 404)
            self._send(404, {"error": {"message": f"no route {path}"}})

    return Handler


# --- as a process -------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tui.demo.fake_provider",
                                     description="scriptable fake LLM provider on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path, help="JSON script (see load_script)")
    parser.add_argument("--port-file", type=Path, help="write the chosen port here when ready")
    args = parser.parse_args(argv)
    provider = FakeProvider(port=args.port)
    if args.script:
        load_script(provider, json.loads(args.script.read_text()))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    provider.start()
    if args.port_file:
        tmp = args.port_file.with_suffix(".tmp")
        tmp.write_text(str(provider.port))
        tmp.replace(args.port_file)
    print(f"fake provider listening on {provider.url}", flush=True)
    declared = os.environ.get("HERMES_ADMIN_DEMO_PARENT", "")
    parent = int(declared) if declared.isdigit() else os.getppid()
    try:
        # Also end when the process that started us is gone (e.g. the demo was SIGKILLed).
        while not stop.wait(0.5):
            if os.getppid() != parent:
                break
    finally:
        provider.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
