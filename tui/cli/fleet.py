"""``hermes-admin fleet sync|status|bench|reset``: share cooldowns across hosts via Redis/Valkey.

``fleet sync --redis URL [--name HOST] [--secret-file PATH]`` runs the per-host daemon
(store.fleet.sync.SyncDaemon) until SIGTERM/SIGINT; Redis being down is a state it waits out.
``fleet status [--json]`` shows hosts (heartbeat, connected, lag) and every fleet key's
state and holders; with Redis unreachable it says since when the local daemon lost it.
``fleet bench FP SECONDS`` / ``fleet reset FP`` act fleet-wide (published once, applied by
every host's sync) and are audited locally. The URL's password is never printed.
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
from tui.text.format import NULL, countdown, local_time

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
_HOST_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def register(sub: argparse._SubParsersAction, add_common: AddCommon) -> None:
    p = sub.add_parser("fleet", help="share cooldowns across hosts through Redis/Valkey")
    verbs = p.add_subparsers(dest="fleet_verb", metavar="VERB", required=True,
                             parser_class=type(p))

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--redis", metavar="URL", default=os.environ.get(REDIS_ENV),
                       help=f"redis:// or rediss:// URL (default ${REDIS_ENV})")
        q.add_argument("--namespace", default=DEFAULT_NAMESPACE, help=argparse.SUPPRESS)
        add_common(q)

    s = verbs.add_parser("sync", help="run this host's sync daemon (until SIGTERM)")
    common(s)
    s.add_argument("--name", metavar="HOST", help="this host's name in the fleet (default: hostname)")
    s.add_argument("--secret-file", metavar="PATH", help="fleet secret, mode 0600 "
                   "(default $HERMES_ADMIN_FLEET_SECRET)")
    s.add_argument("--interval", type=float, default=RECONCILE_INTERVAL, metavar="S",
                   help="seconds between reconciliations (default %(default)g)")
    s.add_argument("--quiet", action="store_true", help="no log lines on stderr")
    s.set_defaults(func=cmd_sync)

    st = verbs.add_parser("status", help="hosts, heartbeats and each fleet key's state")
    common(st)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)

    b = verbs.add_parser("bench", help="bench a fleet key on every host")
    common(b)
    b.add_argument("fp", metavar="FP", help="fleet fingerprint (fl:… prefix from fleet status)")
    b.add_argument("seconds", metavar="SECONDS", type=float)
    b.set_defaults(func=cmd_bench)

    r = verbs.add_parser("reset", help="reset a fleet key on every host")
    common(r)
    r.add_argument("fp", metavar="FP")
    r.set_defaults(func=cmd_reset)


def add_console_options(parser: argparse.ArgumentParser) -> None:
    """``hermes-admin --fleet URL``: the console with its fleet view."""
    parser.add_argument("--fleet", metavar="URL", help="open the console's fleet view on this "
                        "redis:// or rediss:// URL (F toggles to it later)")
    parser.add_argument("--fleet-secret-file", metavar="PATH", help="fleet secret, mode 0600, to "
                        "label fleet keys with this host's rows (default $HERMES_ADMIN_FLEET_SECRET)")
    parser.add_argument("--fleet-name", metavar="HOST", help="this console's host name in the fleet "
                        "(default: hostname); fleet-wide actions are published under it")


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
    name = args.fleet_name or socket.gethostname().split(".")[0]
    if not _HOST_RE.match(name):
        raise BadInput("--fleet-name", f"{name!r} is not a host name (letters, digits, . _ -; max 63)")
    return FleetConfig(url=url, host=name, secret=secret)


def home_of(args: argparse.Namespace) -> Home:
    return resolve_home(getattr(args, "home", None))


def _client(args: argparse.Namespace, host: str) -> FleetClient:
    from store.fleet.client import FleetClient, connect
    from store.fleet.keys import safe_url, scrub
    url = args.redis
    if not url:
        raise BadInput("--redis", f"no Redis URL: give --redis URL or set {REDIS_ENV}")
    try:
        r = connect(url)
    except ValueError as exc:
        raise BadInput("--redis", scrub(f"{safe_url(url)}: {exc}", url)) from None
    return FleetClient(r, host, namespace=args.namespace)


def _host_name(args: argparse.Namespace) -> str:
    name = getattr(args, "name", None) or socket.gethostname().split(".")[0]
    if not _HOST_RE.match(name):
        raise BadInput("--name", f"{name!r} is not a host name (letters, digits, . _ -; max 63)")
    return name


def _log(quiet: bool) -> Callable[[str], None]:
    def log(msg: str) -> None:
        if not quiet:
            sys.stderr.write(f"{datetime.now().strftime('%H:%M:%S')} {msg}\n")
            sys.stderr.flush()

    return log


def cmd_sync(args: argparse.Namespace) -> int:
    from store.fleet.keys import load_secret, safe_url, scrub
    from store.fleet.sync import SyncDaemon
    home = home_of(args)
    secret = load_secret(args.secret_file)
    name = _host_name(args)
    client = _client(args, name)
    if args.interval <= 0:
        raise BadInput("--interval", "must be a positive number of seconds")
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
    from store.fleet.sync import read_state_file
    state = read_state_file(home_of(args))
    since = state.get("disconnected_since") if state else None
    if isinstance(since, (int, float)):
        line = f"fleet: disconnected since {datetime.fromtimestamp(since).strftime('%H:%M')}"
    else:
        line = "fleet: disconnected"
    reason = scrub(str(exc), args.redis)
    if getattr(args, "json", False):  # only `fleet status` has --json
        json.dump({"connected": False, "disconnected_since": since, "redis": safe_url(args.redis),
                   "error": reason}, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(f"{line} ({safe_url(args.redis)}: {reason})")
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
        print(line)
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
        if s.status == DEAD:
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
    return lines


def _resolve_fp(client: FleetClient, text: str) -> str:
    from store.fleet.keys import FP_PREFIX
    prefix = text.removeprefix(FP_PREFIX).lower()
    if not re.fullmatch(r"[0-9a-f]{6,64}", prefix):
        raise BadInput("FP", f"{text!r} is not a fleet fingerprint (fl: + at least 6 hex)")
    matches = [k.state.fp for k in client.snapshot().keys if k.state.fp.startswith(prefix)]
    if len(matches) != 1:
        raise BadInput("FP", f"{text!r} matches {len(matches)} fleet keys")
    return matches[0]


def _act(args: argparse.Namespace, act: Callable[[FleetClient, str], Any]) -> int:
    from redis import RedisError

    from store.fleet.keys import short
    client = _client(args, _host_name(args))
    try:
        fp = _resolve_fp(client, args.fp)
        result, changed = act(client, fp)
    except RedisError as exc:
        return _disconnected(args, exc)
    print(f"{short(fp)}: {result}{'' if changed else ' (no change)'}")
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    from store.fleet.api import bench_fleet_wide
    if not args.seconds > 0:
        raise BadInput("SECONDS", "must be positive (inf benches the key as dead)")
    return _act(args, lambda c, fp: bench_fleet_wide(c, fp, args.seconds, home=_home_or_none(args)))


def cmd_reset(args: argparse.Namespace) -> int:
    from store.fleet.api import reset_fleet_wide
    return _act(args, lambda c, fp: reset_fleet_wide(c, fp, home=_home_or_none(args)))


def _home_or_none(args: argparse.Namespace) -> Any:
    home = home_of(args)
    return home if home.root.is_dir() else None


__all__ = ["add_console_options", "console_config", "register", "render"]
