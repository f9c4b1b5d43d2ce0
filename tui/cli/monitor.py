"""``hermes-admin monitor``: Prometheus metrics and Apprise alerts for a home or a whole root.

``hermes-admin monitor [--home H | --root R] [--metrics 127.0.0.1:9464] [--notify URL...]
[--rules FILE] [--client-keys FILE]`` runs the daemon (store.monitor.daemon) until SIGTERM or
SIGINT. ``--metrics none`` serves no metrics; a bind beyond loopback needs client keys, as the
proxy's does. ``--notify`` takes Apprise URLs (also ``$HERMES_ADMIN_MONITOR_NOTIFY``, separated
by spaces, so a unit file keeps them out of ``ps``). ``--rules`` defaults to
``<home>/hermes-admin-monitor.yaml`` when it exists, else the built-in rules. ``--check``
validates everything and exits. ``hermes-admin monitor status [--json]`` reads the status
file a running monitor keeps; exit 1 when none runs there.

Exit status: 2 a bad argument or rules file (the argument or field named), 3 the port is in
use, a non-loopback bind without usable client keys, or a monitor already runs there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from store.errors import EXIT_FAILURE, EXIT_OK, BadInput
from store.monitor import DEFAULT_METRICS, RULES_FILE
from store.monitor import rules as monitor_rules
from store.monitor import status as monitor_status
from store.paths import Home, resolve_home
from store.profiles.root import Root, resolve_root
from store.proxy import CLIENT_KEYS_FILE
from store.proxy.edge.inbound import gate_for
from tui.cli import boundary
from tui.text.format import clock_time
from tui.text.ready import CannotAnnounce, say_ready
from tui.text.shown import shown

AddCommon = Callable[[argparse.ArgumentParser], None]
NOTIFY_ENV = "HERMES_ADMIN_MONITOR_NOTIFY"
MAX_DRAIN = 3600.0
_HOST = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[[0-9A-Fa-f:.]{2,45}\]|[0-9A-Fa-f:.]{2,45})$")


def register(sub: argparse._SubParsersAction, add_common: AddCommon) -> None:
    p = sub.add_parser("monitor", help="Prometheus metrics and Apprise alerts for the pools (or: monitor status)")
    p.add_argument("action", nargs="?", choices=("status",), metavar="status",
                   help="show what the monitor running on this home says")
    p.add_argument("--root", metavar="DIR", help="follow every profile of this root instead of one home")
    p.add_argument("--metrics", metavar="HOST:PORT", default=DEFAULT_METRICS,
                   help=f"serve /metrics here (default {DEFAULT_METRICS}; none = no metrics; beyond "
                        "loopback needs --client-keys)")
    p.add_argument("--notify", metavar="URL", nargs="+", action="extend", default=None,
                   help=f"Apprise URL(s) to send alerts to (default ${NOTIFY_ENV}, space-separated)")
    p.add_argument("--rules", metavar="FILE", type=Path,
                   help=f"the rules file (default <home>/{RULES_FILE} when it exists, else built-in rules)")
    p.add_argument("--client-keys", type=Path, metavar="FILE",
                   help=f"bearer keys for a non-loopback /metrics, one per line, mode 0600 "
                        f"(default <home>/{CLIENT_KEYS_FILE}, the proxy's)")
    p.add_argument("--drain-timeout", type=float, default=10.0, metavar="S",
                   help="on SIGTERM, wait this long for alerts still being delivered, 0 to 3600 (default "
                        "%(default)g); what is still owed is kept and sent by the next run")
    p.add_argument("--check", action="store_true", help="check the arguments and the rules file, then exit")
    p.add_argument("--quiet", action="store_true", help="no log lines on stderr")
    p.add_argument("--json", action="store_true", help="with status: machine-readable")
    add_common(p)
    p.set_defaults(func=cmd_monitor)


def parse_metrics(text: str) -> tuple[str, int] | None:
    """``HOST:PORT`` (``[::1]:9464`` for IPv6) or ``none``; BadInput naming --metrics."""
    raw = (text or "").strip()
    if raw.lower() in ("none", "off"):
        return None
    host, sep, port_text = raw.rpartition(":")
    if not sep or not host:
        raise BadInput("--metrics", f"{raw[:60]!r} is not HOST:PORT (for example {DEFAULT_METRICS}), or none")
    if not _HOST.match(host):
        raise BadInput("--metrics", f"{host[:60]!r} is not a host name or address")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise BadInput("--metrics", f"port {port_text[:10]!r} must be a number from 0 to 65535 (0: any free port)")
    return host.strip("[]"), int(port_text)


def check_drain(seconds: float) -> float:
    """``--drain-timeout``: from 0 (send nothing more, keep what is owed for the next run) to
    :data:`MAX_DRAIN` seconds, both included; BadInput naming the argument otherwise."""
    if not 0.0 <= seconds <= MAX_DRAIN:   # NaN fails both
        raise BadInput("--drain-timeout", f"must be from 0 to {MAX_DRAIN:g} seconds (0: do not wait)")
    return float(seconds)


def _where(args: argparse.Namespace) -> tuple[Home | None, Root | None, Home]:
    """(home, root, the home that holds the status file): exactly one of home and root."""
    if args.root is not None:
        if getattr(args, "home", None):
            raise BadInput("--root", "give --home or --root, not both")
        root = resolve_root(args.root)
        if not root.path.is_dir():
            raise BadInput("--root", f"{root.path}: no such directory")
        return None, root, Home(root.path)
    home = resolve_home(getattr(args, "home", None))
    if not home.root.is_dir():
        raise BadInput("--home", f"{home.root}: no Hermes home here (check --home or $HERMES_HOME)")
    return home, None, home


def _rules(args: argparse.Namespace, base: Home) -> monitor_rules.Rules:
    if args.rules is not None:
        return monitor_rules.load(args.rules)
    default = base.root / RULES_FILE
    return monitor_rules.load(default) if default.exists() else monitor_rules.defaults()


def _log(quiet: bool) -> Callable[[str], None]:
    def log(msg: str) -> None:
        if not quiet:
            sys.stderr.write(f"{datetime.now().strftime('%H:%M:%S')} hermes-admin monitor: {shown(msg)}\n")
            sys.stderr.flush()

    return log


def cmd_monitor(args: argparse.Namespace) -> int:
    if args.action == "status":
        return _status(args)
    home, root, base = _where(args)
    metrics = parse_metrics(args.metrics)
    drain = check_drain(args.drain_timeout)
    rules = _rules(args, base)
    urls = args.notify if args.notify is not None else os.environ.get(NOTIFY_ENV, "").split()
    # Imported here: aiohttp, Apprise and prometheus_client cost most of a second of start-up
    # that every other verb would otherwise pay.
    from store.monitor.daemon import Monitor
    from store.monitor.delivery import target

    targets = [target(u, i) for i, u in enumerate(urls, start=1)]
    gate = gate_for(metrics[0] if metrics else "127.0.0.1", args.client_keys or base.root / CLIENT_KEYS_FILE)
    what = f"root {root.path}" if root is not None else f"home {base.root}"
    if args.check:
        print(f"monitor: {what}; rules from {rules.source} "
              f"({', '.join(n for n, r in rules.rules.items() if r.enabled) or 'none on'}); "
              f"quiet period {rules.quiet_period:g}s; {len(targets)} notify target(s)"
              + "".join(f"\n  {shown(t.shown)}" for t in targets))
        return EXIT_OK
    log = _log(args.quiet)
    monitor = Monitor(rules=rules, gate=gate, home=home, root=root, metrics=metrics, targets=targets, log=log)
    undo = boundary.follow_tracebacks(monitor.redactor)
    try:
        asyncio.run(_run(monitor, drain, what, log))
    finally:
        undo()
    return EXIT_OK


async def _run(monitor: Any, drain: float, what: str, log: Callable[[str], None]) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await monitor.start()
    auth = "" if monitor.gate.open else " (client keys required)"
    try:
        say_ready(f"hermes-admin monitor: following {what}; metrics {monitor.metrics_url or 'off'}{auth}; "
                  f"{len(monitor.targets)} notify target(s); rules from {monitor.rules.source}",
                  "the monitor's ready line")
    except CannotAnnounce:
        await monitor.stop(drain)
        raise
    await stop.wait()
    log("stopping")
    await monitor.stop(drain)


def _hhmm(ts: Any) -> str:
    return clock_time(ts)   # a status file another process wrote: checked, never raised on


def _status(args: argparse.Namespace) -> int:
    base = Home(resolve_root(args.root).path) if args.root else resolve_home(getattr(args, "home", None))
    st = monitor_status.read(base)
    running = monitor_status.is_running(st)
    if args.json:
        json.dump({"running": running, "status": st}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return EXIT_OK if running else EXIT_FAILURE
    if st is None:
        print(shown(f"no monitor has run on {base.root}"))
        return EXIT_FAILURE
    if not running:
        owed = st.get("pending") if isinstance(st.get("pending"), list) else []
        print(shown(f"no monitor running on {base.root} "
                    f"(last {st.get('state', '—')} at {_hhmm(st.get('updated_at'))})"
                    + (f"; {len(owed)} alert(s) undelivered, sent by the next run" if owed else "")))
        return EXIT_FAILURE
    alerts = st.get("open_alerts") or []
    print(shown(f"monitor pid {st.get('pid')} since {_hhmm(st.get('started_at'))} on {st.get('path')}; metrics "
                f"{st.get('metrics') or 'off'}; {len(alerts)} open alert(s)"))
    for a in alerts:
        print(shown(f"  [{a.get('severity')}] {a.get('title')} (since {_hhmm(a.get('since'))})"))
    for d in (st.get("last_deliveries") or [])[-10:]:
        print(shown(f"  {_hhmm(d.get('time'))} {d.get('kind')} {d.get('result')} to {d.get('target')} "
                    f"({d.get('attempts')} attempt(s)){' ' + str(d.get('error')) if d.get('error') else ''}"))
    return EXIT_OK
