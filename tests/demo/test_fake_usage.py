"""The fake provider reports usage in every dialect (#29), streamed and not, as hermes-admin's
own readers (store.dialects, store.dialects.streams) read it; and the demo's budget is one its
agents reach."""

from __future__ import annotations

import json
import urllib.request

import pytest

from store.config import settings as settings_file
from store.dialects import registry
from store.dialects.dialect import ANTHROPIC, OPENAI, RESPONSES
from store.dialects.readings import Usage
from store.dialects.streams import StreamUsage
from store.paths import Home
from tui.demo import fake_provider as fpv
from tui.demo import launch
from tui.demo.fake_usage import Spend

SPEND = Spend(input=1200, cached=800, cache_write=100, output=300, reasoning=120, cost=0.0125)
OPENAI_USAGE = Usage(1200, 300, 800, None, 120)
ANTHROPIC_USAGE = Usage(1200, 300, 800, 100)        # input counts the cache's reads and writes


def post(url: str, body: dict, *, key: str = "k", anthropic: bool = False) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json"}
    headers.update({"x-api-key": key} if anthropic else {"Authorization": f"Bearer {key}"})
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=5) as resp:  # noqa: S310 - loopback
        return resp.status, resp.read()


def unchunked(protocol: str, data: bytes) -> Usage | None:
    tap = StreamUsage(protocol)
    tap.feed(data)
    return tap.end()


CASES = [
    # (path, body extra, anthropic header, dialect for a body, stream protocol, usage wanted)
    pytest.param("/v1/chat/completions", {}, False, "openai", OPENAI, OPENAI_USAGE, id="openai-chat"),
    pytest.param("/api/v1/chat/completions", {}, False, "openrouter", OPENAI,
                 Usage(1200, 300, 800, None, 120, cost_usd=0.0125), id="openrouter-cost"),
    pytest.param("/v1/responses", {}, False, "openai", RESPONSES, OPENAI_USAGE, id="responses"),
    pytest.param("/v1/messages", {}, True, "anthropic", ANTHROPIC, ANTHROPIC_USAGE, id="anthropic"),
]


@pytest.mark.parametrize(("path", "extra", "anth", "dialect", "protocol", "want"), CASES)
def test_every_dialect_reports_its_usage_streamed_and_not(path, extra, anth, dialect, protocol, want):
    with fpv.FakeProvider() as fp:
        fp.spend = SPEND
        status, raw = post(fp.url + path, {"model": "m", **extra}, anthropic=anth)
        assert status == 200 and registry.DIALECTS[dialect].usage(json.loads(raw)) == want
        ask = {"model": "m", "stream": True, "stream_options": {"include_usage": True}}
        status, raw = post(fp.url + path, ask, anthropic=anth)
        assert status == 200 and unchunked(protocol, raw) == want


def test_a_chat_stream_carries_usage_only_when_asked_or_openrouter():
    with fpv.FakeProvider() as fp:
        fp.spend = SPEND
        _, raw = post(fp.url + "/v1/chat/completions", {"model": "m", "stream": True})
        assert unchunked(OPENAI, raw) is None                     # not asked: as OpenAI does
        _, raw = post(fp.url + "/api/v1/chat/completions", {"model": "m", "stream": True})
        assert unchunked(OPENAI, raw).cost_usd == 0.0125           # OpenRouter: always


def test_without_a_spend_the_answers_are_as_before():
    """Control: no spend scripted, the old small usage and no /messages route."""
    with fpv.FakeProvider() as fp:
        _, raw = post(fp.url + "/api/v1/chat/completions", {"model": "m"})
        assert json.loads(raw)["usage"] == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
        with pytest.raises(urllib.error.HTTPError) as err:
            post(fp.url + "/v1/messages", {"model": "m"}, anthropic=True)
        assert err.value.code == 404


def test_the_demo_scripts_a_spend_and_a_budget_its_agents_reach(tmp_path):
    script = launch.provider_script()
    assert script["spend"]["cost"] == launch.SPEND_PER_ANSWER
    home = Home(tmp_path)
    (tmp_path / settings_file.SETTINGS_FILE).write_text(launch.SETTINGS_YAML)
    budget = settings_file.read(home).budgets
    day = budget["openrouter"].key.day
    assert day is not None and 0 < day / launch.SPEND_PER_ANSWER <= 10     # a few answers a key
