"""Usage in every dialect, streamed and not (#29): scripted answers in, usage out, hostile
values dropped with a notice."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import outside
from store.agent.judge import usage_in
from store.dialects import registry
from store.dialects.dialect import ANTHROPIC, OPENAI, RESPONSES
from store.dialects.readings import Usage
from store.dialects.streams import TAIL, StreamUsage

CHAT = {"id": "c1", "object": "chat.completion", "choices": [],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
                  "prompt_tokens_details": {"cached_tokens": 100},
                  "completion_tokens_details": {"reasoning_tokens": 12}}}
OPENROUTER = {"id": "g1", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cost": 0.00042}}
RESPONSE = {"id": "resp_1", "object": "response", "output": [],
            "usage": {"input_tokens": 50, "output_tokens": 20, "input_tokens_details": {"cached_tokens": 40},
                      "output_tokens_details": {"reasoning_tokens": 8}}}
MESSAGE = {"id": "msg_1", "type": "message", "content": [],
           "usage": {"input_tokens": 3, "output_tokens": 9, "cache_read_input_tokens": 100,
                     "cache_creation_input_tokens": 7}}


def sse(events: list[tuple[str | None, object]]) -> bytes:
    out = b""
    for name, data in events:
        if name:
            out += b"event: " + name.encode() + b"\n"
        out += b"data: " + (data if isinstance(data, bytes) else json.dumps(data).encode()) + b"\n\n"
    return out


CHAT_STREAM = sse([(None, {"choices": [{"delta": {"content": "hi"}}], "usage": None}),
                   (None, {"choices": [], "usage": CHAT["usage"]}), (None, b"[DONE]")])
OPENROUTER_STREAM = sse([(None, {"choices": [{"delta": {"content": "x"}}]}),
                         (None, {"choices": [], "usage": OPENROUTER["usage"]}), (None, b"[DONE]")])
RESPONSES_STREAM = sse([
    ("response.created", {"type": "response.created", "response": {"id": "resp_1", "usage": None}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": 'say "usage": {1}'}),
    ("response.completed", {"type": "response.completed", "response": RESPONSE})])
ANTHROPIC_STREAM = sse([
    ("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "content": [], "usage": {"input_tokens": 3, "output_tokens": 1,
                                                "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7}}}),
    ("content_block_delta", {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "hello"}}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
    ("message_stop", {"type": "message_stop"})])

CASES = [
    pytest.param("openai", CHAT, OPENAI, CHAT_STREAM, Usage(120, 30, 100, None, 12), id="openai-chat"),
    pytest.param("openrouter", OPENROUTER, OPENAI, OPENROUTER_STREAM, Usage(10, 5, cost_usd=0.00042),
                 id="openrouter-cost"),
    pytest.param("codex", RESPONSE, RESPONSES, RESPONSES_STREAM, Usage(50, 20, 40, None, 8), id="codex-responses"),
    pytest.param("openai", RESPONSE, RESPONSES, RESPONSES_STREAM, Usage(50, 20, 40, None, 8), id="openai-responses"),
    pytest.param("anthropic", MESSAGE, ANTHROPIC, ANTHROPIC_STREAM, Usage(110, 9, 100, 7), id="anthropic"),
]


def streamed(protocol: str, data: bytes, size: int) -> Usage | None:
    tap = StreamUsage(protocol)
    for i in range(0, len(data), size):
        tap.feed(data[i:i + size])
    return tap.end()


@pytest.mark.parametrize(("dialect", "body", "protocol", "stream", "want"), CASES)
def test_each_dialect_reads_its_usage_streamed_and_not(dialect, body, protocol, stream, want) -> None:
    d = registry.DIALECTS[dialect]
    assert d.usage(body) == want
    assert usage_in(d, json.dumps(body).encode()) == want
    for size in (1, 7, 64, len(stream)):        # however the upstream's chunks split it
        assert streamed(protocol, stream, size) == want


def test_a_chat_stream_without_include_usage_reports_nothing() -> None:
    plain = sse([(None, {"choices": [{"delta": {"content": "hi"}}], "usage": None}), (None, b"[DONE]")])
    assert streamed(OPENAI, plain, 5) is None


def test_a_stream_cut_short_keeps_what_it_saw() -> None:
    cut = ANTHROPIC_STREAM[:ANTHROPIC_STREAM.index(b"event: message_delta")]
    assert streamed(ANTHROPIC, cut, 13) == Usage(110, 1, 100, 7)


def test_only_events_that_carry_usage_are_parsed() -> None:
    # A Responses delta naming "usage" in its text is no usage event; nor is an Anthropic content block.
    fake = sse([("response.output_text.delta", {"type": "response.output_text.delta",
                                                "usage": {"input_tokens": 999}})])
    assert streamed(RESPONSES, fake, 9) is None
    # Control: the same line on a Chat stream (no marker needed) is read.
    assert streamed(OPENAI, fake, 9) == Usage(999)


def test_a_huge_line_is_kept_bounded_and_its_usage_still_read() -> None:
    big = dict(RESPONSE, output=[{"type": "message", "content": [{"type": "output_text", "text": "x" * 300_000}]}])
    data = sse([("response.completed", {"type": "response.completed", "response": big})])
    tap = StreamUsage(RESPONSES)
    peak = 0
    for i in range(0, len(data), 4096):
        tap.feed(data[i:i + 4096])
        peak = max(peak, len(tap._rest))  # noqa: SLF001 - the bound under test
    assert tap.end() == Usage(50, 20, 40, None, 8) and peak <= TAIL


HOSTILE = [-1, -0.5, math.inf, -math.inf, math.nan, 10**13, "12abc", True, [1], {"a": 1}, "1e400"]


@pytest.mark.parametrize("bad", HOSTILE, ids=repr)
def test_hostile_values_are_dropped_with_a_notice(bad) -> None:
    said: list[str] = []
    block = {"usage": {"prompt_tokens": bad, "completion_tokens": 4, "cost": bad,
                       "completion_tokens_details": {"reasoning_tokens": bad}}}
    got = registry.DIALECTS["openrouter"].usage(block, said.append)
    assert got == Usage(None, 4)
    assert said and all("usage." in s and "ignored" in s for s in said)
    tap = StreamUsage(OPENAI, said.append)
    said.clear()
    tap.feed(b"data: " + json.dumps(block, allow_nan=True).encode() + b"\n\n")
    assert tap.end() == Usage(None, 4) and said


def test_a_notice_never_echoes_a_long_value() -> None:
    said: list[str] = []
    key = "sk-or-v1-" + "a" * 40
    registry.DIALECTS["openai"].usage({"usage": {"prompt_tokens": key, "completion_tokens": 1}}, said.append)
    assert said and key not in " ".join(said)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=12), c, max_size=5),
                     max_leaves=20)
_USAGEISH = st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens", "input_tokens", "output_tokens",
                                             "cost", "cache_read_input_tokens", "cache_creation_input_tokens",
                                             "prompt_tokens_details", "output_tokens_details"]), _JSON, max_size=6)


@settings(max_examples=300, deadline=None)
@given(_USAGEISH, st.integers(min_value=1, max_value=50))
def test_generated_usage_never_raises_and_is_always_sane(block, size) -> None:
    line = json.dumps({"type": "message_delta", "usage": block}, allow_nan=True).encode()
    for got in (registry.DIALECTS["anthropic"].usage({"usage": block}),
                streamed(ANTHROPIC, b"data: " + line + b"\n\n", size)):
        if got is None:
            continue
        for v in (got.input_tokens, got.output_tokens, got.cache_read_tokens, got.cache_write_tokens,
                  got.reasoning_tokens):
            assert v is None or (type(v) is int and 0 <= v <= outside.MAX_COUNT)
        assert got.cost_usd is None or (math.isfinite(got.cost_usd) and 0 <= got.cost_usd <= 1e6)
