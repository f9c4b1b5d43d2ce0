"""The CLI's redaction boundary: every byte hermes-admin writes to stdout or stderr passes it.

:func:`install` runs before argparse parses anything, so argparse's own messages
(an unknown ``--api-key=<key>``, a list of choices) pass it too. It registers every
argument that holds a key (a value of a key-taking option, or any key-shaped token),
builds one :class:`store.redaction.redact.Redactor` from the home's secrets (store, config,
``.env``), and wraps ``sys.stdout``/``sys.stderr`` in :class:`RedactingStream`.

The stream also renders text inert: control, bidi and zero-width characters from a
store written by someone else are shown as ``\\x1b``, never sent raw to the terminal,
whichever verb printed them. Only newline and tab pass as they are: the stream cannot tell
a line break hermes-admin composed from one inside a label, so every printer passes each
outside field through the one funnel, :func:`tui.text.shown.shown`, which escapes it
(``\\x0a``). :class:`Boundary` installs this process's redactor in that funnel.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import sys
import threading
from typing import Callable, Sequence, TextIO

from store.errors import HermesAdminError
from store.ops import textcheck
from store.paths import resolve_home
from store.profiles import root
from store.redaction import crash, redact
from tui.text import shown

# Options whose value is a key: registered whole, whatever its shape.
SECRET_OPTIONS = ("--api-key", "--redis", "--fleet", "--secret")
# Options whose value is a URL: only its password is secret (a URL without one is shown as
# it is, ``redis://host:6379/0``, never as a fingerprint of the whole URL).
URL_OPTIONS = ("--redis", "--fleet")


def _secret_value(option: str, value: str) -> list[str]:
    if option not in URL_OPTIONS:
        return [value]
    from store.fleet.keys import url_passwords  # only for a URL option: the console's start-up skips it

    passwords = url_passwords(value)
    return [value, *passwords] if passwords else []


def argv_secrets(argv: Sequence[str]) -> list[str]:
    """The values on this command line that are keys (never echoed, always redacted)."""
    found: list[str] = []
    after_secret_opt = ""
    for token in argv:
        if after_secret_opt and token != "-":
            found += _secret_value(after_secret_opt, token)
        after_secret_opt = token if token in SECRET_OPTIONS else ""
        name, eq, value = token.partition("=")
        if eq and name in SECRET_OPTIONS and value != "-":
            found += _secret_value(name, value)
        for part in (token, value) if eq else (token,):
            if textcheck.keyish(part) and not part.startswith("-"):
                found.append(part)
    return found


def _opt(argv: Sequence[str], name: str) -> str | None:
    """The value of option *name* on *argv* as argparse takes it: the last one given."""
    found = None
    for i, token in enumerate(argv):
        if token == name and i + 1 < len(argv):
            found = argv[i + 1]
        elif token.startswith(name + "="):
            found = token[len(name) + 1:]
    return found


def redactor_for(argv: Sequence[str]) -> redact.Redactor:
    """The one redactor of this process: the home's secrets plus the keys on *argv*; with
    ``inventory`` or ``--all-profiles``, every profile's secrets under the root too."""
    redact.register(*argv_secrets(argv))
    try:
        home = resolve_home(_opt(argv, "--home"))
        r = redact.for_home(home)
        if "inventory" in argv or "--all-profiles" in argv:
            for profile in root.discover(root.resolve_root(_opt(argv, "--root"), _opt(argv, "--home"))):
                r.add(*redact.home_secrets(profile.home))
        return r
    except (OSError, ValueError, HermesAdminError):
        # A home we cannot even resolve holds nothing we could show; patterns still apply.
        return redact.Redactor()


def inert(text: str) -> str:
    """*text* with every control character escaped except newline and tab."""
    return "\n".join("\t".join(redact.escape_controls(p) for p in line.split("\t"))
                     for line in text.split("\n"))


def fit(text: str, encoding: str) -> str:
    """*text* as *encoding* can carry it: a fingerprint's ellipsis as ``...``, a null's dash as
    ``-``, arrows as ``<-``/``->``, anything else it cannot encode as ``?`` (never a secret: the
    text is redacted first)."""
    plain = text.translate(_PLAIN)
    return plain.encode(encoding, "replace").decode(encoding)


_PLAIN = str.maketrans({"\u2026": "...", "\u2014": "-", "\u2190": "<-", "\u2192": "->", "\u00b7": "-"})


class ClosedStdout(OSError):
    """stdout was closed when hermes-admin started (``>&-``): nothing it prints can go anywhere."""


class ClosedStream(io.TextIOBase):
    """What stands in for a stream closed before hermes-admin started (Python gives None):
    a write to stdout raises :class:`ClosedStdout` (the verb fails, exit 1, and says so on
    stderr, as other Unix tools report a write error); a write to stderr is dropped (nowhere
    is left to say anything; the exit code still tells)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.stream_name = name

    def write(self, s: str) -> int:  # type: ignore[override]
        if s and self.stream_name == "stdout":
            raise ClosedStdout(errno.EBADF, "stdout is closed")
        return len(s)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, f"{self.stream_name} is closed")

    def writable(self) -> bool:
        return True


class RedactingStream(io.TextIOBase):
    """A text stream that redacts and escapes whole lines before passing them on.

    Text is held until a newline or a flush, so a key written in two pieces (``print``
    writes the text and the newline apart; ``json.dump`` writes in chunks) is still
    seen whole by the redactor.
    """

    def __init__(self, inner: TextIO, redactor: redact.Redactor | Callable[[], redact.Redactor]) -> None:
        super().__init__()
        self.inner = inner
        self._redactor = redactor
        self._held = ""
        self.failed: OSError | None = None    # the first write or flush the stream refused

    @property
    def redactor(self) -> redact.Redactor:
        """The redactor (a callable given is asked when the first byte passes)."""
        r = self._redactor
        return r if isinstance(r, redact.Redactor) else r()

    def write(self, s: str) -> int:  # type: ignore[override]
        self._held += s
        if "\n" in self._held:
            done, _, self._held = self._held.rpartition("\n")
            self._emit(done + "\n")
        return len(s)

    def _emit(self, text: str) -> None:
        if text:
            out = inert(self.redactor.redact(text))
            try:
                try:
                    self.inner.write(out)
                except UnicodeEncodeError:      # a stream that cannot take it (PYTHONIOENCODING=ascii)
                    self.inner.write(fit(out, self.encoding))
            except OSError as exc:      # noted: argparse drops a failed --help write without a word
                self.failed = self.failed or exc
                raise

    def flush(self) -> None:
        held, self._held = self._held, ""
        self._emit(held)
        try:
            self.inner.flush()
        except OSError as exc:
            self.failed = self.failed or exc
            raise

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")

    def writable(self) -> bool:
        return True


class Boundary:
    """Installed streams, restored on exit (tests call main() many times in one process).

    The home's secrets are read when they are first needed: the first byte either stream
    passes, or a verb asking for :attr:`redactor`. The console, which redacts in its own
    funnel, never asks, so its start-up does not read the home twice.
    """

    def __init__(self, argv: Sequence[str]) -> None:
        self._argv = list(argv)
        self._redactor: redact.Redactor | None = None
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout = RedactingStream(sys.stdout or ClosedStream("stdout"),  # type: ignore[assignment]
                                     lambda: self.redactor)
        sys.stderr = RedactingStream(sys.stderr or ClosedStream("stderr"),  # type: ignore[assignment]
                                     lambda: self.redactor)

    @property
    def redactor(self) -> redact.Redactor:
        """The one redactor of this process, built on first use from the home and *argv*."""
        if self._redactor is None:
            self._redactor = redactor_for(self._argv)
            shown.use(self._redactor)   # every printer's fields: this redactor, then inert
        return self._redactor

    def stdout_failure(self) -> OSError | None:
        """What refused this process's output on stdout (its held text flushed first), or
        None: for the answers argparse prints itself (``--help``, ``--version``), whose failed
        writes it drops or lets escape."""
        out = sys.stdout
        if not isinstance(out, RedactingStream):
            return None
        try:
            out.flush()
        except (OSError, ValueError):
            pass
        return out.failed

    def release(self) -> None:
        """Flush what is held and put the original streams back (before the dashboard,
        which draws on the terminal itself and redacts in its own funnel)."""
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, RedactingStream):
                try:
                    stream.flush()
                except (OSError, ValueError):     # a broken pipe, a closed stdout: said already
                    pass
        sys.stdout, sys.stderr = self._saved


def install(argv: Sequence[str] | None) -> Boundary:
    """Register the keys on *argv* (default: sys.argv[1:]) and wrap stdout/stderr, once the
    standard descriptors closed before the start are filled (:func:`fill_closed_fds`)."""
    fill_closed_fds()
    return Boundary(list(sys.argv[1:] if argv is None else argv))


def fill_closed_fds() -> None:
    """Put ``/dev/null`` on each of descriptors 0-2 that was closed before the start (``<&-``,
    ``>&-``), so no file hermes-admin opens later takes its number: a child's stdout, or a
    stray write to descriptor 1, would land in that file. A closed stdin reads as empty
    (as ``< /dev/null``: a prompt is not asked, ``--api-key -`` finds nothing)."""
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, flags)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    if sys.stdin is None:          # Python's stand-in for a stdin closed at its start (fd 0 is /dev/null now)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's stdin from here on
    if sys.__stdin__ is None:      # what the console's terminal driver reads
        sys.__stdin__ = sys.stdin


def settle_streams() -> None:
    """Flush stdout and stderr now, and point one whose terminal hung up at /dev/null.

    Python flushes both at exit and, when that fails (a dropped SSH session, a closed tmux
    pane: EIO), exits 120 whatever status the program returned. Which of the two happens
    depends on whether anything was left in a buffer: a race. After this, the last flush
    cannot fail, so a console ended by a hang-up exits 129 every time.
    """
    for stream in (sys.stdout, sys.stderr):
        if stream is None:          # closed before the start: nothing to flush
            continue
        try:
            stream.flush()
            continue
        except (OSError, ValueError):
            pass
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, stream.fileno())
            finally:
                os.close(devnull)
        except (OSError, ValueError):
            pass


def follow_tracebacks(redactor_of: Callable[[], redact.Redactor]) -> Callable[[], None]:
    """For a long-running verb: every traceback it prints later goes through the redactor
    *redactor_of* gives at that moment (the homes' secrets as last read, not only those the
    boundary knew at start), without locals: log records with a traceback (aiohttp's
    "Error handling request", asyncio's) and a thread that dies. Returns the undo."""
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s", "%H:%M:%S"))
    handler.addFilter(crash.LogRedaction(redactor_of))
    saved_handlers, saved_hook = list(root.handlers), threading.excepthook
    root.handlers = [handler]

    def thread_died(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None:
            name = args.thread.name if args.thread is not None else "a thread"
            sys.stderr.write(f"hermes-admin: {name} stopped: {crash.report(args.exc_value, redactor_of())}\n")

    threading.excepthook = thread_died

    def undo() -> None:
        root.handlers = saved_handlers
        threading.excepthook = saved_hook

    return undo


def debug_enabled() -> bool:
    return bool(os.environ.get("HERMES_ADMIN_DEBUG"))
