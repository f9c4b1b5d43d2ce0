"""store.redaction.crash: a traceback's text through the redaction boundary, never its locals.

The report, a log record with a traceback, an asyncio loop's error: each names the
exception and the frames, and holds no secret of the home (by value or by key shape) and
no raw control character. Negative controls: the standard library's traceback with an
identity redactor shows the message's secret; a traceback whose text is not cleaned
keeps an escape sequence raw.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import traceback

import pytest

from store.redaction import crash
from store.redaction.redact import Redactor

PLAIN = f"plainCANARYp{secrets.token_hex(12)}"
KEY = f"sk-or-v1-CANARYk{secrets.token_hex(16)}"


def failing() -> BaseException:
    def inner() -> None:
        access_token = PLAIN      # a local: never in a report
        raise ValueError(f"no route for {access_token} or {KEY}\x1b]2;PWNED\x07")

    try:
        try:
            inner()
        except ValueError as exc:
            raise RuntimeError(f"while serving {PLAIN}") from exc
    except RuntimeError as exc:
        return exc
    raise AssertionError("unreachable")


def clean_of_secrets(text: str) -> bool:
    return PLAIN not in text and KEY not in text and "\x1b" not in text and "\x07" not in text


def test_the_report_names_what_failed_and_holds_no_secret() -> None:
    text = crash.report(failing(), Redactor([PLAIN]))
    assert "ValueError" in text and "RuntimeError" in text and "inner" in text      # the cause chain too
    assert "direct cause" in text and "\\x1b]2;PWNED" in text
    assert clean_of_secrets(text), text
    assert "access_token = " not in text
    assert crash.summary(failing(), Redactor([PLAIN])) == "RuntimeError: while serving …" + PLAIN[-4:]


def test_a_log_record_with_a_traceback_is_redacted_whole(capsys: pytest.CaptureFixture[str]) -> None:
    log = logging.getLogger("hermes_admin.test_crash_text")
    handler = logging.StreamHandler()
    handler.addFilter(crash.LogRedaction(lambda: Redactor([PLAIN])))
    log.addHandler(handler)
    log.propagate = False
    try:
        exc = failing()
        log.error("request %s failed", PLAIN, exc_info=(type(exc), exc, exc.__traceback__))
    finally:
        log.removeHandler(handler)
    err = capsys.readouterr().err
    assert "request …" in err and "Traceback" in err and "ValueError" in err
    assert clean_of_secrets(err), err


def test_the_loop_handler_reports_a_failing_callback() -> None:
    said: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(crash.loop_handler(said.append, lambda: Redactor([PLAIN])))
        exc = failing()

        def boom() -> None:
            raise exc

        loop.call_soon(boom)
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(main())
    assert said and "Exception in callback" in said[0] and "RuntimeError" in said[0]
    assert clean_of_secrets(said[0]), said[0]


def test_the_test_hook_is_inert_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(crash.TEST_CRASH_ENV, raising=False)
    crash.crash_for_tests("monitor", lambda: PLAIN)          # nothing happens
    monkeypatch.setenv(crash.TEST_CRASH_ENV, "elsewhere")
    crash.crash_for_tests("monitor", lambda: PLAIN)
    monkeypatch.setenv(crash.TEST_CRASH_ENV, "monitor")
    with pytest.raises(RuntimeError, match="test crash in monitor holding"):
        crash.crash_for_tests("monitor", lambda: PLAIN)


def test_negative_control_the_plain_traceback_shows_what_the_report_hides() -> None:
    raw = "".join(traceback.format_exception(failing()))
    assert PLAIN in raw and KEY in raw and "\x1b" in raw
    assert not clean_of_secrets(crash.report(failing(), _Identity()))


class _Identity(Redactor):
    def redact(self, text: object) -> str:   # type: ignore[override]
        return str(text)
