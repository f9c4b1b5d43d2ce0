"""CLI verbs on auth.json: list, add, remove, reset, cooldown, priority, audit, restore-backup."""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from typing import Any, Mapping

from rich.cells import cell_len

from store import authfile, safeio
from store.agent import headroom
from store.errors import BadInput, StoreUnreadable
from store.model import pools as model_pools
from store.ops import actions, audit, bounds, restore
from store.pools import view
from store.redaction import redact
from tui.cli import guard
from tui.cli.common import (
    AddCommon,
    change_store,
    confirm,
    edit,
    fingerprint_of,
    home_of,
    load_config,
    load_env,
    warn,
)
from tui.services.proxy_feed import live_status, over_budget
from tui.text import headroom as headroom_words
from tui.text.durations import parse_duration, parse_when
from tui.text.format import NULL, countdown, countdown_to, full_time, remaining
from tui.text.shown import shown


def _priority(text: str) -> int:
    try:
        return bounds.priority(text, "N")
    except BadInput as exc:
        raise argparse.ArgumentTypeError(exc.problem) from None


def register(sub: argparse._SubParsersAction, add_common: AddCommon) -> None:
    p = sub.add_parser("list", help="list pools and credentials with live cooldowns")
    p.add_argument("pool", nargs="?", metavar="POOL")
    p.add_argument("--json", action="store_true", help="machine-readable output (schema in docs/cli.md)")
    add_common(p)
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("add", help="add an API key to a pool (source manual)")
    p.add_argument("pool", metavar="POOL")
    p.add_argument("--api-key", required=True, metavar="KEY|-",
                   help="the key, or - to read it from stdin (keeps it out of `ps` and shell history)")
    p.add_argument("--label", metavar="L")
    p.add_argument("--priority", type=_priority, metavar="N", help="0 = tried first (default: last)")
    p.add_argument("--base-url", metavar="URL")
    p.add_argument("--new-pool", action="store_true",
                   help="POOL is meant even though it is not a Hermes provider id")
    add_common(p)
    p.set_defaults(func=cmd_add)

    p = sub.add_parser("remove", help="remove a credential (TARGET: id, unique label or 1-based index)")
    p.add_argument("pool", metavar="POOL")
    p.add_argument("target", metavar="TARGET")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation on a terminal")
    add_common(p)
    p.set_defaults(func=cmd_remove)

    p = sub.add_parser("reset", help="clear the cooldown of one credential or of the whole pool")
    p.add_argument("pool", metavar="POOL")
    p.add_argument("target", nargs="?", metavar="TARGET")
    p.add_argument("--yes", "-y", action="store_true",
                   help="reset the whole pool without asking (required when not on a terminal)")
    add_common(p)
    p.set_defaults(func=cmd_reset)

    p = sub.add_parser("cooldown", help="bench a credential by hand")
    p.add_argument("pool", metavar="POOL")
    p.add_argument("target", metavar="TARGET")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--for", dest="duration", metavar="DURATION", help="90s, 15m, 2h, 1d")
    g.add_argument("--until", metavar="TIME", help="ISO-8601 (no offset = local time) or HH:MM")
    p.add_argument("--reason", metavar="TEXT")
    p.add_argument("--shorten", action="store_true",
                   help="replace a longer bench the row already has (refused without it)")
    add_common(p)
    p.set_defaults(func=cmd_cooldown)

    p = sub.add_parser("priority", help="move a credential to priority N (0 = tried first)")
    p.add_argument("pool", metavar="POOL")
    p.add_argument("target", metavar="TARGET")
    p.add_argument("n", type=_priority, metavar="N")
    add_common(p)
    p.set_defaults(func=cmd_priority)

    p = sub.add_parser("audit", help="show the latest operator actions, newest first (as `history`)")
    p.add_argument("-n", type=int, default=20, metavar="N")
    p.add_argument("--json", action="store_true")
    add_common(p)
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("restore-backup", help="put auth.json.bak back (keeps the current file aside)")
    p.add_argument("--yes", "-y", action="store_true")
    add_common(p)
    p.set_defaults(func=cmd_restore_backup)


# --- verbs -------------------------------------------------------------------------------------

def cmd_list(args: argparse.Namespace) -> int:
    home = home_of(args)
    snap = authfile.read_store(home)
    cfg, ttls = load_config(home)
    now = time.time()
    pools = view.build_pools(snap.doc, strategies=cfg.strategies if cfg else None, now=now, ttls=ttls,
                             env=load_env(home), only=args.pool)
    for problem in authfile.permission_problems(home):
        warn(problem)
    if args.pool and not pools:
        if snap.doc is None:
            raise BadInput("POOL", f"no store at {home.auth}, so no pool {args.pool!r}")
        raise BadInput("POOL", f"no pool {args.pool!r} in {home.auth}"
                               f"{actions.did_you_mean(args.pool, model_pools(snap.doc))}")
    readings = read_headroom(home, now)
    over = over_budget(live_status(home, now))      # what a running proxy holds over its budget (#29)
    if args.json:
        doc = view.to_json(str(home.root), pools, now)
        for pv in pools:
            for cv, out in zip(pv.credentials, doc["pools"][pv.key]["credentials"], strict=True):
                out["headroom"] = headroom_words.as_json(
                    headroom_words.lookup(readings, pv.key, cv.id, cv.fingerprint), now)
                out["budget"] = over.get((pv.key, cv.id))
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if snap.doc is None:
        print(f"No credential store at {home.auth}.")
        print("Add a key with: hermes-admin add openrouter --api-key -   (reads the key from stdin)")
        return 0
    if not pools:
        print(f"{home.auth}: no credential pools yet.")
        return 0
    for pv in pools:
        print(format_pool(pv, now, readings=readings, over=over))
    return 0


def read_headroom(home: Any, now: float) -> Mapping[Any, Any]:
    """The home's headroom sidecar (the proxies' and agents' readings); {} with a warning
    when it cannot be used: the store's list never fails for it."""
    try:
        return headroom.load(home, now)
    except StoreUnreadable as exc:
        warn(f"{exc}; headroom not shown")
        return {}


def format_pool(pv: view.PoolView, now: float, readings: Mapping[Any, Any] | None = None,
                over: Mapping[tuple[str, str], str] | None = None) -> str:
    """The `hermes auth list` shape, plus dead rows, honest countdowns and fingerprints.

    Every field from the store, the config or the headroom sidecar passes the one funnel
    (:func:`tui.text.shown.shown`: redacted, inert, a line break escaped), so each line
    starts as this function means it to: the pool's header, or ``  #N`` for a row. *over*:
    the rows a running proxy holds over their budget, with its words (#29). Labels
    are padded as they print, so a key-shaped label shown as its fingerprint does not pad
    to the length of the key.
    """
    n = len(pv.credentials)
    strategy = shown(pv.strategy) if pv.strategy_known else f"{shown(pv.strategy)} (unknown: fill_first)"
    lines = [f"{shown(pv.key)} ({n} credential{'s' if n != 1 else ''}, {strategy}):"]
    labels = {cv.id: shown(cv.label) for cv in pv.credentials}
    width = max((cell_len(t) for t in labels.values()), default=0)
    for cv in pv.credentials:
        r = cv.row
        source = str(r.get("source") or NULL)
        if source.startswith("manual:"):
            source = source[len("manual:"):]
        label = labels[cv.id]
        parts = [f"  #{cv.index:<2} {label}{' ' * (width - cell_len(label))}", shown(r.get("auth_type") or NULL),
                 f"id={shown(cv.id)}", f"priority={shown(r.get('priority'))}", shown(source)]
        eff = cv.effective
        if eff.status != "ok":
            code = r.get("last_error_code")
            why = " ".join(x for x in (str(r.get("last_error_reason") or ""), f"({code})" if code else "") if x)
            state = {"cooling": "exhausted", "ready": "exhausted", "dead": "dead"}[eff.status]
            parts.append(f"{state} {shown(why)}".rstrip())
            if eff.status == "cooling":
                parts.append(f"({remaining(eff.seconds_left)})")
            elif eff.status == "ready":
                parts.append("(ready to retry)")
            else:
                parts.append("(never expires: reset or re-add)")
        if eff.model_benches:
            parts.append("models benched: " + ", ".join(
                f"{shown(m)} {countdown_to(t, now)}" for m, t in sorted(eff.model_benches.items())))
        if eff.data_error:
            parts.append(f"[data error: {shown(eff.data_error)}]")
        if cv.backed is False:
            parts.append("[env var not set]")
        said = headroom_words.list_text(headroom_words.lookup(readings or {}, pv.key, cv.id, cv.fingerprint), now)
        if said:
            parts.append(shown(said))
        if over and (words := over.get((pv.key, cv.id))):
            parts.append(f"[{shown(words)}]")
        parts.append(f"key={shown(cv.fingerprint or NULL)}")
        if cv.next:
            parts.append("←")
        lines.append(" ".join(parts))
    return "\n".join(lines)


def cmd_add(args: argparse.Namespace) -> int:
    key = guard.read_key() if args.api_key == "-" else args.api_key
    redact.register(key)

    def change(doc: dict, now: float) -> actions.Outcome:
        return actions.add_key(doc, args.pool, key, now, label=args.label, priority=args.priority,
                               base_url=args.base_url)

    out = change_store(args, change, create=True)
    for c in out.changes:
        print(f"key {fingerprint_of(key)} added to {shown(c.pool)} as {shown(repr(c.label))}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    home = home_of(args)
    snap = authfile.read_store(home)
    if snap.doc is None:
        raise BadInput("POOL", f"no store at {home.auth}")
    row = actions.resolve(snap.doc, args.pool, args.target)  # validate before asking
    if not confirm(f"Remove {shown(args.pool)} {shown(repr(row.get('label')))} (id={shown(row.get('id'))})?",
                   args.yes):
        print("cancelled; nothing written")
        return 1
    # Re-resolve by id inside the transaction: the file may have changed since we asked.
    rid = str(row.get("id"))
    change_store(args, lambda doc, now: actions.remove(doc, args.pool, rid))
    return 0


def whole(what: str, question: str, assume_yes: bool) -> bool:
    """Ask before a sweeping change on a terminal; elsewhere only --yes says it is meant."""
    if assume_yes:
        return True
    if not sys.stdin.isatty():
        raise BadInput("--yes", f"refusing to {what} without --yes")
    return confirm(question, False)


def cmd_reset(args: argparse.Namespace) -> int:
    if args.target is None:
        # Refuse a missing pool or a bad store before asking whether the whole pool is meant.
        snap = authfile.read_store(home_of(args))
        actions.reset(copy.deepcopy(snap.doc or {}), args.pool, None, time.time())
    if args.target is None and not whole("reset the whole pool", f"Reset every credential in {shown(args.pool)}?",
                                         getattr(args, "yes", False)):
        print("cancelled; nothing written")
        return 1
    # Rows that are all already ok: nothing written, no audit line (actions.reset_rows decides,
    # as it does for the console; change_store says so).
    change_store(args, lambda doc, now: actions.reset_rows(doc, [(args.pool, args.target)], now))
    return 0


def cmd_cooldown(args: argparse.Namespace) -> int:
    now = time.time()
    try:
        until = now + parse_duration(args.duration) if args.duration else parse_when(args.until, now)
        until = bounds.cooldown_until(until, now, "--for" if args.duration else "--until")
    except ValueError as exc:
        raise BadInput("--for" if args.duration else "--until", str(exc)) from None
    change_store(args, lambda doc, t: actions.cooldown(doc, args.pool, args.target, until, t, args.reason,
                                                        shorten=args.shorten))
    print(f"benched until {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(until))} "
          f"({countdown(until - now)})")
    return 0


def cmd_priority(args: argparse.Namespace) -> int:
    change_store(args, lambda doc, now: actions.set_priority(doc, args.pool, args.target, args.n))
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    entries = audit.tail(home_of(args), max(1, args.n))[::-1]   # newest first, as `history` lists
    if args.json:
        json.dump(entries, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    for e in entries:
        when = full_time(e.get("time") or 0)   # a time another tool wrote: checked, never raised on
        rows = ", ".join(f"{shown(c.get('label'))}({shown(c.get('id'))})" for c in e.get("changes") or []) or NULL
        print(f"{when} {shown(e.get('user'))}@{shown(e.get('host'))} {shown(e.get('via'))}: "
              f"{shown(e.get('action'))} {shown(e.get('pool'))} {rows}")
    return 0


def cmd_restore_backup(args: argparse.Namespace) -> int:
    home = home_of(args)
    authfile.refuse_linked(home)
    got = safeio.read_checked(home.backup, safeio.AUTH_CAP)   # a FIFO or device: exit 3 at once
    if got is None:
        raise StoreUnreadable(home.backup, "no backup to restore (no such file)")
    raw = got[0]
    authfile.parse_store(raw, home.backup)  # a bad backup is refused like a bad store
    if not whole("replace auth.json with its backup", f"Replace {home.auth} with {home.backup}?", args.yes):
        print("cancelled; nothing written")
        return 1

    done = edit(args, lambda: restore.restore_backup(home, raw, args.lock_timeout))
    if done.aside is not None:
        print(f"kept the current file as {done.aside}")
    print(f"restored {home.auth} from {home.backup}")
    return 0
