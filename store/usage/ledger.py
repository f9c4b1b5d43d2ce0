"""The usage ledger (#29): hermes-admin's own SQLite database beside the home
(:data:`store.usage.record.LEDGER_FILE`), written behind on its own thread.

- WAL mode, the file 0600, created without following a link: a symlink at the ledger's
  name (or at its ``-wal`` / ``-shm``) is refused, never followed;
- no secret: each row names its key by pool, row id and fingerprint;
- never under ``auth.lock`` and never in auth.json: :class:`Ledger` is a listener of
  :class:`store.usage.feed.UsageFeed`; it queues each :class:`Spent` and a thread writes
  them in batches (one transaction each), with the hourly roll-up (:data:`HOURLY_TABLE`,
  the ledger's own) updated in the same transaction;
- per-request rows are kept ``usage.keep_requests``, roll-ups ``usage.keep_hourly``;
- a ledger that is locked (its rows wait, bounded), corrupt (not recorded until it is
  readable again) or removed (a new one is started) is a notice: the proxy (or the agent
  runtime, :mod:`store.agent.spending`) goes on.
"""

from __future__ import annotations

import collections
import functools
import itertools
import logging
import os
import sqlite3
import stat
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from pathlib import Path

from store import safeio
from store.errors import StoreUnreadable
from store.usage.record import LEDGER_FILE, REQUESTS_TABLE, Spent

log = logging.getLogger("hermes_admin.usage")


def _null(value: None) -> None:
    return value


# A None parameter has no fast path in the sqlite3 module: for each one it looks for an
# adapter, then for ``__conform__`` on None, whose AttributeError it formats and drops. A row
# of the ledger binds several (the token counts an answer did not give, a cost not known):
# about 1 us a row, a quarter of its write (``bench/bench_ledger_nulls.py``). An adapter for
# None is found in one dictionary lookup and binds NULL all the same (it changes nothing
# else: adapters are consulted for parameters only).
sqlite3.register_adapter(type(None), _null)

HOURLY_TABLE = """CREATE TABLE IF NOT EXISTS hourly (
    hour INTEGER NOT NULL, pool TEXT NOT NULL, row_id TEXT NOT NULL, fingerprint TEXT NOT NULL,
    model TEXT NOT NULL, endpoint TEXT NOT NULL, cost_status TEXT NOT NULL, requests INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL, reasoning_tokens INTEGER NOT NULL, cost_usd REAL,
    partial INTEGER NOT NULL,
    PRIMARY KEY (hour, pool, row_id, model, endpoint, cost_status)) WITHOUT ROWID"""
INDEXES = ("CREATE INDEX IF NOT EXISTS requests_at ON requests (at)",)
BUSY_MS = 200             # a writer waits this long for another's lock, then tries next round
FLUSH_EVERY = 0.5         # seconds between batches
BATCH = 5000              # rows per transaction at most
QUEUE_CAP = 200_000       # answers waiting at most (a ledger locked for long): older ones are dropped
REOPEN_EVERY = 30.0       # seconds between tries to open a ledger that failed
PRUNE_EVERY = 3600.0

_COLUMNS = ("at, pool, row_id, fingerprint, model, endpoint, route, input_tokens, output_tokens, "
            "cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, cost_status, partial")
_WIDTH = 15               # the columns of a row (the parameters of one row's VALUES)
_CHUNK = 512              # rows in one INSERT at most (and fewer where SQLite takes fewer parameters)
_ROWS = f"INSERT INTO requests ({_COLUMNS}) VALUES "
#: How a roll-up row meets the one already kept for its hour and group: the counts added
#: (the cost's rule, and what else changes, follow in each statement that uses it).
ROLL_SUMS = """ON CONFLICT (hour, pool, row_id, model, endpoint, cost_status) DO UPDATE SET
    requests = requests + excluded.requests, input_tokens = input_tokens + excluded.input_tokens,
    output_tokens = output_tokens + excluded.output_tokens,
    cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
    cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
    reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens,"""
# One roll-up row added to its hour's sums so far (the fingerprint the latest).
_ROLL = """INSERT INTO hourly VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
""" + ROLL_SUMS + """
    cost_usd = CASE WHEN excluded.cost_usd IS NULL THEN cost_usd ELSE coalesce(cost_usd, 0) + excluded.cost_usd END,
    partial = partial + excluded.partial, fingerprint = excluded.fingerprint"""


class LedgerUnreadable(StoreUnreadable):
    """The ledger cannot be opened or read (a symlink, not a database, locked...)."""


def ledger_path(root: Path) -> Path:
    """Where the ledger of the home at *root* is."""
    return root / LEDGER_FILE


def _no_links(path: Path) -> None:
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise LedgerUnreadable(p, "is a symlink; hermes-admin does not follow one here")
        if not stat.S_ISREG(st.st_mode):
            raise LedgerUnreadable(p, f"is {safeio.kind(st.st_mode)}, not a regular file")


def _uri(path: Path) -> str:
    """*path* as an SQLite URI: ``#``, ``?`` and ``%`` in a folder's name are escaped, not read
    as the URI's fragment, query or an escape (which opened another file, outside the home)."""
    return "file:" + urllib.parse.quote(str(path), safe="/")


def open_ledger(path: Path, *, write: bool) -> sqlite3.Connection:
    """A connection to the ledger at *path*: for the writer (*write*: created 0600 when
    missing, WAL, its tables made) or read-only (a missing ledger: FileNotFoundError; it
    writes nothing). Raises :class:`LedgerUnreadable` for a link, a non-database, a lock."""
    _no_links(path)
    if write:
        fd = safeio.open_checked(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), None,
                                 LedgerUnreadable, mode=0o600)
        try:
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
        uri = f"{_uri(path)}?mode=rw"
    else:
        if not path.exists():
            raise FileNotFoundError(str(path))
        # Reading writes nothing: a ledger no writer has open (no -wal beside it) is read as
        # immutable, so SQLite makes no -wal or -shm file for the reader (and a home the
        # reader cannot write still reads); while a writer has it open, as any WAL reader.
        uri = f"{_uri(path)}?mode=ro" + ("" if os.path.lexists(f"{path}-wal") else "&immutable=1")
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_MS / 1000, isolation_level=None,
                               check_same_thread=False)
    except sqlite3.Error as exc:
        raise LedgerUnreadable(path, f"cannot be opened ({exc})") from None
    try:
        if write:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            for ddl in (REQUESTS_TABLE, HOURLY_TABLE, *INDEXES):
                conn.execute(ddl)
        else:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        conn.close()
        raise LedgerUnreadable(path, f"is not a usable usage ledger ({exc})") from None
    return conn


def row_of(s: Spent) -> tuple:
    """One answer as the ledger's row: the parameters of its VALUES, in :data:`_COLUMNS` order."""
    return (s.at, s.pool, s.row_id, s.fingerprint, s.model, s.endpoint, s.route, s.input_tokens, s.output_tokens,
            s.cache_read_tokens, s.cache_write_tokens, s.reasoning_tokens, s.cost_usd, s.cost_status,
            int(s.partial))


def chunk_of(conn: sqlite3.Connection) -> int:
    """The most rows one INSERT of *conn* takes: :data:`_CHUNK`, or the power of two that
    fits SQLite's limit on a statement's parameters (999 before SQLite 3.32)."""
    most = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // _WIDTH
    chunk = _CHUNK
    while chunk > most:
        chunk //= 2
    return chunk


def rolled(rows: Iterable[tuple]) -> list[tuple]:
    """*rows* (each from :func:`row_of`) summed per hour (``at // 3600``, as the readers count
    hours), key, model, endpoint and cost status: the roll-up's rows, each with the
    fingerprint of its latest row."""
    sums: dict[tuple, list] = {}
    for at, pool, row_id, fp, model, endpoint, _route, inp, out, c_read, c_write, reason, cost, status, part in rows:
        key = (int(at // 3600), pool, row_id or "", model or "", endpoint or "", status)
        acc = sums.get(key)
        if acc is None:
            acc = sums[key] = [fp or "", 0, 0, 0, 0, 0, 0, None, 0]
        else:
            acc[0] = fp or ""
        acc[1] += 1
        acc[2] += inp or 0
        acc[3] += out or 0
        acc[4] += c_read or 0
        acc[5] += c_write or 0
        acc[6] += reason or 0
        if cost is not None:
            acc[7] = (acc[7] or 0.0) + cost
        acc[8] += part
    return [(k[0], k[1], k[2], a[0], k[3], k[4], k[5], *a[1:]) for k, a in sums.items()]


@functools.lru_cache(maxsize=16)
def _insert(n: int) -> str:
    one = "(" + ", ".join("?" * _WIDTH) + ")"
    return _ROWS + ", ".join([one] * n)


def write_rows(conn: sqlite3.Connection, rows: list[tuple]) -> None:
    """One transaction: *rows* (each from :func:`row_of`) and their roll-up (:func:`rolled`).

    A few statements a batch, not one per row: the rows in INSERTs of a power of two of rows
    (at most :func:`chunk_of`; about six for a batch of a few hundred, each prepared once and
    cached by the connection), then one upsert per roll-up row (a batch of the proxy's holds a
    few: its hour's keys, models and endpoints). SQLite does its work with the GIL released,
    and the writer takes the GIL back a few times a batch instead of twice a row. The roll-up
    is summed here in Python (about 0.6 us a row) rather than by an ``INSERT ... SELECT ...
    GROUP BY`` over the rows just written, which cost SQLite about 1.5 us a row more
    (docs/benchmarks.md, "Usage ledger")."""
    chunk = chunk_of(conn)
    conn.execute("BEGIN IMMEDIATE")
    try:
        i = 0
        while i < len(rows):
            n = chunk
            while n > len(rows) - i:
                n //= 2
            conn.execute(_insert(n), list(itertools.chain.from_iterable(rows[i:i + n])))
            i += n
        conn.executemany(_ROLL, rolled(rows))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def write_batch(conn: sqlite3.Connection, batch: Iterable[Spent]) -> None:
    """One transaction: the answers of *batch* and their roll-up (:func:`write_rows`)."""
    write_rows(conn, [row_of(s) for s in batch])


def prune(conn: sqlite3.Connection, now: float, keep_requests: float, keep_hourly: float) -> None:
    """Rows past their keep: per-request ones after *keep_requests*, roll-ups after *keep_hourly*."""
    conn.execute("DELETE FROM requests WHERE at < ?", (now - keep_requests,))
    conn.execute("DELETE FROM hourly WHERE hour < ?", (int((now - keep_hourly) // 3600),))


class Ledger:
    """The feed's listener that keeps the ledger at *path* (see the module docstring)."""

    def __init__(self, path: Path, *, keep_requests: float, keep_hourly: float,
                 notice: Callable[[str], object] = log.warning, clock: Callable[[], float] = time.time,
                 goes_on: str = "the proxy serves on") -> None:
        self.path = path
        self.goes_on = goes_on          # what a notice of trouble says carries on
        self.keep_requests, self.keep_hourly = keep_requests, keep_hourly
        self.notice, self.clock = notice, clock
        self.written = 0
        self.dropped = 0
        self.problem: str | None = None
        self._queue: collections.deque[tuple] = collections.deque()     # rows (row_of), oldest first
        self._wake, self._stop = threading.Event(), threading.Event()
        self._conn: sqlite3.Connection | None = None
        self._ino: tuple[int, int] | None = None
        self._next_open = 0.0
        self._next_prune = 0.0
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    def __call__(self, spent: Spent) -> None:
        """Queue one answer (never blocks; the oldest is dropped past :data:`QUEUE_CAP`).
        The writer thread starts with the first."""
        if len(self._queue) >= QUEUE_CAP:
            self._queue.popleft()
            self.dropped += 1
        self._queue.append(row_of(spent))
        if self._thread is None:
            with self._start:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="usage-ledger", daemon=True)
                    self._thread.start()

    @property
    def pending(self) -> int:
        return len(self._queue)

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (bounded by *timeout*), then stop."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            self._wake.wait(FLUSH_EVERY)
            self._wake.clear()
            stopping = self._stop.is_set()
            self._round()
            if stopping:
                break
        if self._conn is not None:
            self._conn.close()

    def _say(self, problem: str | None) -> None:
        if problem != self.problem and problem is not None:
            self.notice(f"usage ledger {self.path.name}: {problem}; {self.goes_on}")
        elif problem is None and self.problem is not None:
            self.notice(f"usage ledger {self.path.name}: recording again")
        self.problem = problem

    def _round(self) -> None:
        if not self._queue:
            return
        conn = self._connection()
        if conn is None:
            return
        while self._queue:
            batch = [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]
            try:
                write_rows(conn, batch)
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    self._queue.extendleft(reversed(batch))    # they wait for the next round
                    self._say("locked by another process (its answers wait, bounded, for the next round)")
                    return
                self._broken(f"cannot be written ({exc}); {len(batch)} answers not recorded", len(batch))
                return
            except sqlite3.Error as exc:
                self._broken(f"cannot be written ({exc}); {len(batch)} answers not recorded", len(batch))
                return
            self.written += len(batch)
            self._say(None)
        now = self.clock()
        if now >= self._next_prune:
            self._next_prune = now + PRUNE_EVERY
            try:
                prune(conn, now, self.keep_requests, self.keep_hourly)
            except sqlite3.Error:
                pass            # the next hour tries again

    def _broken(self, problem: str, lost: int) -> None:
        self.dropped += lost
        self._say(problem)
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._next_open = self.clock() + REOPEN_EVERY

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is not None:
            try:
                st = os.stat(self.path)
                same = (st.st_dev, st.st_ino) == self._ino
            except OSError:
                same = False
            if same:
                return self._conn
            self._conn.close()
            self._conn = None
            self._say("was removed or replaced; a new ledger is started")
            self._next_open = 0.0
        if self.clock() < self._next_open:
            self._drop_waiting()
            return None
        try:
            self._conn = open_ledger(self.path, write=True)
            st = os.stat(self.path)
            self._ino = (st.st_dev, st.st_ino)
            return self._conn
        except (StoreUnreadable, OSError) as exc:
            self._next_open = self.clock() + REOPEN_EVERY
            self._say(str(exc))
            self._drop_waiting()
            return None

    def _drop_waiting(self) -> None:
        n = len(self._queue)
        self._queue.clear()
        self.dropped += n
