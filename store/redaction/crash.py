"""Crash reports through the redaction boundary: what failed and where, never the locals.

A traceback repeats the exception's message, and a message holds whatever the failing
code had in hand (a row's token in a ``KeyError``, a provider's body, a URL with its
password). A rich traceback with ``show_locals=True`` (Textual's crash report) prints every
local of every frame, ``access_token`` included. So every traceback hermes-admin prints is
made here: the standard library's form (frames, source lines, messages, the chained
causes; no locals), each line through the home's :class:`~store.redaction.redact.Redactor`
and then made inert (control characters escaped).

Users: the console's crash report (``tui.app.console``), the CLI's ``HERMES_ADMIN_DEBUG=1``
traceback (``tui.cli.entry``), and the logs of the long-running verbs: :class:`LogRedaction`
on a logging handler (a record's message and its traceback) and :func:`loop_handler` for
an asyncio loop (a callback or task that raised).
"""

from __future__ import annotations

import logging
import os
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from store.redaction.redact import Redactor, escape_controls

if TYPE_CHECKING:   # a type only: every CLI verb imports this module, few run a loop (issue 28)
    import asyncio

RedactorOf = Callable[[], Redactor]


def clean(text: str, redactor: Redactor) -> str:
    """*text* redacted and made inert line by line (the newlines stay)."""
    return "\n".join(escape_controls(redactor.redact(line)) for line in text.split("\n"))


def report(exc: BaseException, redactor: Redactor) -> str:
    """The traceback of *exc* (with its causes), without locals, every line redacted."""
    return clean("".join(traceback.format_exception(exc)).rstrip("\n"), redactor)


def summary(exc: BaseException, redactor: Redactor) -> str:
    """``KeyError: 'sk-or-…a1B2'``: the exception in one redacted line."""
    return clean(f"{type(exc).__name__}: {exc}", redactor).replace("\n", " ")


class LogRedaction(logging.Filter):
    """A handler's filter: each record's message, arguments and traceback redacted with the
    redactor *redactor_of* returns at that moment (the home's secrets as last read).

    The traceback is folded into the message and the record's ``exc_info`` dropped, so no
    formatter can print it again unredacted, and no locals ever reach it.
    """

    def __init__(self, redactor_of: RedactorOf) -> None:
        super().__init__()
        self.redactor_of = redactor_of

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:      # a bad format string must not lose the record
            message = f"{record.msg!r} {record.args!r}"
        if record.exc_info and record.exc_info[1] is not None:
            message += "\n" + "".join(traceback.format_exception(record.exc_info[1])).rstrip("\n")
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        record.msg = clean(message, self.redactor_of())
        record.args = ()
        return True


def loop_handler(log: Callable[[str], None], redactor_of: RedactorOf) -> Callable[[asyncio.AbstractEventLoop,
                                                                                 dict[str, Any]], None]:
    """An asyncio exception handler that says what failed through *log*, redacted: the
    loop's message and the exception's traceback, never the context's objects (a task or
    a handle repr can hold arguments)."""

    def handle(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        r = redactor_of()
        text = clean(str(context.get("message") or "unhandled error in the event loop"), r)
        exc = context.get("exception")
        if isinstance(exc, BaseException):
            text += "\n" + report(exc, r)
        log(text)

    return handle


TEST_CRASH_ENV = "HERMES_ADMIN_TEST_CRASH"


def crash_for_tests(where: str, held: Callable[[], object]) -> None:
    """Raise here when the tests ask for it (``HERMES_ADMIN_TEST_CRASH=<where>``), from a
    frame whose local holds ``held()`` (a secret of the home), with it in the message too:
    a real crash of a long-running process, to prove its report shows neither. Nothing
    else sets the variable; unset, this costs one environment look-up."""
    if os.environ.get(TEST_CRASH_ENV) != where:
        return
    access_token = held()
    raise RuntimeError(f"test crash in {where} holding {access_token}")
