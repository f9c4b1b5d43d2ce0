"""``hermes-admin history`` and ``hermes-admin undo [ID|N]``: the operator's way back.

``history`` lists the operator actions this home keeps (id, when, who, what, the rows);
``undo`` puts back what one of them changed (the newest by default), on the fresh file
under the lock, so agents' later writes survive (:mod:`store.ops.undo`). It asks first
on a terminal and names what comes back; elsewhere ``--yes`` says it is meant.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable

from store.errors import EXIT_BAD_INPUT, BadInput
from store.ops import audit, undo
from store.profiles import undo_all
from tui.cli.common import confirm, home_of, print_notes
from tui.text.format import NULL, full_time
from tui.text.shown import shown

AddCommon = Callable[[argparse.ArgumentParser], None]


def register(sub: argparse._SubParsersAction, add_common: AddCommon) -> None:
    p = sub.add_parser("history", help="the operator actions this home keeps, newest first, with their ids")
    p.add_argument("-n", type=int, default=20, metavar="N")
    p.add_argument("--json", action="store_true")
    add_common(p)
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("undo", help="put back what an operator action changed (default: the newest)")
    p.add_argument("which", nargs="?", metavar="ID|N", help="an id from `history`, or N (1 = the newest)")
    p.add_argument("--force", action="store_true",
                   help="undo even when a later operator action changed the same rows, or a removed "
                        "row comes back beside a row added since with the same key")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask (required when not on a terminal)")
    add_common(p)
    p.set_defaults(func=cmd_undo)


def entries(home: Any, n: int) -> list[dict[str, Any]]:
    """The kept actions, newest first, each with its audit line's who/what when there is one."""
    by_id = {e.get("history"): e for e in audit.tail(home, 2000) if isinstance(e.get("history"), str)}
    out = []
    for i, action_id in enumerate(reversed(undo.list_ids(home)[-max(1, n) * 4:])):
        if len(out) >= n:
            break
        e = by_id.get(action_id, {})
        rows = [f"{c.get('pool')} {c.get('label') or c.get('id')}" for c in e.get("changes") or []]
        out.append({"n": i + 1, "id": action_id, "time": e.get("time"), "user": e.get("user"),
                    "via": e.get("via"), "action": e.get("action"), "pool": e.get("pool"), "rows": rows})
    return out


def cmd_history(args: argparse.Namespace) -> int:
    got = entries(home_of(args), max(1, args.n))
    if args.json:
        json.dump(got, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if not got:
        print("no operator action is kept in this home's history")
        return 0
    for e in got:
        when = full_time(e["time"]) if e["time"] else NULL
        rows = ", ".join(e["rows"][:3]) + (f" +{len(e['rows']) - 3}" if len(e["rows"]) > 3 else "")
        print(f"{e['n']:>3}  {shown(e['id'])}  {when}  {shown(e['user'] or NULL)} {shown(e['via'] or NULL)}: "
              f"{shown(e['action'] or NULL)} {shown(rows or NULL)}")
    return 0


def cmd_undo(args: argparse.Namespace) -> int:
    home = home_of(args)
    action_id = undo.resolve(home, args.which)
    hps = undo_all.plans(home, action_id)      # a record that cannot be used is refused here
    for hp in hps:
        hp.plan.force = args.force             # also: a row may come back beside its key's twin
    conflicts = undo_all.conflicts(hps)
    if conflicts and not args.force:
        raise BadInput("--force", "a later operator action changed the same rows: "
                       + "; ".join(conflicts) + ". Undo that one first, or give --force")
    print(f"undo {action_id}" + (f" in {len(hps)} profiles" if len(hps) > 1 else "") + ":")
    for line in undo_all.describe(hps):
        print(f"  {shown(line)}")
    if not args.yes:
        if not sys.stdin.isatty():
            raise BadInput("--yes", "refusing to undo without --yes when not on a terminal")
        if not confirm("Put these back?", False):
            print("cancelled; nothing written")
            return 1
    undo_all.run(hps, via="cli", lock_timeout=args.lock_timeout, redactor=args.redactor)
    code = 0
    for hp in hps:
        for w in hp.written:
            print_notes(w.outcomes)
            if w.unchanged is not None:     # changed since by another writer: kept, nothing written
                print(f"note: {(hp.profile + ': ') if len(hps) > 1 else ''}{shown(w.unchanged)}")
            if w.audit_error:
                print(f"warning: {w.audit_error}", file=sys.stderr)
        if hp.error is not None:
            sys.stderr.write(f"hermes-admin: error: {hp.profile or hp.home.root}: NOT undone: {hp.error}\n")
            code = max(code, hp.error.exit_code)
    ids = sorted({w.history_id for hp in hps for w in hp.written if w.history_id})
    if code:
        return code
    if all(w.unchanged is not None for hp in hps for w in hp.written):   # every part changed since
        sys.stderr.write(f"hermes-admin: error: ID: {action_id}: nothing was undone: what it changed was "
                         "changed since by another writer (or by hand) and is kept as it is (see the notes); "
                         "nothing written\n")
        return EXIT_BAD_INPUT
    part = " in part (the rest is kept, see the notes)" if any(w.unchanged for hp in hps for w in hp.written) else ""
    print(f"undone {action_id}{part}" + (f" (this undo is {ids[0]}: `hermes-admin undo {ids[0]}` redoes it)"
                                         if ids else ""))
    return 0
