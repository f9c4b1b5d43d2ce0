"""``hermes-admin proxy``: serve the home's pools to any OpenAI-compatible app.

``hermes-admin proxy [--host 127.0.0.1] [--port 8645] [--pool POOL] [--client-keys FILE]``
runs the server (store.proxy) until SIGTERM/SIGINT, then drains (at most
``--drain-timeout``) and exits 0. ``hermes-admin proxy status [--json]`` reads the status
file a running proxy keeps under the home and says what it is doing; exit 1 when no proxy
is running there. ``proxy restore`` (back to the primary now), ``proxy pin ROUTE`` (stay on
that route) and ``proxy unpin`` steer a running proxy through a control file under the home
(store.proxy.control, never the network), wait for its answer and audit it; ``--port`` says
which proxy when two run on the home. Exit 1: no proxy running (or none answered); 2: an
unknown route, or a port with no proxy on it.

Every argument is checked before anything starts (RELIABILITY 44). Exit status: 2 bad
input, naming the argument (a port outside 0-65535, a host that is no address, an unknown
pool or none configured, a timeout that is not a finite number of seconds in range); 3 the
proxy cannot listen (the port is in use, the address is not this host's), a non-loopback
bind without a usable client-keys file, or an unreadable store.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import json
import logging
import math
import re
import socket
import sys
import time
from pathlib import Path
from typing import Any, Callable

from store.agent import refresh
from store.agent.runtime import RESTORE_INTERVAL
from store.authfile import read_store, refuse_linked
from store.config import settings as settings_file
from store.config.read import read_config
from store.errors import EXIT_FAILURE, EXIT_OK, EXIT_UNREADABLE, BadInput, HermesAdminError
from store.model import pools
from store.paths import resolve_home
from store.proxy import BODY_TIMEOUT, CLIENT_KEYS_FILE, DEFAULT_PORT, DRAIN_TIMEOUT, control
from store.proxy.edge.inbound import gate_for
from store.proxy.observing.stats import is_live, read_statuses
from store.proxy.routing.upstreams import route_name
from tui.services.proxy_feed import breaker_text, conversations, over_budget, pool_over
from tui.text.format import clock_time
from tui.text.ready import say_ready
from tui.text.shown import shown

AddCommon = Callable[[argparse.ArgumentParser], None]
MAX_SECONDS = 86400.0         # a drain, body or restore wait longer than a day is a typo
_HOST_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")


class CannotListen(HermesAdminError):
    """The proxy could not open its listening socket (the port in use, say): exit 3."""

    exit_code = EXIT_UNREADABLE


def _seconds(lo: float, what: str) -> Callable[[str], float]:
    """An argparse type: finite seconds from *lo* to a day (*what* says what they bound)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"is not a number of seconds ({what})") from None
        if not math.isfinite(value) or not lo <= value <= MAX_SECONDS:
            raise argparse.ArgumentTypeError(f"must be a finite number of seconds from {lo:g} to "
                                             f"{MAX_SECONDS:g} ({what})")
        return value
    return parse


def _port(text: str) -> int:
    try:
        port = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError("is not a port number (0-65535; 0 = any free port)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0-65535; 0 = any free port)")
    return port


def check_host(host: str) -> str:
    """*host* if it is an IP address or a name this machine resolves; BadInput naming
    ``--host`` otherwise (an IPv6 address is written without brackets)."""
    text = host.strip()
    try:
        ipaddress.ip_address(text)
        return text
    except ValueError:
        pass
    if text.startswith("[") and text.endswith("]"):
        raise BadInput("--host", f"{host!r}: write an IPv6 address without brackets ({text[1:-1]})")
    if not _HOST_NAME.match(text):
        raise BadInput("--host", "is not an IP address or a host name")
    try:
        socket.getaddrinfo(text, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise BadInput("--host", f"{text!r} does not resolve on this host ({why})") from None
    return text


def register(sub: argparse._SubParsersAction, add_common: AddCommon) -> None:
    p = sub.add_parser("proxy", help="serve the pools to OpenAI-compatible apps "
                                     "(or: proxy status | restore | pin ROUTE | unpin)")
    p.add_argument("action", nargs="?", choices=("status", *control.COMMANDS), metavar="ACTION",
                   help="status: what the proxy running on this home is doing; restore: back to the primary "
                        "now; pin ROUTE: stay on that route of the chain; unpin: follow the chain again")
    p.add_argument("route", nargs="?", metavar="ROUTE", help="with pin: a route of the chain (name or pool)")
    p.add_argument("--host", default="127.0.0.1",
                   help="bind address (default 127.0.0.1; anything else needs --client-keys)")
    p.add_argument("--port", type=_port, default=None,
                   help=f"port (default {DEFAULT_PORT}; 0 = any); with restore/pin/unpin: the proxy to steer "
                        "(default: the one running on the home)")
    p.add_argument("--pool", metavar="POOL", help="serve this pool first (default: model.provider)")
    p.add_argument("--client-keys", type=Path, metavar="FILE",
                   help=f"client keys, one per line, mode 0600 (default <home>/{CLIENT_KEYS_FILE})")
    p.add_argument("--drain-timeout", type=_seconds(0.0, "the wait for in-flight requests"), default=DRAIN_TIMEOUT,
                   metavar="S", help=f"on SIGTERM, wait this long for in-flight requests, then cancel them "
                                     f"(default {DRAIN_TIMEOUT:g})")
    p.add_argument("--body-timeout", type=_seconds(0.1, "the wait for a request body"), default=BODY_TIMEOUT,
                   metavar="S", help=f"a request body must arrive within this (default {BODY_TIMEOUT:g})")
    p.add_argument("--restore-interval", type=_seconds(0.0, "between restore checks"), default=RESTORE_INTERVAL,
                   metavar="S",
                   help=f"seconds between checks for going back to the primary (default {RESTORE_INTERVAL:g})")
    p.add_argument("--no-metrics", action="store_true",
                   help="do not serve /metrics (Prometheus text, behind the same inbound-auth rule)")
    p.add_argument("--json", action="store_true", help="with status, restore, pin, unpin: machine-readable")
    p.add_argument("--fleet", metavar="URL", help="add this host's spend to the fleet's per-key day counters "
                   "in Redis (redis:// or rediss://), so budgets hold across hosts")
    add_common(p)
    p.set_defaults(func=cmd_proxy)


def cmd_proxy(args: argparse.Namespace) -> int:
    if args.route is not None and args.action != "pin":
        raise BadInput("ROUTE", f"only pin takes a route (got {args.route!r} after {args.action or 'proxy'})")
    if args.action == "status":
        return _status(args)
    if args.action in control.COMMANDS:
        return _steer(args)
    port = DEFAULT_PORT if args.port is None else args.port
    home = resolve_home(getattr(args, "home", None))
    host = check_host(args.host)
    cfg = read_config(home)     # unreadable: exit 3 naming the file (the chain comes from it)
    primary = args.pool or (cfg.primary.provider if cfg is not None and cfg.primary else None)
    if not primary:
        raise BadInput("--pool", f"none given, and {home.config} sets no {missing_primary_field(cfg)}; "
                                 f"pass --pool POOL")
    # A symlinked auth.json reads, but the proxy's counts and benches could not be written:
    # it refuses to start with the error every writing verb gives (exit 3, nothing written).
    refuse_linked(home)
    # hermes-admin.yaml unreadable (a bad budget, say): exit 3 naming the file and field, for a
    # budget that silently did not apply would spend what the operator meant to keep.
    settings_file.read(home)
    doc = read_store(home).doc or {}
    if primary not in pools(doc):
        known = ", ".join(sorted(pools(doc))) or "none"
        where = "--pool" if args.pool else f"{home.config}: model.provider"
        raise BadInput(where, f"{primary!r} is no pool in {home.auth} (pools: {known})")
    # Imported here: aiohttp costs about 1 s of start-up (measured with -X importtime)
    # that every other verb would otherwise pay.
    from store.proxy.loop import run
    from store.proxy.routing.chain import Chain
    from store.proxy.server import ProxyServer, serve

    gate = gate_for(host, args.client_keys or home.root / CLIENT_KEYS_FILE)
    chain = Chain(home, primary, refresh_hook=refresh.RefreshHook(), restore_interval=args.restore_interval,
                  lock_timeout=args.lock_timeout)
    server = ProxyServer(home, chain, gate, host=host, port=port, drain_timeout=args.drain_timeout,
                         body_timeout=args.body_timeout, metrics=not args.no_metrics)
    logging.basicConfig(level=logging.INFO, format="hermes-admin proxy: %(message)s", stream=sys.stderr)
    halt = _fleet_usage(args.fleet, chain) if args.fleet else None

    def ready(s: ProxyServer) -> None:
        chain_text = " -> ".join(route_name(r.name) for r in chain.routes)
        auth = "client keys required" if not gate.open else "any bearer (loopback)"
        host = f"[{s.host}]" if ":" in s.host else s.host
        # stdout refusing it: CannotAnnounce, once serve() has stopped the proxy (drain, flush, final status)
        say_ready(f"hermes-admin proxy on http://{host}:{s.port}/v1 serving {shown(chain_text)}; {auth}",
                  "the proxy's address")

    try:
        run(serve(server, on_ready=ready))     # asyncio's loop; uvloop if asked for
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise CannotListen(f"--port {port}: already in use on {host} (another proxy? "
                               f"`hermes-admin proxy status`, or pick another --port)") from None
        if exc.errno in (errno.EADDRNOTAVAIL, errno.EACCES, errno.EAFNOSUPPORT):
            raise CannotListen(f"--host {host} --port {port}: cannot listen there "
                               f"({exc.strerror})") from None
        raise
    finally:
        if halt is not None:
            halt()      # hands over what is owed, bounded
    return EXIT_OK


def _fleet_usage(url: str, chain: Any) -> Any:
    """The fleet's usage counters for ``--fleet URL`` (store.fleet.usage), started; the
    function that stops them. A bad URL: exit 2 naming --fleet."""
    from store.fleet.client import connect
    from store.fleet.keys import safe_url, scrub
    from store.fleet.usage import FleetUsage

    try:
        client = connect(url)
    except ValueError as exc:
        raise BadInput("--fleet", scrub(f"{safe_url(url)}: {exc}", url)) from None
    return FleetUsage(client, chain.eligibility.budgets.tally, lambda: chain.pools).start()


def missing_primary_field(cfg: Any) -> str:
    """The field of config.yaml whose absence leaves no primary: ``model.default`` when
    ``model`` names a provider but no model (Hermes needs both), else ``model.provider``."""
    node = cfg.data.get("model") if cfg is not None and isinstance(cfg.data, dict) else None
    if isinstance(node, dict) and str(node.get("provider") or "").strip():
        return "model.default"
    return "model.provider"


def _steer(args: argparse.Namespace) -> int:
    """proxy restore / pin ROUTE / unpin: ask the running proxy, print and audit its answer."""
    if args.action == "pin" and not args.route:
        raise BadInput("ROUTE", "pin needs a route of the chain: hermes-admin proxy pin ROUTE")
    home = resolve_home(getattr(args, "home", None))
    st = control.choose(home, args.port)
    port = int(st["port"])
    route = control.resolve_route(st, args.route) if args.action == "pin" else None
    answer = control.ask(home, port, args.action, route, "cli")
    if args.json:
        json.dump({"port": port, **answer.as_dict()}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif answer.ok:
        print(shown(f"proxy :{port}: {answer.message}"))
    if not answer.ok:
        raise BadInput("ROUTE" if args.action == "pin" else "proxy", f"proxy :{port}: {answer.message}")
    return EXIT_OK


def _status(args: argparse.Namespace) -> int:
    home = resolve_home(getattr(args, "home", None))
    now = time.time()
    statuses = read_statuses(home)
    live = [st for st in statuses if is_live(st, now)]
    if args.json:
        json.dump({"running": bool(live), "proxies": live, "last": statuses[0] if statuses else None},
                  sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return EXIT_OK if live else EXIT_FAILURE
    if not statuses:
        print(shown(f"no proxy has run on {home.root}"))
        return EXIT_FAILURE
    if not live:
        st = statuses[0]
        print(shown(f"no proxy running on {home.root} (last status {st.get('state', '—')} at "
              f"{clock_time(st.get('updated_at'))})"))
        return EXIT_FAILURE
    for st in live:
        _print_status(st)
    return EXIT_OK


def _print_status(st: dict[str, Any]) -> None:
    """One proxy's status file, each line whole through the one funnel: a route, model,
    label or pool name holding a line break cannot start a line of its own."""
    def say(line: str) -> None:
        print(shown(line))

    say(f"proxy {st.get('url')} pid {st.get('pid')}, {st.get('state')} since {clock_time(st.get('started_at'))}; "
        f"in flight {st.get('in_flight', 0)}, requests {st.get('requests_total', 0)}, "
        f"client keys {'required' if st.get('inbound_auth') else 'not required (loopback)'}")
    if st.get("active") == st.get("primary"):
        say(f"chain: on primary {st.get('primary')}")
    else:
        say(f"chain: on fallback {st.get('active')} since {clock_time(st.get('on_fallback_since'))}, "
            f"next restore check {clock_time(st.get('next_restore_check'))}")
    if type(st.get("holding")) is int and st["holding"] > 0:     # a bool is no count
        say(f"held for the soonest reset: {st['holding']} request(s) (proxy.hold in hermes-admin.yaml)")
    if isinstance(st.get("pinned"), str):
        say(f"pinned to {st['pinned']} by an operator (hermes-admin proxy unpin to follow the chain again)")
    for r in st.get("chain") or []:
        mark = "▶" if r.get("active") else " "
        down = f"  upstream down {r.get('down')}" if r.get("down") else ""
        say(f"  {mark} {r.get('name')}  model {r.get('model') or '(client)'}  usable {r.get('usable')}/"
            f"{r.get('rows')}  cooling {r.get('cooling')}  dead {r.get('dead')}{down}")
        if r.get("paths"):
            say(f"      serves {' '.join(map(str, r['paths']))}")
        if over := pool_over(r):
            say(f"      {over}")
    for u in st.get("upstreams") or []:
        say(f"upstream {u.get('upstream')}: {breaker_text(u, st.get('updated_at'))}")
    say("credentials:")
    over = over_budget(st)
    for c in st.get("credentials") or []:
        held = conversations(st, c.get("pool"), c.get("id"))
        words = over.get((str(c.get("pool")), str(c.get("id"))))
        say(f"  {c.get('pool')}/{c.get('id')}  {c.get('label') or '—'}  in flight {c.get('in_flight')}  "
            f"{c.get('requests_per_minute')}/min" + ("" if held is None else f"  conversations {held}")
            + (f"  {words}" if words else ""))
    for name, p in (st.get("pools") or {}).items():
        say(f"pool {name}: last 10 min {sum(p.get('requests') or [])} requests, "
            f"{sum(p.get('rate_limited') or [])} answered 429")
