"""CLI verbs on config.yaml: strategy, fallback, routing.

Edits go through store.config.edit (run by store.ops.write), which keeps the operator's comments and unknown keys.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable

from store import authfile
from store.config import edit as config_edit
from store.config.read import read_config
from store.errors import BadInput
from store.model import STRATEGIES, pools
from store.ops.actions import check_pool
from store.pools.policy import known_strategy
from tui.cli.common import AddCommon, edit, home_of, warn
from tui.text.format import NULL
from tui.text.sentences import STRATEGY_HELP as STRATEGY_HELP
from tui.text.shown import shown


def register(sub: argparse._SubParsersAction, add_common: AddCommon) -> None:
    p = sub.add_parser("strategy", help="show or set a pool's selection strategy")
    p.add_argument("pool", nargs="?", metavar="POOL")
    p.add_argument("strategy", nargs="?", metavar="STRATEGY", help=" | ".join(STRATEGIES) + " | default")
    add_common(p)
    p.set_defaults(func=cmd_strategy)

    fb = sub.add_parser("fallback", help="the fallback chain (provider + model when a pool is out)")
    fsub = fb.add_subparsers(dest="fallback_verb", metavar="ACTION", required=True,
                             parser_class=type(fb))
    p = fsub.add_parser("list", help="the effective chain, merged and de-duplicated as the agent sees it")
    p.add_argument("--json", action="store_true")
    add_common(p)
    p.set_defaults(func=cmd_fallback_list)
    p = fsub.add_parser("add", help="append an entry")
    p.add_argument("provider", metavar="PROVIDER")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--base-url", metavar="URL")
    p.add_argument("--key-env", metavar="VAR", help="environment variable holding the key")
    add_common(p)
    p.set_defaults(func=cmd_fallback_add)
    p = fsub.add_parser("remove", help="remove entry N (1-based, as `fallback list` shows)")
    p.add_argument("n", type=int, metavar="N")
    add_common(p)
    p.set_defaults(func=cmd_fallback_remove)
    p = fsub.add_parser("move", help="move entry N to position M")
    p.add_argument("n", type=int, metavar="N")
    p.add_argument("m", type=int, metavar="M")
    add_common(p)
    p.set_defaults(func=cmd_fallback_move)
    p = fsub.add_parser("clear", help="remove every entry")
    add_common(p)
    p.set_defaults(func=cmd_fallback_clear)
    add_common(fb)

    rt = sub.add_parser("routing", help="OpenRouter provider routing")
    rsub = rt.add_subparsers(dest="routing_verb", metavar="ACTION", required=True,
                             parser_class=type(rt))
    p = rsub.add_parser("show", help="the provider_routing section as Hermes reads it")
    p.add_argument("--json", action="store_true")
    add_common(p)
    p.set_defaults(func=cmd_routing_show)
    p = rsub.add_parser("set", help="sort price|throughput|latency, only/ignore/order a,b, "
                                    "require_parameters true|false, data_collection allow|deny")
    p.add_argument("key", metavar="KEY")
    p.add_argument("value", metavar="VALUE")
    add_common(p)
    p.set_defaults(func=cmd_routing_set)
    p = rsub.add_parser("unset", help="remove one provider_routing key (OpenRouter's default applies)")
    p.add_argument("key", metavar="KEY")
    add_common(p)
    p.set_defaults(func=cmd_routing_unset)
    add_common(rt)


def _edit(args: argparse.Namespace, fn: Callable[[Any, float], Any], done: str) -> int:
    """Run one locked config.yaml edit through store.ops.write, say what happened."""
    edit(args, lambda: fn(home_of(args), args.lock_timeout))
    print(done)
    return 0


# --- strategy ----------------------------------------------------------------------------------

def cmd_strategy(args: argparse.Namespace) -> int:
    home = home_of(args)
    if args.strategy is None:
        cfg = read_config(home)
        snap = authfile.read_store(home)
        names = sorted(set(pools(snap.doc or {})) | set(cfg.strategies))
        if args.pool:
            check_pool(args.pool)
            names = [args.pool]
        for name in names:
            configured = cfg.strategies.get(name)
            if configured is None:
                print(f"{shown(name)}: fill_first (default)")
            elif known_strategy(configured) == configured.strip().lower():
                print(f"{shown(name)}: {shown(configured)}")
            else:
                print(f"{shown(name)}: {shown(configured)} (unknown to Hermes, which uses fill_first)")
        if not names:
            print("no pools and no configured strategies")
        return 0
    check_pool(args.pool)
    strategy = None if args.strategy == "default" else args.strategy
    if strategy is not None and strategy not in STRATEGIES:
        raise BadInput("STRATEGY", f"{args.strategy!r} is not one of {', '.join(STRATEGIES)} (or 'default')")
    edit(args, lambda: config_edit.set_strategy(home, args.pool, strategy, lock_timeout=args.lock_timeout))
    print(f"{shown(args.pool)}: {strategy or 'fill_first (default)'} — {STRATEGY_HELP[strategy or 'fill_first']}")
    return 0


# --- fallback ----------------------------------------------------------------------------------

def cmd_fallback_list(args: argparse.Namespace) -> int:
    cfg = read_config(home_of(args))
    for w in cfg.warnings:
        warn(w)
    chain = cfg.fallback_chain
    if args.json:
        json.dump([{"index": i, "provider": e.provider, "model": e.model, "base_url": e.base_url,
                    "key_env": e.key_env, "has_api_key": e.has_api_key, "origin": e.origin}
                   for i, e in enumerate(chain, start=1)], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if not chain:
        print("no fallback chain: when a pool is out, the agent stops")
        return 0
    for i, e in enumerate(chain, start=1):
        extras = []
        if e.base_url:
            extras.append(f"base_url={shown(e.base_url)}")
        if e.key_env:
            extras.append(f"key_env={shown(e.key_env)}")
        if e.has_api_key:
            extras.append("api_key=(set)")
        if e.origin != "fallback_providers":
            extras.append(f"[{shown(e.origin)}]")
        print(f"{i}. {shown(e.provider)} / {shown(e.model)} {' '.join(extras)}".rstrip())
    return 0


def cmd_fallback_add(args: argparse.Namespace) -> int:
    edit(args, lambda: config_edit.fallback_add(home_of(args), args.provider, args.model, base_url=args.base_url,
                                                key_env=args.key_env, lock_timeout=args.lock_timeout))
    print(f"added fallback {shown(args.provider)} / {shown(args.model)}")
    return 0


def cmd_fallback_remove(args: argparse.Namespace) -> int:
    return _edit(args, lambda home, t: config_edit.fallback_remove(home, args.n, lock_timeout=t),
                 f"removed fallback entry {args.n}")


def cmd_fallback_move(args: argparse.Namespace) -> int:
    return _edit(args, lambda home, t: config_edit.fallback_move(home, args.n, args.m, lock_timeout=t),
                 f"moved fallback entry {args.n} to {args.m}")


def cmd_fallback_clear(args: argparse.Namespace) -> int:
    return _edit(args, lambda home, t: config_edit.fallback_clear(home, lock_timeout=t),
                 "fallback chain cleared")


# --- routing -----------------------------------------------------------------------------------

def cmd_routing_show(args: argparse.Namespace) -> int:
    cfg = read_config(home_of(args))
    for w in cfg.warnings:
        warn(w)
    if args.json:
        json.dump(cfg.routing, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    if not cfg.routing:
        print("no provider_routing: OpenRouter's defaults apply")
        return 0
    for key, value in cfg.routing.items():
        said = ", ".join(map(str, value)) if isinstance(value, list) else value
        print(f"{shown(key)}: {NULL if said in (None, '') else shown(said)}")
    return 0


def cmd_routing_set(args: argparse.Namespace) -> int:
    return _edit(args, lambda home, t: config_edit.routing_set(home, args.key, args.value, lock_timeout=t),
                 f"provider_routing.{shown(args.key)} set")


def cmd_routing_unset(args: argparse.Namespace) -> int:
    return _edit(args, lambda home, t: config_edit.routing_unset(home, args.key, lock_timeout=t),
                 f"provider_routing.{shown(args.key)} removed")
