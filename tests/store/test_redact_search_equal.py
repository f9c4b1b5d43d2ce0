"""The redactor's faster searches find exactly what the slower ones found (#29: ``usage
--json`` over 1,000 keys spent most of its time in them).

- Key shapes: each pattern now starts with its literal and checks the token boundary by a
  lookbehind after it (``sk-(?<![A-Za-z0-9]sk-)...``), so the regex engine searches for the
  literal. The reference below is the former text of every pattern (the boundary first), and
  the former "any key at all" test (one alternation of them).
- Known secrets: a text of 2,048 characters or more is looked up at every 8th window only,
  each secret indexed by its last 8 windows; the reference is the former scan of every
  window by the secrets' tails.

Hypothesis: over generated text holding key prefixes, secrets and key-shaped strings at
token boundaries, the new and the reference agree (matches, substitutions, the secrets
found, the whole redaction). Negative controls: a boundary dropped from a pattern, and the
strided index one window short, each fail a case these tests hold.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.redaction import redact, shapes
from store.redaction.redact import KEY_PATTERNS, MIN_SECRET_LEN, Redactor, mask_auth_values
from store.redaction.urls import mask_userinfo
from tests.mutant import mutant

_OLD_B = r"(?<![A-Za-z0-9])"
OLD_PATTERNS = tuple(re.compile(p) for p in (
    _OLD_B + r"sk-[A-Za-z0-9_\-]{16,}",
    _OLD_B + r"xai-[A-Za-z0-9_\-]{16,}",
    _OLD_B + r"gsk_[A-Za-z0-9]{16,}",
    _OLD_B + r"AIza[0-9A-Za-z_\-]{30,}",
    _OLD_B + r"gh[pousr]_[A-Za-z0-9]{20,}",
    _OLD_B + r"github_pat_[A-Za-z0-9_]{20,}",
    _OLD_B + r"hf_[A-Za-z0-9]{20,}",
    _OLD_B + r"(?:nvapi|pplx|fw)-[A-Za-z0-9_\-]{16,}",
    _OLD_B + r"r8_[A-Za-z0-9]{20,}",
    _OLD_B + r"eyJ[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]*){0,2}",
))
OLD_ANY_KEY = re.compile("|".join(f"(?:{p.pattern})" for p in OLD_PATTERNS))


def old_present(secrets: set[str], text: str) -> set[str]:
    """The former known-secret scan: every window of 8 characters, looked up by the secrets' tails."""
    index: dict[str, list[str]] = {}
    for s in sorted(secrets, key=len, reverse=True):
        index.setdefault(s[-MIN_SECRET_LEN:], []).append(s)
    n, found = MIN_SECRET_LEN, set()
    for end in range(n, len(text) + 1):
        candidates = index.get(text[end - n:end])
        if candidates:
            found.update(c for c in candidates if text.endswith(c, 0, end))
    return found


def old_redact(secrets: set[str], text: str) -> str:
    """The former Redactor.redact (its secrets of distinct lengths: the order is the same)."""
    if len(text) < MIN_SECRET_LEN:
        return text
    text = mask_userinfo(text)
    for s in sorted(old_present(secrets, text), key=len, reverse=True):
        text = text.replace(s, redact._fp(s))
    if OLD_ANY_KEY.search(text):
        for pattern in OLD_PATTERNS:
            text = pattern.sub(lambda m: redact._fp(m.group(0)), text)
    return mask_auth_values(text)


_HEADS = ["sk-", "sk-or-v1-", "xai-", "gsk_", "AIza", "ghp_", "gho_", "ghx_", "github_pat_", "hf_", "nvapi-",
          "pplx-", "fw-", "r8_", "eyJ", "task-", "a", "Z", "9", "-", "_", ".", " ", "\n", "…", "=", "/"]
_BODY = st.text(alphabet="abcXYZ0189_-.", min_size=0, max_size=40)
_PIECE = st.one_of(st.sampled_from(_HEADS), _BODY)


@st.composite
def texts(draw: st.DrawFn, secrets: list[str] = ()) -> str:  # type: ignore[assignment]
    pieces = draw(st.lists(st.one_of(_PIECE, st.sampled_from(secrets)) if secrets else _PIECE, max_size=30))
    return "".join(pieces)


@settings(max_examples=300, deadline=None)
@given(text=texts())
def test_each_pattern_matches_and_substitutes_as_before(text: str) -> None:
    assert len(KEY_PATTERNS) == len(OLD_PATTERNS)
    for new, old in zip(KEY_PATTERNS, OLD_PATTERNS, strict=True):
        assert [m.span() for m in new.finditer(text)] == [m.span() for m in old.finditer(text)]
        assert new.sub("<k>", text) == old.sub("<k>", text)
    assert any(p.search(text) for p in KEY_PATTERNS) == bool(OLD_ANY_KEY.search(text))


_SECRET = st.text(alphabet="abcXYZ0189_-.:/ ", min_size=MIN_SECRET_LEN, max_size=48)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), secrets=st.lists(_SECRET, min_size=1, max_size=24, unique_by=len),
       pad=st.sampled_from([0, 2100, 5000]))
def test_the_known_secrets_found_and_the_redaction_are_as_before(data: st.DataObject, secrets: list[str],
                                                                 pad: int) -> None:
    """Short texts (every window) and long ones (every 8th), with at most 16 short secrets
    (looked for whole) or more (every window again); secrets of distinct lengths, so the
    order they are replaced in is the same."""
    body = data.draw(texts(secrets))
    cut = data.draw(st.integers(0, len(body)))
    text = body[:cut] + "~" * pad + body[cut:] if pad else body
    r = Redactor(secrets)
    known = {s for form in secrets for s in (form, form.strip()) if len(s) >= MIN_SECRET_LEN}
    assert set(r._present(text)) == old_present(known, text)
    if len({len(s) for s in known}) == len(known):
        assert r.redact(text) == old_redact(known, text)


def test_a_long_text_finds_a_key_at_every_offset() -> None:
    """A key at each of the 8 offsets of the stride, and at the text's two ends."""
    key = "plain-known-value-" + "x1Y2z3W4" * 3
    r = Redactor([key])
    for at in [0, *range(3000, 3009)]:
        text = "~" * at + key + "~" * (2100 - min(at, 2100))
        assert len(text) >= redact._LONG_TEXT and r.redact(text) == text.replace(key, redact._fp(key))
    end = "~" * 2100 + key
    assert r.redact(end).endswith(redact._fp(key))


def test_control_the_strided_index_one_window_short_misses_a_key() -> None:
    bad = mutant("store.redaction.redact", "for k in range(_STRIDE):", "for k in range(_STRIDE - 1):")
    key = "plain-known-value-" + "x1Y2z3W4" * 3
    missed = [at for at in range(3000, 3008)
              if key in bad.Redactor([key]).redact("~" * at + key + "~" * 100)]
    assert len(missed) == 1


def test_control_a_pattern_without_its_boundary_matches_inside_a_word() -> None:
    text = "task-" + "a" * 20
    assert not any(p.search(text) for p in KEY_PATTERNS)
    loose = re.compile(KEY_PATTERNS[0].pattern.replace("(?<![A-Za-z0-9]sk-)", ""))
    assert loose.search(text)
    assert shapes.KEY_PATTERNS is KEY_PATTERNS


@pytest.mark.parametrize("n_short", [0, 16, 17])
def test_few_or_many_short_secrets_are_all_found_in_a_long_text(n_short: int) -> None:
    shorts = [f"shrt{i:04d}x" for i in range(n_short)]
    longs = [f"a-longer-known-value-{i:06d}" for i in range(40)]
    text = " ".join(shorts[::2] + longs[::3]) + "~" * 2100
    r = Redactor(shorts + longs)
    assert set(r._present(text)) == set(shorts[::2] + longs[::3]) == old_present(set(shorts + longs), text)
