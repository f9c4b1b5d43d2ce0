"""The one place the console writes: a store change run in a thread worker.

A screen collects and validates input, then hands :meth:`Writer.submit` a job for
:func:`store.ops.write.perform`: a :class:`store.ops.write.StoreChange` (``change(doc, now)`` on
auth.json) or a function that takes its own lock (``store.config.edit`` edits,
``store.ops.probe_report.run_probe``). The worker:

1. says "waiting for <lock>…" (a :class:`WriteWaiting` message) when another process
   holds the lock, so the operator knows why nothing happened yet;
2. runs the job through ``store.ops.write.perform`` (lock, fresh read, ``now`` read after the
   lock wait, change, atomic write, audit line: all inside the store);
3. posts a :class:`WriteDone` with the value, or with a classified, secret-free error.

The worker never touches a widget: it only posts messages, which the app hands back
to :meth:`Writer.finish` on the event loop. Every failure (lock timeout, unreadable
store or config, bad input, anything unexpected) becomes a visible message, and the
store's own guarantees mean nothing was written.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from textual.message import Message

from store.errors import BadInput, ConfigUnreadable, LockTimeout, StoreUnreadable
from store.lock import lock_is_free
from store.paths import Home
from store.redaction.fingerprints import redact
from tui.services.write_feedback import Feedback, done_feedback, failed_feedback
from tui.text import shown
from tui.text.sentences import READ_ONLY, READ_ONLY_WEB

if TYPE_CHECKING:   # store.ops.write (the audit, the history, the settings) loads with the first write
    from store.ops.write import Clock, StoreChange

    Job = StoreChange[Any] | Callable[[], Any]

OK = "ok"
BAD_INPUT = "bad_input"
LOCK_TIMEOUT = "lock_timeout"
UNREADABLE = "unreadable"
FAILED = "failed"


@dataclass(frozen=True)
class WriteRequest:
    """One change on its way to the store."""

    id: int
    what: str                                  # "reset openrouter backup-key", for messages
    lock: Path                                 # the lock it will take (auth.lock, config lock)
    rows: frozenset[tuple[str, str]] = frozenset()   # (pool, id) rows to mark as pending
    secrets: tuple[str, ...] = field(default=(), repr=False)   # redacted from any error text

    @property
    def lock_name(self) -> str:
        return self.lock.name


@dataclass(frozen=True)
class WriteResult:
    request: WriteRequest
    kind: str = OK
    value: Any = None
    error: str | None = None                  # operator-facing, already redacted
    field: str | None = None                  # the field a BadInput names
    problem: str | None = None                # a BadInput's message without the field
    audit_error: str | None = None            # the write landed but the audit line did not
    outcomes: tuple[Any, ...] = ()            # what landed (store.ops.actions.Outcome), for the feedback
    history_id: str | None = None             # what `hermes-admin undo ID` takes for this write
    unchanged: str | None = None              # nothing to do (NothingToChange): nothing written

    @property
    def ok(self) -> bool:
        return self.kind == OK

    def message(self) -> str:
        """One line for the message log (the flash line takes :meth:`flash_line`)."""
        if self.ok:
            return f"{self.request.what}: done"
        if self.kind == LOCK_TIMEOUT:
            return f"{self.request.what}: {self.error}. Nothing was written."
        return f"{self.request.what} failed: {self.error}. Nothing was written."

    def flash_line(self) -> str:
        """:meth:`message` for one line that may be cut: that nothing was written comes first."""
        if self.ok:
            return self.message()
        how = "could not run" if self.kind == LOCK_TIMEOUT else "failed"
        return f"{self.request.what} {how}, nothing was written: {self.error}"


class WriteWaiting(Message):
    """The request's lock is held by another process; the worker is waiting for it."""

    def __init__(self, request: WriteRequest) -> None:
        super().__init__()
        self.request = request


class WriteDone(Message):
    """A request finished, written or not."""

    def __init__(self, result: WriteResult) -> None:
        super().__init__()
        self.result = result



def run_write(request: WriteRequest, job: Job, home: Home, *, now: float | None = None,
              via: str = "tui", clock: Clock = time.time, remote: str | None = None) -> WriteResult:
    """Run *job* through store.ops.write.perform and classify any failure. Never raises.

    Called on a worker thread; touches no widget. *now* pins the clock (tests). *via* and
    *remote*: how the operator reaches this console (``web`` and the browser's address).
    """
    from store.ops.write import perform

    secrets = list(request.secrets)
    if now is not None:
        clock = lambda: now  # noqa: E731
    try:
        # The console's redactor already knows the home's secrets: the audit reads no file again.
        written = perform(home, job, via=via, clock=clock, redactor=shown.redactor().with_secrets(*secrets),
                          remote=remote)
    except LockTimeout as exc:
        return WriteResult(request, LOCK_TIMEOUT, error=redact(str(exc), secrets))
    except BadInput as exc:
        return WriteResult(request, BAD_INPUT, error=redact(str(exc), secrets),
                           field=exc.field, problem=redact(exc.problem, secrets))
    except (ConfigUnreadable, StoreUnreadable) as exc:
        return WriteResult(request, UNREADABLE, error=redact(str(exc), secrets))
    except Exception as exc:  # the one place a write's unexpected failure is caught
        return WriteResult(request, FAILED,
                           error=redact(f"internal error: {type(exc).__name__}: {exc}", secrets))
    return WriteResult(request, OK, value=written.value, audit_error=written.audit_error,
                       outcomes=tuple(written.outcomes), history_id=written.history_id,
                       unchanged=written.unchanged)


Callback = Callable[[WriteResult], bool | None]


class WriterHost(Protocol):
    """What the writer needs of the app (the app shell provides it)."""

    home: Home
    read_only: bool
    clock: Clock
    via: str                  # "tui", or "web" for a console served by `hermes-admin web`
    remote: str | None        # the browser's address for a web console

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None: ...

    def run_worker(self, work: Callable[[], None], *, name: str, group: str, thread: bool,
                   exit_on_error: bool) -> Any: ...

    def post_message(self, message: Message) -> bool: ...

    def writes_changed(self) -> None: ...

    def show_feedback(self, feedback: Feedback) -> None:
        """A write's result: the flash line and the message log (tui.services.write_feedback)."""


class Writer:
    """Submits writes to thread workers and routes their results back.

    *app* (a :class:`WriterHost`) forwards :class:`WriteWaiting` / :class:`WriteDone`
    to :meth:`waiting` / :meth:`finish`, and is told through ``app.writes_changed()``
    when the set of pending writes changes (it publishes that to the screens).
    """

    def __init__(self, app: WriterHost) -> None:
        self.app = app
        self.pending: dict[int, WriteRequest] = {}
        self.waiting_on: dict[int, str] = {}      # request id -> lock name it waits for
        self.results: list[WriteResult] = []      # every finished request (tests, audit view)
        self._callbacks: dict[int, Callback] = {}
        self._seq = itertools.count(1)

    # ------------------------------------------------------------ queries
    @property
    def busy(self) -> bool:
        return bool(self.pending)

    def pending_rows(self) -> set[tuple[str, str]]:
        return {key for req in self.pending.values() for key in req.rows}

    def status_text(self) -> str:
        """"waiting for auth.lock…" / "resetting 2 credentials…" / ""."""
        if self.waiting_on:
            locks = sorted(set(self.waiting_on.values()))
            return "waiting for " + ", ".join(locks) + "…"
        if self.pending:
            req = next(iter(self.pending.values()))
            more = f" (+{len(self.pending) - 1})" if len(self.pending) > 1 else ""
            return f"{req.what}…{more}"
        return ""

    # ------------------------------------------------------------ submit
    def submit(self, what: str, job: Job, *, lock: Path | None = None,
               rows: Iterable[tuple[str, str]] = (), secrets: Iterable[str] = (),
               on_done: Callback | None = None) -> WriteRequest | None:
        """Run *job* on a worker thread; return the request, or None when refused (read-only)."""
        app = self.app
        if app.read_only:
            app.notify(READ_ONLY_WEB if app.via == "web" else READ_ONLY, severity="warning", timeout=4,
                       markup=False)
            return None
        req = WriteRequest(next(self._seq), what, lock or app.home.lock, frozenset(rows),
                           tuple(s for s in secrets if s))
        self.pending[req.id] = req
        if on_done is not None:
            self._callbacks[req.id] = on_done
        self._changed()
        home, clock, via, remote = app.home, app.clock, app.via, app.remote

        def work() -> None:
            if not lock_is_free(req.lock):
                app.post_message(WriteWaiting(req))
            app.post_message(WriteDone(run_write(req, job, home, clock=clock, via=via, remote=remote)))

        app.run_worker(work, name=f"write-{req.id}", group="write", thread=True,
                       exit_on_error=False)
        return req

    # ------------------------------------------------------------ results (event loop)
    def waiting(self, request: WriteRequest) -> None:
        if request.id in self.pending:
            self.waiting_on[request.id] = request.lock_name
            self._changed()

    def finish(self, result: WriteResult) -> None:
        req = result.request
        self.pending.pop(req.id, None)
        self.waiting_on.pop(req.id, None)
        self.results.append(result)
        del self.results[:-50]
        callback = self._callbacks.pop(req.id, None)
        handled = bool(callback(result)) if callback is not None else False
        app = self.app
        feedback = None
        if result.ok:
            # Every write that landed says so: action, rows, status after (and the way back).
            notes = getattr(result.value, "notes", ()) or ()
            if result.unchanged is not None:
                notes = (f"{result.unchanged}; nothing written, no audit line",)
            feedback = done_feedback(req.what, result.outcomes, notes,
                                     history_id=result.history_id, now=app.clock())
        elif not handled:
            # A failure stays until dismissed: the operator must not miss that nothing was written.
            feedback = failed_feedback("store busy" if result.kind == LOCK_TIMEOUT else "", result.message(),
                                       result.flash_line())
        if feedback is not None:
            app.show_feedback(feedback)
        if result.audit_error:
            app.notify(result.audit_error, severity="warning", timeout=8, markup=False)
        self._changed()

    def _changed(self) -> None:
        self.app.writes_changed()
