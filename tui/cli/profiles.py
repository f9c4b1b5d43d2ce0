"""Verbs over every profile of a root: ``inventory``, and ``--all-profiles`` on
``cooldown`` and ``reset``.

``hermes-admin inventory [--root R] [--json]`` lists every profile, pool and
credential (status, fingerprint, source, request count; never a secret) and the
findings over them. Exit 0 even with findings; 3 only when the root itself is missing.

``cooldown POOL TARGET --all-profiles`` / ``reset POOL TARGET --all-profiles``: TARGET
names a key in POOL of the profile given by --profile, else by --home/$HERMES_HOME;
every profile of the root holding that key is changed, each in its own transaction
under its own lock. A profile whose lock stays busy is left unchanged and the verb
exits 4 after saying which profiles were and were not changed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Callable

from store.errors import BadInput, StoreUnreadable
from store.ops import actions
from store.profiles import findings, inventory
from store.profiles.everywhere import AllProfilesResult, act_everywhere
from store.profiles.root import Profile, Root, home_profile, resolve_root
from tui.cli.common import home_of, warn
from tui.text.durations import parse_duration, parse_when
from tui.text.format import NULL, countdown
from tui.text.shown import shown

AddCommon = Callable[[argparse.ArgumentParser], None]
_ROOT_HELP = "root of profiles (default: derived from --home/$HERMES_HOME as Hermes does)"


def register(sub: argparse._SubParsersAction, add_common: AddCommon) -> None:
    """Add ``inventory``; add --all-profiles/--root to the already registered cooldown and reset."""
    p = sub.add_parser("inventory", help="every profile, pool and credential, with findings")
    p.add_argument("--root", metavar="DIR", help=_ROOT_HELP)
    p.add_argument("--json", action="store_true", help="machine-readable output (schema in docs/profiles.md)")
    add_common(p)
    p.set_defaults(func=cmd_inventory)
    for verb in ("cooldown", "reset"):
        vp = sub.choices.get(verb)
        if vp is None:
            continue
        vp.add_argument("--all-profiles", action="store_true",
                        help="act on this key in every profile of the root that holds it")
        vp.add_argument("--root", metavar="DIR", help=_ROOT_HELP)
        vp.add_argument("--profile", metavar="NAME",
                        help="with --all-profiles: the profile whose POOL/TARGET names the key "
                             "(default: the --home profile, else default)")
        vp.set_defaults(func=_dispatch(verb, vp.get_default("func")))


def _dispatch(verb: str, single: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        if not getattr(args, "all_profiles", False):
            for opt in ("root", "profile"):
                if getattr(args, opt, None):
                    raise BadInput(f"--{opt}", "only used with --all-profiles")
            return single(args)
        return cmd_all_profiles(verb, args)
    return run


def root_of(args: argparse.Namespace) -> Root:
    return resolve_root(getattr(args, "root", None), getattr(args, "home", None))


# --- inventory -----------------------------------------------------------------------------

def cmd_inventory(args: argparse.Namespace) -> int:
    root = root_of(args)
    if not root.path.is_dir():
        raise StoreUnreadable(root.path, "no such directory (is --root or $HERMES_HOME right?)")
    now = time.time()
    profiles = inventory.read_root(root, lambda: now)
    found = findings.compute(profiles)
    if args.json:
        json.dump(inventory.to_json(root, profiles, found, now), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    print(f"root {shown(root.path)}: {len(profiles)} profile{'s' if len(profiles) != 1 else ''}")
    for prof in profiles:
        print(format_profile(prof))
    print(f"findings: {len(found) or 'none'}")
    for f in found:
        print(shown(f"  [{f.severity}] {f.kind}: {f.message}"))
    return 0


def _primary(prof: inventory.ProfileInventory) -> str:
    if prof.primary is None:
        return prof.active_provider or NULL
    return f"{prof.primary.model} via {prof.primary_provider or NULL}"


def format_profile(prof: inventory.ProfileInventory) -> str:
    """A profile header (primary, fallback chain, health) and its credentials, each line
    through the one funnel (a line break inside a name or a label is shown escaped)."""
    if prof.error is not None:
        return shown(f"{prof.name}: ERROR {prof.error.path}: {prof.error.reason} (left alone, never written)")
    h = prof.health()
    chain = " > ".join(f"{f.provider}/{f.model}" for f in prof.fallbacks) or NULL
    lines = [f"{prof.name}: primary {_primary(prof)}; fallback {chain}; "
             f"ok {h['ok']}, cooling {h['cooling']}, ready {h['ready']}, dead {h['dead']}"]
    for pv in prof.pools:
        lines.append(f"  {pv.key} ({pv.strategy})")
        for cv in pv.credentials:
            left = f" {countdown(cv.effective.seconds_left)}" if cv.effective.seconds_left else ""
            lines.append(f"    #{cv.index} {cv.label} {cv.effective.status}{left} "
                         f"key={cv.fingerprint or NULL} source={cv.row.get('source') or NULL} "
                         f"requests={cv.to_json()['request_count']}")
    d = prof.delegation
    if d.overrides:
        lines.append(f"  delegation: provider={d.provider or NULL} model={d.model or NULL} "
                     f"base_url={d.base_url or NULL} api_key={d.api_key or NULL}")
    for job in prof.cron_jobs:
        lines.append(f"  cron {job.name or job.id}: provider={job.provider or NULL} model={job.model or NULL}")
    if prof.cron_error is not None:
        lines.append(f"  cron: ERROR {prof.cron_error}")
    if prof.config_error is not None:
        lines.append(f"  config: ERROR {prof.config_error}")
    return "\n".join(shown(line) for line in lines)


# --- --all-profiles ------------------------------------------------------------------------

def _origin(root: Root, args: argparse.Namespace) -> Profile:
    """--profile; else the --home/$HERMES_HOME profile; else (with --root only) default."""
    if getattr(args, "profile", None):
        return root.profile(args.profile)
    home = home_of(args)
    name = home_profile(root, home)
    if name is None and getattr(args, "root", None) and not getattr(args, "home", None):
        name = "default"
    if name is None:
        raise BadInput("--home", f"{home.root} is not a profile of the root {root.path} "
                       "(give --profile NAME, or a --home inside the root)")
    return root.profile(name)


def cmd_all_profiles(verb: str, args: argparse.Namespace) -> int:
    if not args.target:
        raise BadInput("TARGET", "--all-profiles acts on one key: name it (id, unique label or index)")
    root = root_of(args)
    origin = _origin(root, args)
    now = time.time()
    change: Callable[[dict, str, str, float], actions.Outcome]
    if verb == "cooldown":
        try:
            until = now + parse_duration(args.duration) if args.duration else parse_when(args.until, now)
        except ValueError as exc:
            raise BadInput("--for" if args.duration else "--until", str(exc)) from None
        if until <= now:
            raise BadInput("--until", "the cooldown end is not in the future")

        def change(doc: dict, pool: str, rid: str, t: float) -> actions.Outcome:
            return actions.cooldown(doc, pool, rid, until, t, args.reason, shorten=args.shorten)
    else:
        def change(doc: dict, pool: str, rid: str, t: float) -> actions.Outcome:
            return actions.reset(doc, pool, rid, t)
    result = act_everywhere(root, origin, args.pool, args.target, change, action=verb, now=now,
                            lock_timeout=args.lock_timeout, redactor=args.redactor)
    report(verb, result)
    if verb == "cooldown" and result.changed:
        print(f"benched until {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(until))} "
              f"({countdown(until - now)})")
    return result.exit_code


def report(verb: str, result: AllProfilesResult) -> None:
    """Which profiles changed and which did not (and why), one line each."""
    for r in result.results:
        if r.error is None and r.outcomes:
            rows = ", ".join(f"{c.pool} {c.label} (id={c.id})" for o in r.outcomes for c in o.changes)
            print(shown(f"{verb}: {r.profile}: {rows}"))
        elif r.error is None:
            print(shown(f"{verb}: {r.profile}: nothing to change"))
        for note in r.skipped:
            print(shown(f"{verb}: {r.profile}: skipped {note}"))
        for w in r.warnings:
            warn(w)
    for r in result.failed:
        sys.stderr.write(f"hermes-admin: error: {shown(f'{r.profile}: NOT changed: {r.error}')}\n")
    for name, why in result.unreadable:
        warn(f"{name}: not searched: {why}")
    changed = result.changed
    not_changed = [r.profile for r in result.failed]
    summary: dict[str, Any] = {"key": result.fingerprint, "changed": changed or [NULL]}
    if not_changed:
        summary["not changed"] = not_changed
    print(shown("; ".join(f"{k}: {', '.join(v) if isinstance(v, list) else v}" for k, v in summary.items())))
    if changed:
        print(f"history {result.action_id}: `hermes-admin undo` in any of these profiles puts them all back")
