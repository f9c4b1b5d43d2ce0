"""#20: an undo that works while a proxy writes request counts every second.

A key is removed, the proxy flushes its counts five times (each flush replaces the single
auth.json.bak, so the old way back loses the key: the negative control), and `undo`
brings the key back with its counts as they were, keeping the counts the proxy wrote since."""

from __future__ import annotations

import httpx
import pytest

from store.paths import Home
from tests.conftest import read_doc, run_cli
from tests.proxy_helpers import OR_KEYS, running_proxy, seed, wait_until
from tui.demo.fake_provider import FakeProvider

pytestmark = pytest.mark.slow
MSG = [{"role": "user", "content": "hi"}]


def _rows(home: Home) -> dict[str, dict]:
    return {r["id"]: r for r in read_doc(home)["credential_pool"]["openrouter"]}


def test_remove_five_flushes_then_undo_brings_the_key_back(tmp_home: Home) -> None:
    with FakeProvider() as fake:
        seed(tmp_home, fake, or_keys=2)
        with running_proxy(tmp_home) as p:
            for _ in range(3):
                assert httpx.post(p.url + "/chat/completions", json={"model": "m", "messages": MSG},
                                  timeout=20).status_code == 200
            wait_until(lambda: _rows(tmp_home)["or0aaa"].get("request_count") == 3, 20, "the first flush")
            run_cli(tmp_home, "priority", "openrouter", "key-or1aaa", "0")      # or1 serves next
            for _ in range(2):
                httpx.post(p.url + "/chat/completions", json={"model": "m", "messages": MSG}, timeout=20)
            wait_until(lambda: _rows(tmp_home)["or1aaa"].get("request_count") == 2, 20, "or1's counts")
            run_cli(tmp_home, "remove", "openrouter", "key-or1aaa", "--yes")
            for i in range(5):                                   # five flushes by the proxy
                httpx.post(p.url + "/chat/completions", json={"model": "m", "messages": MSG}, timeout=20)
                wait_until(lambda i=i: _rows(tmp_home)["or0aaa"].get("request_count") == 4 + i, 20, "a flush")
            assert OR_KEYS[1] not in tmp_home.backup.read_text()   # control: the single backup lost it
            run_cli(tmp_home, "undo", "--yes")           # the newest operator action: the remove
        rows = _rows(tmp_home)
    assert rows["or1aaa"]["access_token"] == OR_KEYS[1] and rows["or1aaa"]["request_count"] == 2
    assert rows["or0aaa"]["request_count"] == 8          # the proxy's later writes survive
