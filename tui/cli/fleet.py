"""``hermes-admin fleet sync|status|bench|reset``: share cooldowns across hosts via Redis/Valkey.

``fleet sync --redis URL [--name HOST] [--secret-file PATH]`` runs the per-host daemon
(store.fleet.sync.SyncDaemon) until SIGTERM/SIGINT; Redis being down is a state it waits out.
``fleet status [--json]`` shows hosts (heartbeat, connected, lag) and every fleet key's
state and holders, and names whatever it read from Redis that did not pass the check;
with Redis unreachable it says since when the local daemon lost it.
``fleet bench FP DURATION`` / ``fleet reset FP`` act fleet-wide (published once, applied by
every host's sync) and are audited locally. FP is the ``fl:`` form ``fleet status`` prints
(``--json`` gives it whole, the text a 12-hex prefix; any unique prefix of 6 or more hex
will do); DURATION is ``90s``/``15m``/``2h``/``1d`` as for ``cooldown --for``, or ``dead``.
Redis URLs are shown as ``redis://host:port/db``, a password as ``***``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

from store.errors import EXIT_FAILURE, EXIT_OK, BadInput
from store.paths import Home, resolve_home
from store.pools.times import on_calendar
from tui.text.durations import MAX_SECONDS, parse_duration
from tui.text.format import BAD_TIME, NULL, countdown, local_time
from tui.text.shown import shown

# Imported in the commands, not here: redis-py and store.fleet add ~125 ms to every
# hermes-admin start (python -X importtime), and only the fleet verbs need them.
if TYPE_CHECKING:
    from store.fleet.client import FleetClient
    from store.fleet.model import FleetSnapshot

AddCommon = Callable[[argparse.ArgumentParser], None]
REDIS_ENV = "HERMES_ADMIN_FLEET_REDIS"
# Same values as store.fleet (DEFAULT_NAMESPACE, sync.RECONCILE_INTERVAL), literal here
# so that building the parser does not import redis.
DEFAULT_NAMESPACE = "hermes-admin:fleet:"
RECONCILE_INTERVAL = 5.0
FP_PREFIX = "fl:"   # store.fleet.keys.FP_PREFIX
_HEX = re.compile(r"[0-9a-fA-F]{6,64}")
DEAD_WORDS = ("dead", "never", "inf")
MAX_INTERVAL = 3600.0


def register(sub: argparse._SubParsersAction, add_common: AddCommon) -> None:
    p = sub.add_parser("fleet", help="share cooldowns across hosts through Redis/Valkey")
    verbs = p.add_subparsers(dest="fleet_verb", metavar="VERB", required=True,
                             parser_class=type(p))

    # No abbreviations: `--name` on a verb without it must not quietly mean --namespace.
    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--redis", metavar="URL",
                       help=f"redis:// or rediss:// URL (default: the console's --fleet URL, else ${REDIS_ENV})")
        q.add_argument("--namespace", default=DEFAULT_NAMESPACE, help=argparse.SUPPRESS)
        add_common(q)

    def name(q: argparse.ArgumentParser, what: str) -> None:
        q.add_argument("--name", metavar="HOST", help=f"this host's name in the fleet, {what} (default: hostname)")

    s = verbs.add_parser("sync", help="run this host's sync daemon (until SIGTERM)",
                          allow_abbrev=False)
    common(s)
    name(s, "as its heartbeat says")
    s.add_argument("--secret-file", metavar="PATH", help="fleet secret, mode 0600 "
                   "(default $HERMES_ADMIN_FLEET_SECRET)")
    s.add_argument("--interval", type=float, default=RECONCILE_INTERVAL, metavar="S",
                   help="seconds between reconciliations (default %(default)g)")
    s.add_argument("--quiet", action="store_true", help="no log lines on stderr")
    s.set_defaults(func=cmd_sync)

    st = verbs.add_parser("status", help="hosts, heartbeats and each fleet key's state",
                          allow_abbrev=False)
    common(st)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)

    b = verbs.add_parser("bench", help="bench a fleet key on every host",
                          allow_abbrev=False)
    common(b)
    name(b, "published with the bench")
    b.add_argument("fp", metavar="FP", type=fleet_fp_arg, help="fleet fingerprint as fleet status shows it "
                   "(fl:0123456789ab; any unique prefix of 6+ hex)")
    b.add_argument("duration", metavar="DURATION", help="90s, 15m, 2h, 1d (as cooldown --for), or dead")
    b.set_defaults(func=cmd_bench)

    r = verbs.add_parser("reset", help="reset a fleet key on every host",
                          allow_abbrev=False)
    common(r)
    name(r, "published with the reset")
    r.add_argument("fp", metavar="FP", type=fleet_fp_arg, help="fleet fingerprint as fleet status shows it")
    r.set_defaults(func=cmd_reset)


def fleet_fp_arg(text: str) -> str:
    """argparse type for FP: bare hex (as older ``fleet status --json`` printed it) is given
    the ``fl:`` prefix, so it reads as the fingerprint it is, never as a key; anything
    else passes unchanged to the argument checks and :func:`_resolve_fp`."""
    return FP_PREFIX + text.lower() if _HEX.fullmatch(text) else text


def bench_seconds(text: str) -> float:
    """DURATION of ``fleet bench``: the durations of every verb (``90s``, ``15m``, ``1h30m``,
    at most a year), plain seconds as scripts wrote them before, or ``dead`` (inf)."""
    raw = text.strip().lower()
    if raw in DEAD_WORDS:
        return float("inf")
    try:
        return parse_duration(raw)
    except ValueError:
        try:
            seconds = float(raw)
        except ValueError:
            seconds = float("nan")
    if not 0 < seconds <= MAX_SECONDS:   # also refuses nan
        # Not echoed: whatever was typed here, it is not a duration.
        raise BadInput("DURATION", "is not a positive duration of at most a year like 90s, 15m, 2h, 1d "
                       "or 1h30m, nor dead")
    return seconds


def console_config(args: argparse.Namespace) -> Any:
    """A ``tui.services.fleet_feed.FleetConfig`` from ``--fleet`` (None without it). Bad input: exit 2."""
    url = getattr(args, "fleet", None)
    if not url:
        return None
    from store.fleet.client import connect
    from store.fleet.keys import load_secret, safe_url, scrub

    # Imported on use, like store.fleet: the feed module loads Textual's messages.
    from tui.services.fleet_feed import FleetConfig

    try:
        connect(url)
    except ValueError as exc:
        raise BadInput("--fleet", scrub(f"{safe_url(url)}: {exc}", url)) from None
    secret = None
    if args.fleet_secret_file or os.environ.get("HERMES_ADMIN_FLEET_SECRET"):
        secret = load_secret(args.fleet_secret_file)
    name = _checked_host(args.fleet_name, "--fleet-name", home_of(args))
    return FleetConfig(url=url, host=name, secret=secret)


def home_of(args: argparse.Namespace) -> Home:
    return resolve_home(getattr(args, "home", None))


def _client(args: argparse.Namespace, host: str) -> FleetClient:
    from store.fleet.client import FleetClient, connect
    from store.fleet.keys import safe_url, scrub
    # --redis, else the URL the console's fleet view takes (`hermes-admin --fleet URL fleet
    # status`), else the variable; the option named in an error is the one that gave it.
    option, url = next(((o, u) for o, u in (("--redis", args.redis), ("--fleet", getattr(args, "fleet", None)),
                                            (REDIS_ENV, os.environ.get(REDIS_ENV))) if u), ("--redis", None))
    if not url:
        raise BadInput("--redis", f"no Redis URL: give --redis URL (or the console's --fleet URL) or set {REDIS_ENV}")
    args.redis = url
    try:
        r = connect(url)
    except ValueError as exc:
        raise BadInput(option, scrub(f"{safe_url(url)}: {exc}", url)) from None
    return FleetClient(r, host, namespace=args.namespace)


def _host_name(args: argparse.Namespace) -> str:
    return _checked_host(getattr(args, "name", None), "--name", home_of(args))


def _checked_host(given: str | None, option: str, home: Home) -> str:
    """A host name fit to publish: a host name, nothing key-shaped, no secret of the home."""
    from store.fleet.keys import host_name_problem
    from store.redaction.redact import home_secrets
    name = given or socket.gethostname().split(".")[0]
    problem = host_name_problem(name)
    if problem is None and home.root.is_dir() and name in home_secrets(home):
        problem = "is a secret of this home; a host name is published to Redis as it is"
    if problem is not None:
        # Named only when it cannot be a key: the refusal must not print what it refuses.
        shown = repr(name) if problem.startswith("is not a host name") and len(name) <= 63 else "the name"
        raise BadInput(option, f"{shown} {problem}")
    return name


def _log(quiet: bool) -> Callable[[str], None]:
    def log(msg: str) -> None:
        if not quiet:
            sys.stderr.write(f"{datetime.now().strftime('%H:%M:%S')} {shown(msg)}\n")
            sys.stderr.flush()

    return log


def cmd_sync(args: argparse.Namespace) -> int:
    from store.fleet.keys import load_secret, safe_url, scrub
    from store.fleet.sync import SyncDaemon
    if not 0.05 <= args.interval <= MAX_INTERVAL:   # also refuses nan and inf
        raise BadInput("--interval", f"must be a number of seconds from 0.05 to {MAX_INTERVAL:g}")
    home = home_of(args)
    secret = load_secret(args.secret_file)
    name = _host_name(args)
    client = _client(args, name)
    if not home.root.is_dir():
        raise BadInput("--home", f"{home.root}: no such Hermes home")
    log = _log(args.quiet)
    daemon = SyncDaemon(home, client, secret, url=args.redis, interval=args.interval,
                              lock_timeout=args.lock_timeout, log=lambda m: log(scrub(m, args.redis)))
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: daemon.close())
    log(f"fleet sync: host {name}, home {home.root}, redis {safe_url(args.redis)}")
    daemon.run()
    log("fleet sync: stopped")
    return EXIT_OK


def _disconnected(args: argparse.Namespace, exc: BaseException) -> int:
    from store.fleet.keys import safe_url, scrub
    from store.fleet.state_file import read_state_file
    state = read_state_file(home_of(args))
    since = state.get("disconnected_since") if state else None
    if isinstance(since, (int, float)):
        when = datetime.fromtimestamp(since).strftime("%H:%M") if on_calendar(since) else BAD_TIME
        line = f"fleet: disconnected since {when}"
    else:
        line = "fleet: disconnected"
    reason = scrub(str(exc), args.redis)
    if getattr(args, "json", False):  # only `fleet status` has --json
        json.dump({"connected": False, "disconnected_since": since, "redis": safe_url(args.redis),
                   "error": reason}, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(shown(f"{line} ({safe_url(args.redis)}: {reason})"))
    return EXIT_FAILURE


def cmd_status(args: argparse.Namespace) -> int:
    from redis import RedisError

    from store.fleet.keys import safe_url
    client = _client(args, "status")
    try:
        snap = client.snapshot()
    except RedisError as exc:
        return _disconnected(args, exc)
    if args.json:
        out = snap.to_json()
        out.update(connected=True, redis=safe_url(args.redis))
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    for line in render(snap, safe_url(args.redis)):
        print(shown(line))   # each meant as one line, whatever a host name or a reason holds
    return EXIT_OK


def render(snap: FleetSnapshot, url: str) -> list[str]:
    """The text form of ``fleet status`` (times in this host's local time)."""
    from store.fleet.keys import short
    from store.fleet.model import DEAD, OK
    now = snap.server_time
    lines = [f"fleet: connected to {url} (version {snap.version}, {len(snap.hosts)} hosts, "
             f"{len(snap.keys)} keys)", "hosts:"]
    for h in snap.hosts:
        age = h.age(now)
        state = "connected" if h.connected(now) else "gone"
        lines.append(f"  {h.name:<20} heartbeat {countdown(age) + ' ago' if age is not None else NULL:<10} "
                     f"{state:<9} lag {max(0, snap.version - h.seen_version)} keys {h.keys}")
    lines.append("keys:")
    for k in snap.keys:
        s = k.state
        if not s.usable:
            what = "⚠ unreadable (see below)"
        elif s.status == DEAD:
            what = f"✖ dead since {local_time(s.since, now)} by {s.host}"
        elif s.benched_at(now):
            what = (f"◐ benched until {local_time(s.until, now)} ({countdown((s.until or now) - now)} left) "
                    f"since {local_time(s.since, now)} by {s.host}")
        else:
            what = "● ok"
            if s.cleared_at is not None:
                what += f" (reset {local_time(s.cleared_at, now)} by {s.cleared_by})"
        if s.status != OK and s.code is not None:
            what += f" {s.code}"
        if s.status != OK and s.reason:
            what += f" {s.reason}"
        held = ", ".join(f"{h} ({n} req)" for h, n in k.holders.items()) or NULL
        lines.append(f"  {short(s.fp)}  {what}  held by {held}")
    bad = snap.unreadable()
    if bad:
        # Forged or corrupted data: what is readable is shown above, this is what is not.
        lines.append(f"unreadable ({len(bad)}; ignored by every host's sync):")
        lines += [f"  {p}" for p in bad]
    return lines


def _checked_fp(text: str) -> str:
    """The hex of FP (``fl:`` + 6 to 64 hex), before any network call; never echoed when not."""
    prefix = text.removeprefix(FP_PREFIX).lower()
    if not _HEX.fullmatch(prefix):
        raise BadInput("FP", "is not a fleet fingerprint (fl: and at least 6 hex, as fleet status shows it)")
    return prefix


def _resolve_fp(client: FleetClient, prefix: str) -> str:
    matches = [k.state.fp for k in client.snapshot().keys if k.state.fp.startswith(prefix)]
    if not matches:
        raise BadInput("FP", f"{FP_PREFIX}{prefix[:12]} names no fleet key (fleet status lists them)")
    if len(matches) > 1:
        raise BadInput("FP", f"{FP_PREFIX}{prefix[:12]} matches {len(matches)} fleet keys; give more of it")
    return matches[0]


def _act(args: argparse.Namespace, act: Callable[[FleetClient, str], Any]) -> int:
    from redis import RedisError

    from store.fleet.keys import short
    prefix = _checked_fp(args.fp)
    client = _client(args, _host_name(args))
    try:
        fp = _resolve_fp(client, prefix)
        result, changed = act(client, fp)
    except RedisError as exc:
        return _disconnected(args, exc)
    print(shown(f"{short(fp)}: {result}{'' if changed else ' (no change)'}"))
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    from store.fleet.api import bench_fleet_wide
    seconds = bench_seconds(args.duration)
    return _act(args, lambda c, fp: bench_fleet_wide(c, fp, seconds, home=_home_or_none(args)))


def cmd_reset(args: argparse.Namespace) -> int:
    from store.fleet.api import reset_fleet_wide
    return _act(args, lambda c, fp: reset_fleet_wide(c, fp, home=_home_or_none(args)))


def _home_or_none(args: argparse.Namespace) -> Any:
    home = home_of(args)
    return home if home.root.is_dir() else None


__all__ = ["console_config", "register", "render"]
