"""The success path's header check: a substring test for the key patterns' literal heads
before the full search, which must agree with the redactor's own patterns on any text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from store.proxy.edge import wire
from store.redaction.redact import KEY_PATTERNS


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(max_size=120), st.builds(lambda a, k, b: a + k + b, st.text(max_size=20), st.sampled_from(
    ["sk-or-v1-" + "a" * 20, "xai-" + "b" * 20, "gsk_" + "c" * 20, "AIza" + "d" * 35, "ghp_" + "e" * 24,
     "github_pat_" + "f" * 24, "hf_" + "g" * 24, "nvapi-" + "h" * 20, "fw-" + "i" * 20, "r8_" + "j" * 24,
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "sk-short", "ghx_" + "k" * 24]), st.text(max_size=20))))
def test_the_fast_key_shape_test_agrees_with_the_redactors_patterns(text) -> None:
    assert wire.key_shaped(text) == any(p.search(text) for p in KEY_PATTERNS)


def test_control_heads_that_miss_a_pattern_are_caught(monkeypatch) -> None:
    monkeypatch.setattr(wire, "KEY_HEADS", tuple(h for h in wire.KEY_HEADS if h != "hf_"))
    text = "x hf_" + "g" * 24
    assert wire.key_shaped(text) != any(p.search(text) for p in KEY_PATTERNS)
