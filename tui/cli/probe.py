"""``hermes-admin probe POOL [TARGET] [--json]``: ask the provider whether benched keys
reopened early, and lift only those.

For each row of the pool (or only TARGET) it prints the verdict: ``reopened`` (its cooldown
is lifted), ``still limited``, ``unknown (reason)``, or why it was not probed (not benched,
dead). Cooldowns that have simply run out are cleared too, in the same transaction. The
probes run before the lock is taken (store.agent.probe.lift_reopened_cooldowns).

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
from typing import Any

from store.agent import probe
from store.errors import EXIT_OK, EXIT_PROBE
from store.ops.probe_report import run_probe
from tui.cli.common import AddCommon, edit, home_of, load_config, load_env
from tui.text.shown import shown


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
        return load_env(home)
    except Exception:
        return probe.home_env(home)


def cmd_probe(args: argparse.Namespace) -> int:
    home = home_of(args)
    _cfg, ttls = load_config(home)
    now = time.time()
    env = _env(home)
    report = edit(args, lambda: run_probe(home, args.pool, now, ttls=ttls, env=env, target=args.target,
                                          timeout=args.timeout, lock_timeout=args.lock_timeout))
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        for row in report.rows:   # one line each, whatever a label or a provider's text holds
            print(shown(row.line(args.pool)))
        print(shown(report.summary()))
    return EXIT_PROBE if report.undecided else EXIT_OK
