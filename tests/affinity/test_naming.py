"""A conversation's name (store.proxy.routing.affinity): the first marker found, per protocol,
else the digest of its opening; never the marker in clear; hostile bodies name nothing and
never raise."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.dialects.dialect import ANTHROPIC, OPENAI, RESPONSES
from store.proxy.routing import affinity
from store.proxy.routing.affinity import Conversation, asks_long_cache

SYSTEM = "You are a careful assistant."


def conv(protocol: str, doc: object, headers: dict[str, str] | None = None) -> Conversation:
    return Conversation(protocol, json.dumps(doc).encode(), headers)


def chat(first: str, *later: str, system: str = SYSTEM, **extra: object) -> dict:
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": first}]
    for i, text in enumerate(later):
        msgs += [{"role": "assistant", "content": f"answer {i}"}, {"role": "user", "content": text}]
    return {"model": "m", "messages": msgs, **extra}


def messages(first: str, *later: str, system: object = SYSTEM, **extra: object) -> dict:
    msgs = [{"role": "user", "content": first}]
    for i, text in enumerate(later):
        msgs += [{"role": "assistant", "content": f"answer {i}"}, {"role": "user", "content": text}]
    return {"model": "claude", "max_tokens": 10, "system": system, "messages": msgs, **extra}


def responses(first: str, *later: str, **extra: object) -> dict:
    items: list = [{"role": "user", "content": first}]
    for i, text in enumerate(later):
        items += [{"role": "assistant", "content": f"answer {i}"}, {"role": "user", "content": text}]
    return {"model": "gpt", "instructions": SYSTEM, "input": items, **extra}


# (protocol, body, headers, what names it)
TABLE = [
    (OPENAI, chat("hi", prompt_cache_key="pck-1"), None, "prompt_cache_key"),
    (RESPONSES, responses("hi", prompt_cache_key="pck-1"), {"session_id": "s"}, "prompt_cache_key"),
    (ANTHROPIC, messages("hi", metadata={"user_id": "user_ab_account_cd_session_ef"}), None, "metadata.user_id"),
    (RESPONSES, responses("hi"), {"session_id": "0199-aaaa"}, "session_id"),
    (RESPONSES, responses("hi"), {"conversation_id": "0199-aaaa"}, "conversation_id"),
    (OPENAI, chat("hi"), {"x-session-affinity": "mine"}, "x-session-affinity"),
    (OPENAI, chat("hi"), None, "prompt"),
    (ANTHROPIC, messages("hi"), None, "prompt"),
    (RESPONSES, responses("hi"), None, "prompt"),
    (RESPONSES, {"model": "gpt", "input": "a plain string prompt"}, None, "prompt"),
    (ANTHROPIC, messages("hi", metadata={"user_id": ""}), None, "prompt"),      # an empty marker names nothing
]


@pytest.mark.parametrize(("protocol", "doc", "headers", "source"), TABLE)
def test_the_first_marker_found_names_the_conversation(protocol, doc, headers, source):
    c = conv(protocol, doc, headers)
    assert c.source == source
    assert isinstance(c.digest, bytes) and len(c.digest) == 16


@pytest.mark.parametrize(("make", "protocol"), [(chat, OPENAI), (messages, ANTHROPIC), (responses, RESPONSES)])
def test_every_turn_of_one_conversation_has_one_name_and_two_conversations_two(make, protocol):
    turns = [conv(protocol, make("plan a trip", *[f"more {i}" for i in range(n)])).digest for n in range(5)]
    assert len(set(turns)) == 1
    assert conv(protocol, make("write a poem")).digest != turns[0]
    if protocol != RESPONSES:       # another system prompt: another conversation
        assert conv(protocol, make("plan a trip", system="Another persona.")).digest != turns[0]


def test_the_same_marker_names_the_same_conversation_whatever_the_prompt():
    a = conv(OPENAI, chat("one", prompt_cache_key="k")).digest
    b = conv(OPENAI, chat("two", prompt_cache_key="k")).digest
    assert a == b != conv(OPENAI, chat("one", prompt_cache_key="other")).digest


def test_a_marker_and_a_prompt_never_collide_across_kinds():
    # the header value equal to a prompt_cache_key is a different marker kind: another name
    assert conv(OPENAI, chat("x", prompt_cache_key="k")).digest != conv(OPENAI, chat("x"), {"session_id": "k"}).digest


def test_the_name_holds_nothing_in_clear_and_the_request_is_let_go():
    secret_marker = "session-4f1c-very-private"
    c = conv(ANTHROPIC, messages("my private question", metadata={"user_id": secret_marker}))
    assert c.digest is not None
    kept = repr([getattr(c, s) for s in Conversation.__slots__])
    assert secret_marker not in kept and "private question" not in kept
    assert secret_marker.encode() not in c.digest


def test_nothing_names_a_request_with_no_user_message_or_no_json():
    assert conv(OPENAI, {"model": "m", "input": "embed me"}).digest is None          # embeddings
    assert Conversation(OPENAI, b"not json at all").digest is None
    assert Conversation(OPENAI, b"").digest is None
    assert Conversation(OPENAI, b"[1, 2, 3]").digest is None


@pytest.mark.parametrize(("doc", "long"), [
    (messages("hi", system=[{"type": "text", "text": SYSTEM,
                             "cache_control": {"type": "ephemeral", "ttl": "1h"}}]), True),
    (messages("hi", tools=[{"name": "t", "input_schema": {},
                            "cache_control": {"type": "ephemeral", "ttl": "1h"}}]), True),
    ({"model": "c", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]}, True),
    (messages("hi", system=[{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]), False),
    (messages("hi", system=[{"type": "text", "text": SYSTEM,
                             "cache_control": {"type": "ephemeral", "ttl": "5m"}}]), False),
    (messages("say 1h please"), False),
    ({"model": "c", "metadata": {"cache_control": {"type": "ephemeral", "ttl": "1h"}},      # not in a cached part
      "messages": [{"role": "user", "content": "x"}]}, False),
])
def test_the_one_hour_cache_is_seen_where_anthropic_reads_it(doc, long):
    assert conv(ANTHROPIC, doc).long is long
    assert asks_long_cache(doc) is long


def test_the_walk_for_the_one_hour_cache_is_bounded(monkeypatch):
    far = {"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}] * 50
                         + [{"type": "text", "text": "y", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]}
    far["messages"][0]["content"].reverse()      # the marked part is walked last
    assert asks_long_cache(far) is True
    monkeypatch.setattr(affinity, "WALK_BUDGET", 20)
    assert asks_long_cache(far) is False          # past the budget: not looked at
    deep: object = "leaf"
    for _ in range(5000):
        deep = [deep]
    assert asks_long_cache({"messages": deep}) is False


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["role", "content", "system", "messages", "input", "instructions", "metadata", "user_id",
                         "prompt_cache_key", "cache_control", "type", "ttl", "tools", "x"]), inner, max_size=5),
    max_leaves=30)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(protocol=st.sampled_from([OPENAI, ANTHROPIC, RESPONSES]), doc=JSONISH,
       headers=st.dictionaries(st.sampled_from(["session_id", "conversation_id", "x-session-affinity", "other"]),
                               st.text(max_size=30), max_size=3))
def test_hostile_shapes_never_raise(protocol, doc, headers):
    c = conv(protocol, doc, headers)
    assert c.digest is None or len(c.digest) == 16
    assert isinstance(c.long, bool)


@settings(max_examples=300)
@given(raw=st.binary(max_size=200))
def test_hostile_bytes_never_raise(raw):
    c = Conversation(OPENAI, raw, {"session_id": "\udcff"})
    assert c.digest is None or len(c.digest) == 16


def test_deep_and_lone_surrogate_bodies_name_without_raising():
    deep = b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert Conversation(OPENAI, deep).digest is None
    lone = b'{"prompt_cache_key": "\\udcff", "messages": [{"role": "user", "content": "\\ud800"}]}'
    assert Conversation(OPENAI, lone).digest is not None
    nested_user = {"messages": [{"role": "user", "content": json.loads("[" * 900 + "]" * 900)}]}
    assert Conversation(OPENAI, json.dumps(nested_user).encode()).source in ("prompt", None)


# -- a large body is read in part: the same name as a whole parse --

CONTENT = st.text(alphabet=st.characters(codec="utf-8", exclude_characters='"\\'), max_size=30) | st.lists(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}), max_size=2)
MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["system", "developer", "user", "assistant"]),
                                 "content": CONTENT})
TOP = st.fixed_dictionaries({}, optional={
    "model": st.text(max_size=10), "max_tokens": st.integers(0, 10_000), "stream": st.booleans(),
    "prompt_cache_key": st.text(max_size=12), "metadata": st.fixed_dictionaries({}, optional={
        "user_id": st.text(max_size=12)}),
    "system": st.text(max_size=20) | st.lists(st.fixed_dictionaries({"type": st.just("text"),
                                                                     "text": st.text(max_size=10)}), max_size=2),
    "instructions": st.text(max_size=20), "tools": st.lists(st.fixed_dictionaries({"name": st.text(max_size=8)}),
                                                            max_size=2),
    "messages": st.lists(MESSAGE, max_size=6), "input": st.text(max_size=20) | st.lists(MESSAGE, max_size=6)})


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])   # m: reset each input
@given(protocol=st.sampled_from([OPENAI, ANTHROPIC, RESPONSES]), doc=TOP, order=st.randoms(use_true_random=False),
       compact=st.booleans())
def test_a_large_body_read_in_part_gets_the_name_a_whole_parse_gives(monkeypatch, protocol, doc, order, compact):
    keys = list(doc)
    order.shuffle(keys)
    raw = json.dumps({k: doc[k] for k in keys}, separators=(",", ":") if compact else None).encode()
    whole = Conversation(protocol, raw).digest
    with monkeypatch.context() as m:
        m.setattr(affinity, "PARSE_CAP", 0)
        part = Conversation(protocol, raw).digest
    assert part == whole


def test_a_large_body_is_not_parsed_past_its_first_user_message(monkeypatch):
    """The part read stops at the first user message: a later message that is not JSON at all
    is never reached (a whole parse would refuse the body)."""
    head = json.dumps({"model": "m", "messages": [{"role": "system", "content": SYSTEM},
                                                  {"role": "user", "content": "first"}]})[:-2]
    raw = (head + ', {"role": "assistant", "content": ' + "x" * 200_000 + "}]}").encode()
    tail_marked = raw[:-1] + b', "prompt_cache_key": "k-1"}'
    assert Conversation(OPENAI, raw).source == "prompt"
    assert Conversation(OPENAI, tail_marked).source == "prompt_cache_key"
    good = json.dumps(chat("first")).encode()
    monkeypatch.setattr(affinity, "PARSE_CAP", 10**9)          # control: parsed whole, the broken body names nothing
    assert Conversation(OPENAI, raw).digest is None
    assert Conversation(OPENAI, good).digest is not None


def test_a_large_body_asking_the_one_hour_cache_is_seen_by_a_byte_search():
    big = messages("hi", system=[{"type": "text", "text": "s" * 100_000,
                                  "cache_control": {"type": "ephemeral", "ttl": "1h"}}])
    assert conv(ANTHROPIC, big).long is True
    big["system"][0]["cache_control"] = {"type": "ephemeral"}
    assert conv(ANTHROPIC, big).long is False


def test_control_without_the_tail_a_marker_after_the_messages_is_missed(monkeypatch):
    raw = json.dumps({"messages": [{"role": "user", "content": "x" * 70_000}], "prompt_cache_key": "k"}).encode()
    assert Conversation(OPENAI, raw).source == "prompt_cache_key"
    monkeypatch.setattr(affinity, "_tail", lambda text, key: None)
    assert Conversation(OPENAI, raw).source == "prompt"          # the property above would see this
