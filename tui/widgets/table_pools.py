"""Taking a pool's rows into the credential table: whole, or only the rows a write changed.

A mixin of :class:`tui.widgets.credential_table.CredentialTable` (the table owns the rows,
their cells, versions and the cooling index; this brings one pool's rows up to date and
says which formatted rows must repaint).
"""

from __future__ import annotations

import math

from tui.widgets.rows import Entry
from tui.widgets.table_cells import estimate


class PoolRows:
    """``_apply_pool`` (a pool walked whole), ``_patch_pool`` (only its changed rows) and
    ``_take`` (one row), as :meth:`CredentialTable._apply` calls them."""

    def _apply_pool(self, pool: str, rows: list[Entry], now: float, fps: dict) -> list[str]:
        """Take one fresh pool's rows; return the keys of formatted rows whose cells changed."""
        dirty: list[str] = []
        deferred: list[Entry] = []
        cooling: dict[str, float] = {}
        for e in rows:
            if self._take(e, now, fps, cooling, dirty):
                deferred.append(e)
        self._pool_cooling[pool] = cooling
        self._cooling.update(cooling)
        self._pool_flip[pool] = min(cooling.values(), default=math.inf)
        if deferred:
            self._pool_est[pool] = estimate(deferred, fps, self._notes)
        return dirty

    def _patch_pool(self, pool: str, rows: list[Entry], changed: list[Entry], now: float,
                    fps: dict) -> list[str]:
        """Take only the *changed* rows of a pool whose rows kept their keys and order
        (:func:`patch_entries`): a write to one row of 500 looks at that row.

        A changed row that stays unformatted moves its pool's width estimate: up at once;
        down only by counting the pool's unformatted rows again, when it was the longest.
        """
        dirty: list[str] = []
        cooling = self._pool_cooling.setdefault(pool, {})
        est = self._pool_est.get(pool)
        recount = False
        for e in changed:
            key = e.key
            was = self._entries.get(key)
            if e.cred is not None and cooling.pop(key, None) is not None:
                self._cooling.pop(key, None)
            deferred = self._take(e, now, fps, cooling, dirty)
            if key in cooling:
                self._cooling[key] = cooling[key]
            if not deferred:
                continue
            new = estimate((e,), fps, self._notes)
            old = estimate((was,), fps, self._notes) if was is not None and was.cred else new
            if est is None:
                recount = True
                continue
            for col, n in new.items():
                if n > est[col]:
                    est[col] = n
                elif old[col] > n and old[col] >= est[col]:
                    recount = True  # the longest row got shorter
        if recount:
            deferred = [e for e in rows if e.key in self._lazy]
            self._pool_est[pool] = estimate(deferred, fps, self._notes)
        self._pool_flip[pool] = min(cooling.values(), default=math.inf)
        return dirty

    def _take(self, e: Entry, now: float, fps: dict, cooling: dict[str, float],
              dirty: list[str]) -> bool:
        """Take one row: record it, note its cooldown in *cooling*, and bring its cells up
        to date (adding its key to *dirty* if a formatted row changed). True when the row
        is left unformatted until shown."""
        key = e.key
        cv = e.cred
        self._entries[key] = e
        if cv is not None:
            eff = cv.effective
            if eff.status == "cooling" and eff.available_at is not None:
                cooling[key] = eff.available_at
            if key not in self._data:
                self._defer(key)   # formatted when first shown
                return True
        sig = self._sig(e, fps)
        if self._sigs.get(key) == sig:
            return False
        self._sigs[key] = sig
        dirty.append(key)
        if key not in self._data:
            self._set_data(key, self._cells(e, now, fps))
            return False
        if cv is None:
            # A header holds no cells (its words are poured in when painted): a new
            # version is what makes its line render again with the new counts.
            self._versions[key] = self._cells_v[key] = next(self._seq)
            return False
        for col, value in self._cells(e, now, fps).items():
            if self._data[key].get(col) != value:
                self.update_cell(key, col, value)
        return False
