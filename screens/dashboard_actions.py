"""The dashboard's operator actions: add, reset, cooldown, remove, move, strategy, probe, tags.

Each action collects what it needs (a confirmation, a modal), then hands the app's writer
one job for ``store.ops.write.perform`` (a ``StoreChange`` with ``store.ops.actions``, a
``store.config.edit`` edit, ``store.ops.probe_report.run_probe``). Rows are named by id and
found again inside the transaction, in the file as it is then; the table itself updates
from the watcher like after any other change.

Bulk actions (reset, cooldown) apply to the tagged rows when any are tagged, else to every
row of the pool whose header the cursor is on, else to the row under the cursor; their
confirmation lists which. A range mark (``m``, then move) is tagged when it ends: by
``space``, or by ``r``/``c``, which then act on the tags. The store changes and the
wording are pure functions in screens.dashboard_changes.

The dashboard owns one :class:`Operator`, which holds the actions' own state (the tags,
the row just added) and sees the dashboard only through :class:`Board`. The dashboard's
``action_*`` methods, which the bindings, the footer, ``?`` help and the palette see,
each call one method here.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Protocol

from screens import screen
from screens.dashboard_changes import LIST_LIMIT, cooldown_rows, count, describe, listing, move_row, reset_rows
from screens.explain import Refusals
from store.model import is_manual_source
from store.ops import actions
from store.pools.view import CredentialView, PoolView
from tui.services.host import HasApp, Host, host
from tui.services.writer import WriteResult
from tui.text.format import NULL
from tui.text.sentences import (
    READ_ONLY,
    READ_ONLY_WEB,
    REMOVE_SEEDED,
    REMOVE_WARNING,
    RESET_LIVE_HERMES,
    RESET_WARNING,
    SHORTEN_WARNING,
)
from tui.widgets import CredentialTable
from tui.widgets.cells import PENDING_MARK, TAG_MARK
from tui.widgets.rows import Entry, ProfileBanner, mark_key

WRITING = frozenset({"add", "reset", "cooldown", "remove", "move_up", "move_down", "strategy", "probe"})

Key = tuple[str, str]


class Board(HasApp, Protocol):
    """What the operator's actions need of the dashboard they act on."""

    read_only: bool
    sort: str                  # the table's order (K / J move only under the priority order)
    pools: list[PoolView]      # the pools the actions see (a root: the acting profile's)
    refusals: Refusals

    @property
    def table(self) -> CredentialTable: ...

    def writes_changed(self) -> None:
        """Redraw what shows tags and pending writes."""


class Operator:
    """The operator's writes from one dashboard, and the tags they apply to."""

    def __init__(self, board: Board) -> None:
        self.board = board
        self.tags: set[Key] = set()              # (pool, id) rows tagged for bulk actions
        self.pending_cursor: Key | None = None   # a row just added: the cursor goes there

    @property
    def host(self) -> Host:
        return host(self.board)

    @property
    def table(self) -> CredentialTable:
        return self.board.table

    def refuse(self, action: str) -> bool:
        return self.board.refusals.refuse(action)

    # ------------------------------------------------------------ selection
    @property
    def credential_views(self) -> list[CredentialView]:
        return [cv for pv in self.board.pools for cv in pv.credentials]

    def tagged(self) -> list[CredentialView]:
        if not self.tags:
            return []   # the footer asks on every cursor move: no scan of 10,000 rows for nothing
        return [cv for cv in self.credential_views if cv.key in self.tags]

    def targets(self) -> list[CredentialView]:
        """Tagged rows (and a range mark's) when there are any, else the pool's under its
        header, else the row under the cursor."""
        ranged = [e.cred for e in self.table.cursor.range_entries() if e.cred is not None]
        tagged = self.tagged()
        if tagged or ranged:
            return tagged + [cv for cv in ranged if cv not in tagged]
        if (pool := self.header_pool()) is not None:
            return [e.cred for e in self.table.rows.pool_entries(pool) if e.cred is not None]
        cv = self.table.cursor_credential
        return [cv] if cv is not None else []

    def header_pool(self) -> str | None:
        """The table's key of the pool whose header the cursor is on (None elsewhere)."""
        entry = self.table.cursor_entry
        if entry is None or entry.cred is not None or isinstance(entry.pool, ProfileBanner):
            return None
        return entry.pool.key

    def whole_pool(self) -> str | None:
        """The pool a bulk action acts on whole: the cursor's header, when nothing is tagged."""
        return None if self.tags or self.table.range_active else self.header_pool()

    def end_range(self) -> None:
        """Tag the rows of a range mark and end it (``r``/``c`` then act on the tags)."""
        if self.table.range_active:
            self.tags |= {mark_key(e) for e in self.table.mark_range(False)}
            self.board.writes_changed()

    def cursor_pool(self) -> str | None:
        entry = self.table.cursor_entry
        return entry.pool.key if entry is not None else None

    def pool_size(self, pool: str) -> int:
        return next((len(pv.credentials) for pv in self.board.pools if pv.key == pool), 0)

    # ------------------------------------------------------------ availability
    def write_reason(self, action: str) -> str | None:
        """Why *action* cannot run now (None: it can). Drives check_action and the refusal notice."""
        if action not in WRITING:
            return None
        if self.board.read_only:
            return READ_ONLY_WEB if self.host.via == "web" else READ_ONLY
        if action == "add":
            return None
        cursor = self.table.cursor_credential
        if action in ("reset", "cooldown"):
            if self.targets():
                return None
            if (pool := self.header_pool()) is not None:
                return f"{pool} has no credential to act on"
            return "select a credential row (or tag rows with space) first"
        if action in ("remove", "move_up", "move_down"):
            if cursor is None:
                return "move the cursor to a credential row first"
            if action != "remove" and self.board.sort != "priority":
                # The move would not show: refused, saying how to see it (#28).
                return f"K / J change the priority order, but the table is sorted by {self.board.sort}: " \
                       "press o until the sort is priority"
            if action == "move_up" and cursor.index <= 1:
                return f"{cursor.label or cursor.id} is already first in {cursor.pool}"
            if action == "move_down" and cursor.index >= self.pool_size(cursor.pool):
                return f"{cursor.label or cursor.id} is already last in {cursor.pool}"
            return None
        pool = self.cursor_pool()
        if pool is None:
            return "move the cursor to a pool or a credential first"
        if action == "probe" and any(r.what == f"probing {pool}" for r in self.host.writer.pending.values()):
            return f"a probe of {pool} is already running"
        return None

    # ------------------------------------------------------------ writing
    def _write(self, what: str, change: Callable[[dict, float], Any], rows: Iterable[Key] = (),
               on_done: Callable[[WriteResult], bool | None] | None = None) -> None:
        from store.ops.write import StoreChange  # loaded by the first write, not the first paint

        app = self.host
        write = StoreChange(change, lock_timeout=app.lock_timeout)
        app.writer.submit(what, write, rows=rows, on_done=on_done)

    def _clear_tags_on_success(self, keys: set[Key]) -> Callable[[WriteResult], bool]:
        # Tags survive the action (k9s keeps marks), so a `c` then `r` on one set works;
        # only `u` clears them. Kept as a hook: the marks redraw when the write lands.
        def done(result: WriteResult) -> bool:
            if result.ok:
                self.board.writes_changed()
            return False
        return done

    # ------------------------------------------------------------ add
    def add(self) -> None:
        if self.refuse("add"):
            return
        state = self.host.state
        doc = state.doc if state is not None else None
        pools = [pv.key for pv in self.board.pools]
        self.host.push_screen(screen("add key")(pools, pool=self.cursor_pool(), doc=doc), self._added)

    def _added(self, key: Key | None) -> None:
        if key is None:
            return
        self.pending_cursor = key
        self.follow_pending_cursor()

    def follow_pending_cursor(self) -> None:
        """Put the cursor on the row just added, as soon as the table shows it."""
        key = self.pending_cursor
        if key is None:
            return
        table = self.table
        for row_key in table.order:
            e = table.entry(row_key)
            if e is not None and e.cred is not None and e.cred.key == key:
                table.move_to_key(row_key)
                self.pending_cursor = None
                return

    # ------------------------------------------------------------ reset
    def reset(self) -> None:
        self.end_range()
        if self.refuse("reset"):
            return
        cvs = self.targets()
        keys = {cv.key for cv in cvs}
        if (pool := self.whole_pool()) is not None:
            title = f"Reset the whole pool {pool}: {count(len(cvs))}?"
        elif len(cvs) == 1:
            title = f"Reset {describe(cvs[0])}?"
        else:
            title = f"Reset {count(len(cvs), 'tagged credential')}?"
        lines = ["Clears the status and cooldown of:", *listing(cvs)]

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            ordered = [cv.key for cv in cvs]
            self._write(f"resetting {count(len(ordered))}",
                        lambda doc, now: reset_rows(doc, ordered, now), rows=keys,
                        on_done=self._clear_tags_on_success(keys))

        self.host.push_screen(screen("confirm")(title, lines, [RESET_WARNING, RESET_LIVE_HERMES]), answered)

    # ------------------------------------------------------------ cooldown
    def cooldown(self) -> None:
        self.end_range()
        if self.refuse("cooldown"):
            return
        cvs = self.targets()
        pool = self.whole_pool()
        live = [cv for cv in cvs if cv.effective.status != "dead"]
        dead = [cv for cv in cvs if cv.effective.status == "dead"]
        if not live:
            self.host.notify("a dead credential cannot be benched: reset it or add a new key",
                             severity="warning", timeout=5, markup=False)
            return
        notes = []
        if dead:
            notes.append(f"skipped, dead (reset or re-add instead): {', '.join(cv.label for cv in dead)}")
        notes.append("A running agent honours last_error_reset_at as written.")
        keys = {cv.key for cv in live}
        whole = f" of the whole pool {pool}" if pool is not None else ""
        lines = [f"Bench {count(len(live))}{whole}:", *listing(live)]

        def chosen(value: tuple[float, str | None] | None) -> None:
            if value is None:
                return
            until, reason = value
            ordered = [cv.key for cv in live]

            def bench(shorten: bool) -> None:
                self._write(f"benching {count(len(ordered))}",
                            lambda doc, now: cooldown_rows(doc, ordered, until, now, reason, shorten),
                            rows=keys, on_done=self._clear_tags_on_success(keys))

            # A manual cooldown never silently hides a longer bench: a second question says so.
            longer = [cv for cv in live if (cv.effective.available_at or 0) > until]
            if not longer:
                bench(False)
                return
            self.host.push_screen(screen("confirm")(
                f"Shorten {count(len(longer), 'longer bench')}?",
                [f"  {describe(cv)}" for cv in longer[:LIST_LIMIT]],
                [SHORTEN_WARNING]), lambda yes: bench(True) if yes else None)

        self.host.push_screen(screen("cooldown")(self.host.clock, lines, notes), chosen)

    # ------------------------------------------------------------ remove
    def remove(self) -> None:
        if self.refuse("remove"):
            return
        cv = self.table.cursor_credential
        source = str(cv.row.get("source") or "")
        lines = [f"  {describe(cv)}", f"  source {source or NULL} · key {cv.fingerprint or NULL}"]
        notes = [REMOVE_WARNING]
        if source and not is_manual_source(source):
            notes.append(REMOVE_SEEDED.format(source=source))

        def answered(yes: bool | None) -> None:
            if yes:
                self.tags.discard(cv.key)
                self._write(f"removing {cv.label or cv.id} from {cv.pool}",
                            lambda doc, now: actions.remove(doc, cv.pool, cv.id), rows={cv.key})

        self.host.push_screen(screen("confirm")(f"Remove {cv.pool} #{cv.index} {cv.label or cv.id}?",
                                            lines, notes), answered)

    # ------------------------------------------------------------ priority
    def move(self, delta: int) -> None:
        """Move the cursor's row one place up (-1) or down (+1), unless that is refused."""
        if self.refuse("move_up" if delta < 0 else "move_down"):
            return
        cv = self.table.cursor_credential
        where = "up" if delta < 0 else "down"
        self._write(f"moving {cv.label or cv.id} {where} in {cv.pool}",
                    lambda doc, now: move_row(doc, cv.pool, cv.id, delta), rows={cv.key})

    # ------------------------------------------------------------ strategy
    def strategy(self) -> None:
        if self.refuse("strategy"):
            return
        pool = self.cursor_pool()
        state = self.host.state
        current = state.strategies.get(pool) if state is not None else None
        from screens.strategy import open_strategy_picker  # the picker's module, when first opened

        open_strategy_picker(self.host, pool, current)

    # ------------------------------------------------------------ probe
    def probe(self) -> None:
        if self.refuse("probe"):
            return
        app = self.host
        pool = self.cursor_pool()
        state = app.state
        ttls = state.ttls if state is not None else None
        env = dict(state.env) if state is not None else {}
        home, timeout, now = app.home, app.lock_timeout, app.clock()
        cooling = {cv.key for pv in self.board.pools if pv.key == pool for cv in pv.credentials
                   if cv.effective.status == "cooling"}

        def probe() -> Any:
            # Imported here: the probe's urllib and http.client are not the first paint's.
            from store.ops.probe_report import run_probe

            kw = {"ttls": ttls} if ttls is not None else {}
            return run_probe(home, pool, now, env=env, lock_timeout=timeout, **kw)

        def done(result: WriteResult) -> bool:
            if result.ok:
                app.push_screen(screen("probe")(result.value))
                return True
            return False

        app.writer.submit(f"probing {pool}", probe, rows=cooling, on_done=done)

    # ------------------------------------------------------------ tags and the log
    def tag_key(self) -> Key | None:
        """The key a tag of the cursor's row is kept under; None off a credential row."""
        cv = self.table.cursor_credential
        return cv.key if cv is not None else None

    def tag(self) -> None:
        table = self.table
        if table.range_active:
            self.tag_rows(table.mark_range(False), "the range")
            return
        if (pool := self.header_pool()) is not None:
            self.tag_rows(table.rows.pool_entries(pool), pool)
            table.action_move("down")
            return
        key = self.tag_key()
        if key is None:
            self.host.notify("tags are for credential rows; move the cursor to one", timeout=3,
                             markup=False)
            return
        self.tags ^= {key}
        self.board.writes_changed()
        table.action_move("down")  # htop: tag, then move to the next row

    def tag_rows(self, entries: list[Entry], where: str) -> None:
        """Tag every row of *entries* (untag them when all are tagged already), saying so."""
        keys = {mark_key(e) for e in entries if e.cred is not None}
        untag = bool(keys) and keys <= self.tags
        self.tags = self.tags - keys if untag else self.tags | keys
        self.board.writes_changed()
        done = "untagged" if untag else "tagged"
        self.host.notify(f"{done} {count(len(keys), 'row')} of {where} · {len(self.tags)} tagged "
                         "· u untags all", timeout=3, markup=False)

    def clear_tags(self) -> None:
        self.tags.clear()
        self.board.writes_changed()

    def audit(self) -> None:
        screen("audit").open_for(self.host)

    # ------------------------------------------------------------ marks
    def marks(self) -> dict[Key, str]:
        marks = {key: TAG_MARK for key in self.tags}
        for key in self.host.writer.pending_rows():
            marks[key] = PENDING_MARK
        return marks
