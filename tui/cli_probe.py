"""``hermes-admin probe POOL [TARGET] [--json]``: ask the provider whether benched keys
reopened early, and lift only those.

For each row of the pool (or only TARGET) it prints the verdict: ``reopened`` (its cooldown
is lifted), ``still limited``, ``unknown (reason)``, or why it was not probed (not benched,
dead). Cooldowns that have simply run out are cleared too, in the same transaction. The
probes run before the lock is taken (store.probe.lift_reopened_cooldowns).

Exit status: 0 when every probed row got a definite answer (reopened or still limited);
5 (EXIT_PROBE) when any probe could not decide (unknown: endpoint error, no probe for
the provider, no secret), even if other rows were lifted; the usual 2/3/4 for bad input,
an unreadable store and a lock timeout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Callable

from store import audit, policy, probe, view
from store.actions import Change, Outcome, resolve
from store.authfile import read_store
from store.errors import EXIT_OK, EXIT_PROBE, BadInput
from store.model import STATUS_FIELDS, pool_rows, pools, sorted_rows

from .cli_store import home_of, load_config

AddCommon = Callable[[argparse.ArgumentParser], None]


def register(sub: argparse._SubParsersAction, add_common: AddCommon) -> None:
    p = sub.add_parser("probe", help="ask the provider if benched keys reopened early; lift those")
    p.add_argument("pool", metavar="POOL")
    p.add_argument("target", nargs="?", metavar="TARGET", help="id, unique label or 1-based index")
    p.add_argument("--json", action="store_true", help="machine-readable verdicts")
    p.add_argument("--timeout", type=float, default=probe.PROBE_TIMEOUT, metavar="S",
                   help=f"seconds per probe request (default {probe.PROBE_TIMEOUT:g})")
    add_common(p)
    p.set_defaults(func=cmd_probe)


def _env(home: Any) -> dict[str, str]:
    try:
        from .cli_store import load_env

        return load_env(home)
    except Exception:
        return probe.home_env(home)


def cmd_probe(args: argparse.Namespace) -> int:
    home = home_of(args)
    snap = read_store(home)
    doc = snap.doc or {}
    if args.pool not in pools(doc):
        known = ", ".join(sorted(pools(doc))) or "none"
        raise BadInput("POOL", f"no pool {args.pool!r} in {home.auth} (pools: {known})")
    targets = None
    if args.target:
        targets = {str(resolve(doc, args.pool, args.target).get("id"))}
    _cfg, ttls = load_config(home)
    env = _env(home)
    now = time.time()
    before = {str(r.get("id")): {f: r.get(f) for f in STATUS_FIELDS}
              for r in pool_rows(doc, args.pool)}
    fn = probe.default_verdict_fn(env, probe.VerdictCache(), timeout=args.timeout)
    res = probe.lift_reopened_cooldowns(home, args.pool, fn, now, ttls=ttls, targets=targets,
                                        lock_timeout=args.lock_timeout)
    after_doc = read_store(home).doc or {}
    rows = sorted_rows(pool_rows(after_doc, args.pool))
    report = []
    for index, row in enumerate(rows, start=1):
        rid = str(row.get("id"))
        if targets is not None and rid not in targets:
            continue
        v = res.verdicts.get(rid)
        entry = {
            "id": rid, "label": row.get("label"), "index": index,
            "fingerprint": view.row_fingerprint(args.pool, row, env),
            "verdict": v.state if v else None, "reason": v.reason if v else None,
            "lifted": rid in res.cleared_reopened, "elapsed_cleared": rid in res.cleared_elapsed,
            "status": policy.effective(row, rows, now, ttls).status,
        }
        report.append(entry)
    lifted = res.cleared_reopened + res.cleared_elapsed
    if lifted:
        out = Outcome("probe-lift", args.pool)
        by_id = {str(r.get("id")): r for r in rows}
        for rid in lifted:
            r = by_id.get(rid, {})
            out.changes.append(Change(args.pool, rid, str(r.get("label") or ""), before.get(rid, {}),
                                      {f: r.get(f) for f in STATUS_FIELDS}))
        out.notes.append("lifted after a reopen probe (or an elapsed cooldown)")
        audit.record(home, out, via="cli", now=now)
    undecided = [e for e in report if e["verdict"] == probe.UNKNOWN]
    if args.json:
        json.dump({"pool": args.pool, "checked_at": now, "available": res.available,
                   "rows": report}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        for e in report:
            print(_line(args.pool, e, res.verdicts.get(e["id"])))
        state = "has a usable credential" if res.available else "has no usable credential yet"
        print(f"{args.pool} {state}")
    return EXIT_PROBE if undecided else EXIT_OK


def _line(pool: str, e: dict[str, Any], v: probe.Verdict | None) -> str:
    who = f"{pool} #{e['index']} {e['label'] or '—'} (id={e['id']}, {e['fingerprint'] or '—'})"
    if v is None:
        if e["elapsed_cleared"]:
            return f"{who}: cooldown had elapsed; cleared"
        return f"{who}: not probed ({e['status']})"
    if e["lifted"]:
        return f"{who}: reopened ({v.reason}); cooldown lifted"
    return f"{who}: {v.describe()}"
