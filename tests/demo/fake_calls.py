"""Calling the fake provider from a test: a clock the test moves, and one HTTP call that
returns (status, headers, JSON body) for errors as for answers."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


class Clock:
    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def call(url: str, key: str | None, method: str = "POST", path: str = "/v1/chat/completions",
         data: bytes | None = b'{"model": "m"}', headers: dict | None = None):
    h = dict(headers or {})
    if key:
        h["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url + path, data=data if method == "POST" else None,
                                 method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read() or b"{}")
