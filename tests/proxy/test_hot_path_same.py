"""The request path's cheaper forms answer exactly as the forms they replaced (#27, the
latency round): the rate-limit header test in one pass, a pool's pin switch read once per
configured strategy name, the usage paths split once. Each is compared with the plain form
over generated input, and each has a negative control: a wrong shortcut is caught."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.config.proxy_settings import Affinity
from store.dialects import readings
from store.pools import policy
from store.proxy.routing import headroom_gate, pins, protocols
from store.proxy.routing.pins import STRATEGIES, Pins

NAMES = st.lists(st.text(alphabet=st.sampled_from("abcdefghilmrt-XRL_"), max_size=24)
                 | st.sampled_from(["x-ratelimit-remaining-requests", "anthropic-ratelimit-tokens-reset",
                                    "RateLimit-Policy", "retry-after", "content-type"]), max_size=8)


def plain_carries(headers: list[str]) -> bool:
    return any("ratelimit" in name.lower() for name in headers)


@given(NAMES)
@settings(max_examples=300, deadline=None)
def test_the_one_pass_header_test_agrees_with_one_test_per_name(names: list[str]) -> None:
    assert headroom_gate.carries_readings(names) is plain_carries(names)


def test_a_header_test_that_misses_a_name_is_caught() -> None:
    """Negative control: a shortcut that looks at the first name only disagrees."""
    names = ["content-type", "x-ratelimit-remaining-requests"]
    assert headroom_gate.carries_readings(names) is True
    assert ("ratelimit" in names[0].lower()) is not plain_carries(names)


def plain_applies(enabled: bool, strategies: dict, pool: str) -> bool:
    got = strategies.get(pool, policy.DEFAULT_STRATEGY)
    return enabled and policy.known_strategy(got) in STRATEGIES


STRATEGY = st.sampled_from(["round_robin", "ROUND_ROBIN ", "least_used", "random", "fill_first", "quota_aware",
                            "", "  Random", "bogus"]) | st.none() | st.integers(0, 3)


@given(st.lists(st.tuples(st.booleans(), STRATEGY), min_size=1, max_size=12))
@settings(max_examples=200, deadline=None)
def test_the_pin_switch_follows_every_change_of_the_strategy_and_the_switch(steps: list) -> None:
    """The same Pins asked again after each change of config (as the chain's lambdas see it)."""
    state: dict = {"enabled": True, "strategies": {}}
    p = Pins(lambda: Affinity(enabled=state["enabled"]), lambda: state["strategies"])
    for enabled, strategy in steps:
        state["enabled"] = enabled
        state["strategies"] = {"pool": strategy} if strategy is not None else {}
        for _ in range(2):          # asked again: the memo answers the same
            assert p.applies("pool") is plain_applies(enabled, state["strategies"], "pool")


def test_a_memo_keyed_by_pool_would_be_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: remembering the answer per pool (not per strategy name) misses an
    edit of config.yaml; the test above's reference catches it."""
    state = {"strategies": {"pool": "round_robin"}}
    by_pool: dict[str, bool] = {}

    def keyed_by_pool(self: Pins, pool: str) -> bool:
        if pool not in by_pool:
            by_pool[pool] = plain_applies(True, state["strategies"], pool)
        return by_pool[pool]

    monkeypatch.setattr(pins.Pins, "applies", keyed_by_pool)
    p = Pins(lambda: Affinity(), lambda: state["strategies"])
    assert p.applies("pool") is True
    state["strategies"] = {"pool": "fill_first"}
    assert p.applies("pool") is not plain_applies(True, state["strategies"], "pool")


def plain_at(block: dict, path: str):
    node = block
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def plain_usage(block: dict) -> dict:
    """The fields usage_block reads, by the unsplit paths (the form it replaced)."""
    got = {}
    for ours, paths in readings._PATHS:
        for path in paths:
            v = plain_at(block, path) if "." in path else block.get(path)
            if v is not None:
                got[ours] = v
                break
    return got


COUNT = st.integers(0, 10**6)
BLOCK = st.fixed_dictionaries({}, optional={
    "prompt_tokens": COUNT, "input_tokens": COUNT, "completion_tokens": COUNT, "output_tokens": COUNT,
    "cache_read_input_tokens": COUNT, "cache_creation_input_tokens": COUNT,
    "prompt_tokens_details": st.fixed_dictionaries({}, optional={"cached_tokens": COUNT,
                                                                 "cache_write_tokens": COUNT}) | st.integers(),
    "input_tokens_details": st.fixed_dictionaries({}, optional={"cached_tokens": COUNT}),
    "completion_tokens_details": st.fixed_dictionaries({}, optional={"reasoning_tokens": COUNT}) | st.text(),
    "output_tokens_details": st.fixed_dictionaries({}, optional={"reasoning_tokens": COUNT}),
})


@given(BLOCK)
@settings(max_examples=300, deadline=None)
def test_the_split_usage_paths_read_what_the_dotted_paths_read(block: dict) -> None:
    usage = readings.usage_block(block)
    want = plain_usage(block)
    if not want:
        assert usage is None
        return
    assert usage is not None
    for ours in ("output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
        assert getattr(usage, ours) == want.get(ours)


def test_a_split_that_drops_a_nested_path_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: paths split wrong (the nested ones read at the top) lose the cached
    and reasoning counts, and the comparison above sees it."""
    block = {"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 3}}
    assert readings.usage_block(block).cache_read_tokens == 3
    wrong = tuple((ours, tuple((p, None) for p, _parts in paths)) for ours, paths in readings._SPLIT)
    monkeypatch.setattr(readings, "_SPLIT", wrong)
    assert readings.usage_block(block).cache_read_tokens != plain_usage(block).get("cache_read_tokens")


def plain_model_of(body: bytes) -> str | None:
    """The form model_of replaced: ``json.loads`` on the bytes (its own encoding sniff)."""
    if not body or body[:1] not in (b"{", b" ", b"\n", b"\r", b"\t"):
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) and model else None


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=12),
                       lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
                       max_leaves=8)
DOC = st.dictionaries(st.sampled_from(["model", "messages", "stream", "x"]) | st.text(max_size=6),
                      JSONISH | st.text(), max_size=5)
ENCODING = st.sampled_from(["utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-8-sig", "utf-16"])


@st.composite
def request_bodies(draw: st.DrawFn) -> bytes:
    """JSON bodies as clients send them (any key order, spaces, other encodings), and bytes that are not."""
    kind = draw(st.integers(0, 3))
    if kind == 3:
        return draw(st.binary(max_size=40))
    text = json.dumps(draw(DOC), ensure_ascii=draw(st.booleans()))
    text = draw(st.sampled_from(["", " ", "\n\t", "\r\n "])) + text + draw(st.sampled_from(["", " ", "\n", "x"]))
    if kind == 2:
        return text.encode(draw(ENCODING), "surrogatepass")
    raw = text.encode("utf-8", "surrogatepass")
    if kind == 1 and raw:                    # a byte cut or changed: broken UTF-8 or broken JSON
        i = draw(st.integers(0, len(raw) - 1))
        raw = raw[:i] + draw(st.sampled_from([b"", b"\xff", b"\x00", b"\xc3", b'"']))
    return raw


@given(request_bodies())
@settings(max_examples=400, deadline=None)
def test_the_model_read_without_the_encoding_sniff_is_what_json_loads_reads(body: bytes) -> None:
    assert protocols.model_of(body) == plain_model_of(body)


def test_a_model_read_that_takes_every_body_as_utf8_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: without the second-byte test, a UTF-16 body (which ``json.loads``
    reads) is decoded as UTF-8 and names no model."""
    body = '{"model": "m"}'.encode("utf-16-le")
    assert protocols.model_of(body) == plain_model_of(body) == "m"
    decode = protocols._DECODE
    monkeypatch.setattr(protocols, "model_of", lambda b: _utf8_only(decode, b))
    assert protocols.model_of(body) != plain_model_of(body)


def _utf8_only(decode, body: bytes) -> str | None:
    try:
        data = decode(body.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) and model else None


MODEL_NAMES = st.text(max_size=20) | st.text(alphabet=st.sampled_from("ab\x00\x1f\u200b\u2028\ud800é"), max_size=6) \
    | st.integers(250, 300).map(lambda n: "m" * n)


@st.composite
def bodies_with_models(draw: st.DrawFn) -> bytes:
    """Request bodies naming a model (long, with controls, escaped or not, nested names too),
    and every body :func:`request_bodies` makes."""
    if draw(st.booleans()):
        return draw(request_bodies())
    doc = {"model": draw(MODEL_NAMES), "messages": []}
    if draw(st.booleans()):
        doc["metadata"] = {"model": draw(MODEL_NAMES)}
    return json.dumps(doc, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")


def _door_agrees(check, body: bytes) -> None:
    from store.proxy.edge.door import _wrong, bad_model
    once, scanned = check(body, protocols.model_of(body)), bad_model(body)
    assert scanned is None or once == scanned
    named = plain_model_of(body)
    assert once == (_wrong(named) if named is not None else scanned)


@given(bodies_with_models())
@settings(max_examples=500, deadline=None)
def test_the_door_check_on_the_model_read_once_refuses_all_the_body_scan_refuses(body: bytes) -> None:
    """The door reads the model once (model_of) and checks that name. It refuses whatever the
    body scan (bad_model without a name, which parses only what looks wrong) refuses, with
    the same words; beyond that only a name json.loads really reads as bad (a UTF-16 body without a BOM,
    which the scan for ``"model"`` in bytes never saw)."""
    from store.proxy.edge.door import bad_model
    _door_agrees(bad_model, body)


def test_a_door_check_that_trusts_any_name_it_was_given_is_caught() -> None:
    """Negative control: a check that passes every name it is handed lets a 300-character
    name through, where the scan refuses it."""
    from store.proxy.edge.door import bad_model
    body = json.dumps({"model": "m" * 300}).encode()
    _door_agrees(bad_model, body)
    with pytest.raises(AssertionError):
        _door_agrees(lambda b, m=None: None if m is not None else bad_model(b), body)


def plain_kept(headers, drop: frozenset[str]):
    """The form kept replaced: the headers copied one by one, each tested."""
    from multidict import CIMultiDict
    named = {t.strip().lower() for v in headers.getall("Connection", []) for t in v.split(",")}
    out = CIMultiDict()
    for k, v in headers.items():
        if k.lower() not in drop and k.lower() not in named:
            out.add(k, v)
    return out


HEADER_NAMES = st.sampled_from(["Host", "connection", "Connection", "Keep-Alive", "X-Custom", "x-custom", "TE",
                                "Authorization", "Content-Type", "Upgrade", "X-Trace", "Set-Cookie", "Date"])
CONNECTION_VALUES = st.lists(st.sampled_from(["keep-alive", "close", "X-Custom", " x-trace ", "", "Upgrade", "te"]),
                             max_size=4).map(",".join)


@given(st.lists(st.tuples(HEADER_NAMES, st.text(alphabet="abc ,-", max_size=8)), max_size=10),
       st.lists(CONNECTION_VALUES, max_size=2), st.booleans())
@settings(max_examples=400, deadline=None)
def test_the_copied_headers_are_the_headers_copied_one_by_one(pairs, connection, answer) -> None:
    from multidict import CIMultiDict, CIMultiDictProxy

    from store.proxy.edge.wire import DROP_REQUEST, DROP_RESPONSE, kept
    headers = CIMultiDictProxy(CIMultiDict(pairs + [("Connection", c) for c in connection]))
    drop = DROP_RESPONSE if answer else DROP_REQUEST
    assert list(kept(headers, drop).items()) == list(plain_kept(headers, drop).items())


def test_a_copy_that_forgets_what_connection_names_is_caught() -> None:
    """Negative control: dropping the fixed names only keeps a header ``Connection`` names."""
    from multidict import CIMultiDict, CIMultiDictProxy

    from store.proxy.edge.wire import DROP_REQUEST, kept
    headers = CIMultiDictProxy(CIMultiDict([("Connection", "X-Secret-Hop"), ("X-Secret-Hop", "1"), ("A", "b")]))
    assert list(kept(headers, DROP_REQUEST).items()) == list(plain_kept(headers, DROP_REQUEST).items()) == [("A", "b")]
    forgetful = CIMultiDict(headers)
    for name in DROP_REQUEST:
        forgetful.popall(name, None)
    assert list(forgetful.items()) != list(plain_kept(headers, DROP_REQUEST).items())


@given(st.booleans(), st.dictionaries(st.sampled_from(["a", "b", "c"]), STRATEGY.filter(lambda s: s is not None),
                                      max_size=3))
@settings(max_examples=300, deadline=None)
def test_no_conversation_is_named_only_where_no_pool_would_pin_it(enabled: bool, strategies: dict) -> None:
    """The forwarder names a request's conversation only when some pool may pin it: a "no"
    is never wrong for any pool (configured or not), a "yes" has a pool that pins."""
    p = Pins(lambda: Affinity(enabled=enabled), lambda: strategies)
    pools = ["a", "b", "c", "unconfigured"]
    if p.may_apply():
        assert any(plain_applies(enabled, strategies, pool) for pool in pools)
    else:
        assert not any(plain_applies(enabled, strategies, pool) for pool in pools)


def test_a_precheck_that_ignores_the_configured_strategies_is_caught() -> None:
    """Negative control: a precheck on the switch alone says "yes" where no pool pins (every
    pool fills first), and one on the default strategy alone says "no" where one does."""
    fill = {"a": "fill_first"}
    rotating = {"a": "round_robin"}
    assert Pins(lambda: Affinity(enabled=True), lambda: fill).may_apply() is False
    assert Pins(lambda: Affinity(enabled=True), lambda: rotating).may_apply() is True
    switch_only = Affinity(enabled=True).enabled
    assert switch_only != any(plain_applies(True, fill, pool) for pool in ["a", "unconfigured"])
    default_only = policy.known_strategy(policy.DEFAULT_STRATEGY) in STRATEGIES
    assert default_only != any(plain_applies(True, rotating, pool) for pool in ["a", "unconfigured"])
