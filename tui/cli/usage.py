"""``hermes-admin usage [POOL] [--since 24h|7d|30d] [--by key|model|day] [--json|--csv]``:
what each key (model, day) spent, from the usage ledger the proxy keeps (#29).

Read-only: the ledger is opened read-only and nothing is written. No ledger yet: "no usage
recorded yet", exit 0; a ledger that cannot be read: its error, exit 3. Costs as Hermes
labels them (actual, estimated, included, unknown); an unknown cost is null, never 0.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from typing import Any

from store.authfile import read_store
from store.config import settings as settings_file
from store.errors import EXIT_OK
from store.usage import report
from store.usage.ledger import ledger_path
from store.usage.money import money, prices_version
from tui.cli.common import AddCommon, home_of
from tui.text.shown import shown

MAX_POOL = 200


def _pool(text: str) -> str:
    if not text or len(text) > MAX_POOL or not text.isprintable():
        raise argparse.ArgumentTypeError(f"must be a pool name (printable, at most {MAX_POOL} characters)")
    return text


def register(sub: argparse._SubParsersAction, add_common: AddCommon) -> None:
    p = sub.add_parser("usage", help="tokens and cost per key, from the proxy's usage ledger")
    p.add_argument("pool", nargs="?", metavar="POOL", type=_pool, help="one pool (default: every pool)")
    p.add_argument("--since", choices=tuple(report.WINDOWS), default="24h", help="the window (default 24h)")
    p.add_argument("--by", choices=report.BY, default="key", help="group by key, model or day (default key)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable: per pool, per credential")
    out.add_argument("--csv", action="store_true", help="one CSV line per pool and group")
    add_common(p)
    p.set_defaults(func=cmd_usage)


def _labels(home: Any) -> dict[tuple[str, str], str]:
    """Row labels by (pool, id), from auth.json read without a lock (none when unreadable)."""
    try:
        doc = read_store(home).doc or {}
    except Exception:
        return {}
    out = {}
    pools = doc.get("credential_pool") if isinstance(doc, dict) else None
    for pool, rows in (pools.items() if isinstance(pools, dict) else ()):
        for r in rows if isinstance(rows, list) else ():
            if isinstance(r, dict) and isinstance(r.get("id"), str) and isinstance(r.get("label"), str):
                out[(pool, r["id"])] = shown(r["label"])
    return out


def _document(found: dict[str, dict[Any, report.Group]], by: str, labels: dict[tuple[str, str], str],
              since: str, own: list[str]) -> dict[str, Any]:
    pools = {}
    for pool in sorted(found):
        groups = found[pool]
        items = sorted(groups.values(), key=lambda g: (g.name is None, str(g.name)))
        pools[pool] = {"credentials" if by == "key" else f"by_{by}":
                       [g.as_json(by, labels.get((pool, g.name or ""))) for g in items],
                       "totals": report.totals(groups, pool).as_json("total")}
    # Estimates come from the operator's prices for these models, else the pinned price table.
    return {"since": since, "by": by, "prices": {"table": f"genai-prices {prices_version()}", "own": own},
            "pools": pools}


def _text(doc: dict[str, Any]) -> list[str]:
    lines = []
    head = f"{'':26} {'requests':>8} {'input':>9} {'output':>9} {'cached':>8} {'reason':>7}  cost"
    for pool, body in doc["pools"].items():
        lines.append(shown(f"{pool}  (last {doc['since']})"))
        lines.append(head)
        groups = next(v for k, v in body.items() if k != "totals")
        for g in [*groups, {**body["totals"], "id": "total"}]:
            name = g.get("label") or g.get("id") or g.get(doc["by"]) or "—"
            if doc["by"] == "key" and g.get("label") and g.get("id"):
                name = f"{g['label']} ({g['id']})"
            cost = money(g["cost_usd"] if g["cost_usd"] is not None else g["cost_known_usd"], g["cost_status"])
            if g["cost_status"] == "unknown" and g["cost_known_usd"] is not None:
                cost = f"≥{cost} (some unknown)"
            lines.append(f"{shown(str(name))[:26]:26} {g['requests']:>8} {g['input_tokens']:>9} "
                         f"{g['output_tokens']:>9} {g['cache_read_tokens']:>8} {g['reasoning_tokens']:>7}  "
                         f"{cost} {g['cost_status']}")
    return lines


def _csv(doc: dict[str, Any]) -> None:
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["pool", doc["by"] if doc["by"] != "key" else "id", "label", "requests", *report.TOKENS,
                "cost_usd", "cost_status"])
    for pool, body in doc["pools"].items():
        groups = next(v for k, v in body.items() if k != "totals")
        for g in groups:
            name = g.get("id") if doc["by"] == "key" else g.get(doc["by"])
            w.writerow([shown(pool), shown(str(name or "")), shown(g.get("label") or ""), g["requests"],
                        *(g[t] for t in report.TOKENS), "" if g["cost_usd"] is None else g["cost_usd"],
                        g["cost_status"]])


def cmd_usage(args: argparse.Namespace) -> int:
    home = home_of(args)
    usage = settings_file.read(home).usage
    keep = usage.keep_requests
    try:
        found = report.read_usage(ledger_path(home.root), time.time(), report.WINDOWS[args.since], keep,
                                  by=args.by, pool=args.pool)
    except FileNotFoundError:
        if args.json:
            json.dump({"since": args.since, "by": args.by, "pools": {}, "note": "no usage recorded yet"},
                      sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            print("no usage recorded yet (the proxy records each answer's usage in its ledger)")
        return EXIT_OK
    doc = _document(found, args.by, _labels(home), args.since, sorted(usage.prices))
    if args.json:       # one write: the output boundary redacts it in one pass, not per token
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    elif args.csv:
        _csv(doc)
    else:
        lines = _text(doc) or [f"no usage in the last {args.since}"]
        if any(g.get("cost_status") == "estimated" for body in doc["pools"].values()
               for groups in body.values() for g in (groups if isinstance(groups, list) else [groups])):
            own = doc["prices"]["own"]
            lines.append(f"estimates (~): {doc['prices']['table']}" +
                         (f"; your prices for {', '.join(shown(m) for m in own)}" if own else ""))
        print("\n".join(lines))
    return EXIT_OK
