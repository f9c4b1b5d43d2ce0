"""The one redactor masks the credential after ``Authorization``, ``Bearer`` or ``x-api-key``
in any text, whatever its shape (issue 27: a malformed request line carried a client key the
redactor did not know). Ordinary prose stays; the output is idempotent."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from store.redaction import redact
from store.redaction.redact import Redactor

CANARY = "hermes-client-CANARY-q7w8e9r0t1y2u3i4"
LINES = [
    "Authorization: Bearer {k}",
    "b'Authorization: Bearer {k}\\x01x'",
    "b'Authorization Bearer {k}'",
    "b'Authorization: Bearer\\x00{k}'",
    "x-api-key: {k}",
    'headers={{"Authorization": "Bearer {k}"}}',
    "proxy-authorization=Basic {k}",
    "{{'x-api-key': '{k}'}}",
]


def test_every_form_of_the_header_is_masked() -> None:
    for line in LINES:
        out = Redactor().redact(line.format(k=CANARY))
        assert CANARY not in out and "…u3i4" in out, line


def test_prose_is_left_alone() -> None:
    for text in ("the bearer of bad news", "bearer instrument", "authorization required for everything",
                 "a valid client key is required (Authorization: Bearer <client key>)"):
        assert Redactor().redact(text) == text


@given(st.sampled_from(LINES), st.text(alphabet="abcdefXYZ0123456789-_.", min_size=8, max_size=40))
def test_masking_is_idempotent_and_leaves_no_value(line, key) -> None:
    once = Redactor().redact(line.format(k=key))
    assert Redactor().redact(once) == once
    assert key not in once


def test_control_without_the_rule_the_value_shows(monkeypatch) -> None:
    monkeypatch.setattr(redact, "mask_auth_values", lambda text: text)
    assert CANARY in Redactor().redact(LINES[1].format(k=CANARY))


def test_a_key_with_no_digit_in_a_quoted_header_is_masked() -> None:
    """Found by the property above: in a dict's repr or JSON the header name closes a quote
    before its ``:``, and only the bare-scheme rule (a digit in the value) caught it."""
    for line in ('headers={{"Authorization": "Bearer {k}"}}', "{{'x-api-key': '{k}'}}"):
        out = Redactor().redact(line.format(k="XXXXXXXX"))
        assert "XXXXXXXX" not in out, line


def test_control_a_name_that_may_not_close_a_quote_leaves_it(monkeypatch) -> None:
    import re
    old = re.compile(redact._AUTH_VALUE.pattern.replace("[\\\"']?", "", 1))
    assert old.pattern != redact._AUTH_VALUE.pattern
    monkeypatch.setattr(redact, "_AUTH_VALUE", old)
    assert "XXXXXXXX" in Redactor().redact('headers={"Authorization": "Bearer XXXXXXXX"}')
