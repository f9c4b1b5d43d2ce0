"""A scriptable fake LLM provider on loopback, shared by the tests and the demo.

A real HTTP server (stdlib ``ThreadingHTTPServer`` on 127.0.0.1, port 0 by default) that
serves:

- ``POST .../chat/completions`` (OpenAI-compatible; also ``.../responses``);
- the Codex usage endpoints ``GET .../wham/usage`` and ``GET .../api/codex/usage``;
- OpenRouter's ``GET .../api/v1/key``;
- an OAuth token endpoint ``POST .../oauth/token`` (refresh_token grant);
- for the proxy: ``POST .../completions`` and ``.../embeddings``, ``GET .../models``, and
  ``"stream": true`` chat answered as SSE, ``stream_chunks`` deltas ``stream_interval``
  seconds apart, each flushed on its own (chunked transfer encoding).
  ``requests_by_key()`` counts requests per bearer.

Behaviour is scripted per API key (the bearer token):

- ``script(key, reply, ...)``: replies served in order, the last one repeated;
- ``quota(key, ...)``: N requests allowed, then 429 with reset headers until the window
  resets or reopens early; ``lie=True`` makes the usage endpoint say "reopened" while chat
  keeps answering 429;
- ``usage(key, ...)`` / ``key_info(key, ...)`` for the probe endpoints;
- ``oauth(refresh_token, ...)`` for the token endpoint;
- ``spend``: with one set, every answer reports its usage in its dialect, Responses and
  Anthropic ``/messages`` included (:mod:`tui.demo.fake_usage`).

Run as a process for the demo: ``python -m tui.demo.fake_provider --port 0 --script FILE
--port-file PATH`` (the script is JSON, see :func:`load_script`). What it answers lives
in :mod:`tui.demo.fake_script`; this module is the server around it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tui.demo import fake_usage as usage
from tui.demo.fake_script import (
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


class _Listener(ThreadingHTTPServer):
    """The stdlib server with an accept queue of 128, not its default 5: a load generator or
    proxy that opens 64 connections at once must not stall seconds in SYN retries."""

    request_queue_size = 128


class FakeProvider(ProviderScript):
    """The server plus its script. Thread-safe; use as a context manager."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock)
        self._server = _Listener((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None
        self.stream_chunks = 5          # deltas per streamed chat answer
        self.stream_interval = 0.0      # seconds between deltas
        self.stream_break_after: int | None = None   # drop the connection after N deltas

    def requests_by_key(self, path_part: str = "") -> dict[str, int]:
        """Requests received per bearer (any status), for paths containing *path_part*."""
        counts: dict[str, int] = {}
        with self._lock:
            for _m, p, k, _s in self.log:
                if path_part in p and k is not None:
                    counts[k] = counts.get(k, 0) + 1
        return counts

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
        # Headers and body go out in two writes: without TCP_NODELAY, Nagle plus the
        # client's delayed ACK add ~40 ms to every kept-alive answer.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep quiet
            pass

        def _key(self) -> str | None:
            auth = self.headers.get("Authorization") or ""
            if auth.lower().startswith("bearer "):
                return auth[7:].strip()
            return self.headers.get("x-api-key") or None       # Anthropic's header

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body if body is not None else {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, model: str, tail: bytes = b"") -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            n = max(1, provider.stream_chunks)
            try:
                for i in range(n):
                    if i and provider.stream_interval:
                        time.sleep(provider.stream_interval)
                    self._chunk(_sse(_delta(model, f"tok{i} ", None)))
                    if provider.stream_break_after is not None and i + 1 >= provider.stream_break_after:
                        self.close_connection = True      # no terminating chunk: a broken stream
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                self._chunk(_sse(_delta(model, "", "stop")) + tail + b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, OSError):
                self.close_connection = True

        def _events(self, events: list[bytes]) -> None:
            """A stream of named SSE events (Responses, Anthropic), then its end."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for ev in events:
                    self._chunk(ev)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, OSError):
                self.close_connection = True

        def _spent(self, path: str, req: dict[str, Any], model: str, reply: Reply) -> bool:
            """Answer a Responses or Anthropic request with its usage (only with a spend
            scripted: tui.demo.fake_usage); True when answered."""
            spend = provider.spend
            if spend is None or not path.endswith(("/responses", "/messages")):
                return False
            msgs = path.endswith("/messages")
            if req.get("stream"):
                self._events(usage.messages_events(model, spend) if msgs else usage.responses_events(model, spend))
            else:
                self._send(200, usage.messages_body(model, spend) if msgs else usage.responses_body(model, spend),
                           reply.headers)
            return True

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

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
            elif path.endswith("/models"):
                status, body = (200, {"object": "list", "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                    for m in ("fake-model", "fake-embed")]}) if key else (401, unauthorized().body(""))
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
            answers = ("/chat/completions", "/responses", "/completions", "/embeddings")
            if path.endswith(answers + (("/messages",) if provider.spend is not None else ())):
                try:
                    req = json.loads(raw or b"{}")
                    model = str(req.get("model") or "fake-model")
                except (ValueError, AttributeError):
                    req, model = {}, "fake-model"
                reply = provider._chat(key) if key else unauthorized("missing_api_key")
                provider._record("POST", path, key, reply.status)
                spend = provider.spend
                if reply.status >= 300:
                    self._send(reply.status, reply.body(model), reply.headers)
                elif self._spent(path, req, model, reply):
                    pass
                elif path.endswith("/chat/completions") and req.get("stream"):
                    wants = spend is not None and usage.wants_usage_chunk(req, path)
                    self._stream(model, _sse(usage.chat_usage_chunk(model, spend, path)) if wants else b"")
                elif path.endswith("/embeddings"):
                    self._send(200, _embeddings(req, model), reply.headers)
                elif path.endswith("/completions") and not path.endswith("/chat/completions"):
                    self._send(200, _completion(model), reply.headers)
                else:
                    body = reply.body(model)
                    if spend is not None:
                        body["usage"] = usage.chat_usage(spend, path)
                    self._send(reply.status, body, reply.headers)
                return
            provider._record("POST", path, key, 404)
            self._send(404, {"error": {"message": f"no route {path}"}})

    return Handler


def _sse(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _delta(model: str, text: str, finish: str | None) -> dict[str, Any]:
    return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "delta": {"content": text} if text else {},
                                         "finish_reason": finish}]}


def _completion(model: str) -> dict[str, Any]:
    return {"id": "cmpl-fake", "object": "text_completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "text": "ok (fake provider)", "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}


def _embeddings(req: dict[str, Any], model: str) -> dict[str, Any]:
    inputs = req.get("input")
    n = len(inputs) if isinstance(inputs, list) else 1
    return {"object": "list", "model": model,
            "data": [{"object": "embedding", "index": i, "embedding": [0.1, 0.2, 0.3, float(i)]}
                     for i in range(n)],
            "usage": {"prompt_tokens": 4, "total_tokens": 4}}


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
