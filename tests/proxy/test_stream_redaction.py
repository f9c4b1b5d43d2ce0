"""Redaction over a stream, not per chunk (issue 27): the row's key split across any
chunks is still replaced, with a hold-back never longer than the key less one byte and
nothing held at an event boundary. The control is the per-chunk redaction of old."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from store.proxy.edge.sse import Framing, StreamRedaction, error_event
from store.proxy.edge.wire import OwnToken
from store.redaction.fingerprints import fingerprint

KEY = "sk-or-v1-streamtest-" + "7" * 30
SHOWN = fingerprint(KEY).encode()
TEXT = st.text(alphabet="abc sk-\n:{}\"or7", max_size=60).map(str.encode)


def _whole(parts: list[bytes]) -> bytes:
    return b"".join(parts)


def _split(data: bytes, points: list[int]) -> list[bytes]:
    edges = [0, *sorted({min(len(data), p) for p in points}), len(data)]
    return [data[a:b] for a, b in zip(edges, edges[1:], strict=False)]


def _relayed(chunks: list[bytes], scrub: StreamRedaction) -> tuple[bytes, int]:
    out, held = b"", 0
    for c in chunks:
        out += scrub.feed(c)
        held = max(held, scrub.held)
    return out + scrub.flush(), held


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=4), st.lists(st.integers(0, 400), max_size=8))
def test_any_split_of_any_stream_gives_the_whole_streams_redaction(texts, points) -> None:
    whole = KEY.encode().join(texts)           # the key between every two texts
    out, held = _relayed(_split(whole, points), StreamRedaction(OwnToken(KEY)))
    assert out == whole.replace(KEY.encode(), SHOWN)
    assert KEY.encode() not in out
    assert held <= len(KEY) - 1


@given(st.integers(1, len(KEY) - 1))
def test_a_split_key_is_held_at_most_until_its_event_ends(cut) -> None:
    scrub = StreamRedaction(OwnToken(KEY))
    assert scrub.feed(b"data: " + KEY.encode()[:cut]) == b"data: "
    assert scrub.held == cut
    assert scrub.feed(KEY.encode()[cut:] + b"\n\n") == SHOWN + b"\n\n"
    assert scrub.held == 0


def test_text_that_cannot_begin_the_key_is_never_held() -> None:
    scrub = StreamRedaction(OwnToken(KEY))
    assert scrub.feed(b"data: {\"x\": 1}") == b"data: {\"x\": 1}"
    assert scrub.held == 0


def test_control_per_chunk_redaction_leaks_a_split_key() -> None:
    own = OwnToken(KEY)
    data = b"data: " + KEY.encode() + b"\n\n"
    chunks = _split(data, [30])     # inside the key's randomness: neither chunk holds all of it
    assert KEY.encode() in b"".join(own.hide(c) for c in chunks)
    assert KEY.encode() not in _relayed(chunks, StreamRedaction(own))[0]


def test_framing_closes_a_partial_event_only() -> None:
    path, args = "/v1/messages", ("broke", "upstream_stream_broken", 502, "rid")
    own = error_event(path, *args)
    f = Framing()
    assert f.ending(path, *args) == own
    f.note(b"event: a\ndata: {}\n\n")
    assert f.ending(path, *args) == own
    f.note(b"event: cont")           # a partial event: made the error event itself
    out = f.ending(path, *args)
    assert out.startswith(b"\ndata: ") and out.endswith(b"}\nevent: error\n\n")
    f.note(b"ent\r\n\r")
    f.note(b"\n")                    # a boundary split across two writes
    assert f.ending(path, *args) == own
