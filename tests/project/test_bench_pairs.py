"""The alternating proxy bench judges each measured proxy against the passthrough on its own
event loop: hermes-admin, and the floor (the necessary work alone) when it is measured."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.proxy_alternate import pairs  # noqa: E402

pytestmark = pytest.mark.timeout(30)


def test_each_proxy_is_judged_against_the_passthrough_on_its_loop() -> None:
    names = ["direct", "hermes-admin", "hermes-admin/uvloop", "floor/asyncio",
             "bare-aiohttp/uvloop", "bare-aiohttp/asyncio"]
    assert pairs(names) == [("hermes-admin", "bare-aiohttp/asyncio"),
                            ("hermes-admin/uvloop", "bare-aiohttp/uvloop"),
                            ("floor/asyncio", "bare-aiohttp/asyncio")]


def test_a_proxy_without_its_passthrough_is_not_judged() -> None:
    """``--no-uvloop``: no uvloop passthrough, so nothing is paired with one."""
    assert pairs(["direct", "hermes-admin", "floor/asyncio", "bare-aiohttp/asyncio"]) == [
        ("hermes-admin", "bare-aiohttp/asyncio"), ("floor/asyncio", "bare-aiohttp/asyncio")]
    assert pairs(["direct", "hermes-admin/uvloop", "bare-aiohttp/asyncio"]) == []
    assert pairs(["direct", "bare-aiohttp/asyncio"]) == []
