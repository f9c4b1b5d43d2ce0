"""One reopen probe of a pool, worded and audited the same way by the CLI and the dashboard.

:func:`run_probe` reads the pool, asks :func:`store.agent.probe.lift_reopened_cooldowns` (probes
first with no lock held, then one transaction), and returns a :class:`ProbeReport`: a row per
credential with its verdict and what happened to it, plus the audit :class:`Outcome` of what
was lifted (None when nothing was), which :func:`store.ops.write.perform` audits. Nothing here
touches a terminal or a widget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from store.agent import probe
from store.agent.headroom import Headroom
from store.authfile import read_store
from store.errors import BadInput
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import STATUS_FIELDS, Row, pool_rows, pools, sorted_rows
from store.ops.actions import Change, Outcome, resolve
from store.paths import Home
from store.pools import policy, view
from store.pools.view import NULL

LIFT_NOTE = "lifted after a reopen probe (or an elapsed cooldown)"


@dataclass(frozen=True)
class ProbeRow:
    """One credential's line in a probe report. Holds a fingerprint, never the secret."""

    id: str
    label: str | None
    index: int
    fingerprint: str | None
    verdict: str | None          # reopened | limited | unknown | None (not probed)
    reason: str | None
    lifted: bool                 # a probe said reopened and the cooldown was lifted
    elapsed_cleared: bool        # the cooldown had simply run out and was cleared
    status: str                  # effective status when probed (ok, cooling, ready, dead)
    described: str | None = None  # Verdict.describe(): "still limited (...)", "unknown (...)"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "index": self.index, "fingerprint": self.fingerprint,
                "verdict": self.verdict, "reason": self.reason, "lifted": self.lifted,
                "elapsed_cleared": self.elapsed_cleared, "status": self.status}

    def outcome_text(self) -> str:
        """What happened to this row, in the words the CLI prints."""
        if self.verdict is None:
            if self.elapsed_cleared:
                return "cooldown had elapsed; cleared"
            return f"not probed ({self.status})"
        if self.lifted:
            return f"reopened ({self.reason}); cooldown lifted"
        return self.described or self.verdict

    def line(self, pool: str) -> str:
        who = f"{pool} #{self.index} {self.label or NULL} (id={self.id}, {self.fingerprint or NULL})"
        return f"{who}: {self.outcome_text()}"


@dataclass
class ProbeReport:
    pool: str
    checked_at: float
    available: bool
    rows: list[ProbeRow] = field(default_factory=list)
    outcome: Outcome | None = None   # what to audit; None when nothing was lifted

    @property
    def undecided(self) -> list[ProbeRow]:
        return [r for r in self.rows if r.verdict == probe.UNKNOWN]

    @property
    def lifted(self) -> list[ProbeRow]:
        return [r for r in self.rows if r.lifted or r.elapsed_cleared]

    def summary(self) -> str:
        state = "has a usable credential" if self.available else "has no usable credential yet"
        return f"{self.pool} {state}"

    def to_json(self) -> dict[str, Any]:
        return {"pool": self.pool, "checked_at": self.checked_at, "available": self.available,
                "rows": [r.to_json() for r in self.rows]}


def _keep_readings(home: Home, pool: str, rows: list[Row], verdicts: Mapping[str, Any],
                   env: Mapping[str, str]) -> None:
    """What the probe's endpoints said of each key's windows goes to the headroom sidecar
    (never auth.json); a sidecar that cannot be written costs the readings, not the probe."""
    room = Headroom(home)
    for row in rows:
        v = verdicts.get(str(row.get("id")))
        if v is not None and v.readings:
            room.record(pool, str(row.get("id")), view.row_fingerprint(pool, row, env), v.readings)
    room.flush(force=True)


def run_probe(
    home: Home, pool: str, now: float, *, ttls: policy.Ttls = policy.DEFAULT_TTLS,
    env: Mapping[str, str] | None = None, target: str | None = None,
    timeout: float = probe.PROBE_TIMEOUT, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    verdict_fn: probe.VerdictFn | None = None,
) -> ProbeReport:
    """Probe *pool* (or only *target*), lift what reopened, and report every row.

    Raises BadInput for an unknown pool or target, and whatever the transaction raises
    (LockTimeout, StoreUnreadable): then nothing was written.
    """
    snap = read_store(home)
    doc = snap.doc or {}
    if pool not in pools(doc):
        known = ", ".join(sorted(pools(doc))) or "none"
        raise BadInput("POOL", f"no pool {pool!r} in {home.auth} (pools: {known})")
    targets = None
    if target:
        targets = {str(resolve(doc, pool, target).get("id"))}
    env = dict(env or {})
    before = {str(r.get("id")): {f: r.get(f) for f in STATUS_FIELDS} for r in pool_rows(doc, pool)}
    fn = verdict_fn or probe.default_verdict_fn(env, probe.VerdictCache(), timeout=timeout)
    res = probe.lift_reopened_cooldowns(home, pool, fn, now, ttls=ttls, targets=targets,
                                        lock_timeout=lock_timeout)
    rows = sorted_rows(pool_rows(read_store(home).doc or {}, pool))
    _keep_readings(home, pool, rows, res.verdicts, env)
    report = ProbeReport(pool, now, res.available)
    for index, row in enumerate(rows, start=1):
        rid = str(row.get("id"))
        if targets is not None and rid not in targets:
            continue
        v = res.verdicts.get(rid)
        report.rows.append(ProbeRow(
            id=rid, label=row.get("label"), index=index,
            fingerprint=view.row_fingerprint(pool, row, env),
            verdict=v.state if v else None, reason=v.reason if v else None,
            lifted=rid in res.cleared_reopened, elapsed_cleared=rid in res.cleared_elapsed,
            status=policy.effective(row, rows, now, ttls).status,
            described=v.describe() if v else None,
        ))
    lifted = res.cleared_reopened + res.cleared_elapsed
    if lifted:
        out = Outcome("probe-lift", pool)
        by_id = {str(r.get("id")): r for r in rows}
        for rid in lifted:
            r = by_id.get(rid, {})
            out.changes.append(Change(pool, rid, str(r.get("label") or ""), before.get(rid, {}),
                                      {f: r.get(f) for f in STATUS_FIELDS}))
        out.notes.append(LIFT_NOTE)
        report.outcome = out
    return report

