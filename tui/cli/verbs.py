"""The verb index: which module registers each verb, so a verb's module is imported only
when its verb runs.

``hermes-admin`` with no verb opens the console, and ``hermes-admin list`` has no use for
the proxy's, the monitor's or the config editors' modules (aiohttp, prometheus_client,
Apprise, ruamel.yaml and most of ``store``). :func:`register` builds the subparsers for the
families whose verbs appear on the command line (all of them without a command line, for
``--help`` and the tests); every other verb is a stub with its one-line help, so the list
of verbs, argparse's "invalid choice" and ``hermes-admin --help`` stay whole. A test holds
each stub's help to the real parser's.

Also the parser class and the options every verb takes (``Parser``, :func:`add_common`).
Imports no verb module and nothing heavier than ``store.ops.bounds``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Callable, Sequence

from store.errors import EXIT_BAD_INPUT, BadInput
from store.ops import bounds

# store.lock.DEFAULT_LOCK_TIMEOUT, literal here so that the parser does not import the lock
# (and filelock); tests/cli/test_start_up.py holds the two equal.
DEFAULT_LOCK_TIMEOUT = 30.0

# (module, verbs it registers, verbs it extends), in the order `--help` lists them.
FAMILIES: tuple[tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]], ...] = (
    ("tui.cli.store_verbs", (
        ("list", "list pools and credentials with live cooldowns"),
        ("add", "add an API key to a pool (source manual)"),
        ("remove", "remove a credential (TARGET: id, unique label or 1-based index)"),
        ("reset", "clear the cooldown of one credential or of the whole pool"),
        ("cooldown", "bench a credential by hand"),
        ("priority", "move a credential to priority N (0 = tried first)"),
        ("audit", "show the latest operator actions, newest first (as `history`)"),
        ("restore-backup", "put auth.json.bak back (keeps the current file aside)"),
    ), ()),
    ("tui.cli.history_verbs", (
        ("history", "the operator actions this home keeps, newest first, with their ids"),
        ("undo", "put back what an operator action changed (default: the newest)"),
    ), ()),
    ("tui.cli.config_verbs", (
        ("strategy", "show or set a pool's selection strategy"),
        ("fallback", "the fallback chain (provider + model when a pool is out)"),
        ("routing", "OpenRouter provider routing"),
    ), ()),
    ("tui.cli.usage", (("usage", "tokens and cost per key, from the proxy's usage ledger"),), ()),
    ("tui.cli.probe", (("probe", "ask the provider if benched keys reopened early; lift those"),), ()),
    ("tui.cli.fleet", (("fleet", "share cooldowns across hosts through Redis/Valkey"),), ()),
    ("tui.cli.proxy", (("proxy", "serve the pools to OpenAI-compatible apps "
                                 "(or: proxy status | restore | pin ROUTE | unpin)"),), ()),
    ("tui.cli.monitor", (("monitor", "Prometheus metrics and Apprise alerts for the pools (or: monitor status)"),),
     ()),
    ("tui.cli.web", (("web", "serve the console to a browser (one-time link, read-only by default)"),), ()),
    # After store_verbs: adds --all-profiles and --root to cooldown and reset.
    ("tui.cli.profiles", (("inventory", "every profile, pool and credential, with findings"),),
     ("cooldown", "reset")),
)

AddCommon = Callable[[argparse.ArgumentParser], None]


class Parser(argparse.ArgumentParser):
    """Usage errors are exit 2; the redaction boundary (boundary.py) fingerprints any key
    in them, so ordinary words such as ``restore-backup`` print as they are. No abbreviated
    options (``--hom``): the boundary reads ``--home`` off the command line before argparse
    does, to know the home's secrets, and must find the home argparse uses."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _lock_timeout(text: str) -> float:
    try:
        return bounds.lock_timeout(text)
    except BadInput as exc:
        raise argparse.ArgumentTypeError(exc.problem) from None


def add_common(p: argparse.ArgumentParser, *, top: bool = False) -> None:
    """--home and --lock-timeout, accepted before or after the verb."""
    default = None if top else argparse.SUPPRESS
    p.add_argument("--home", metavar="DIR", default=default,
                   help="Hermes home (default: $HERMES_HOME, else ~/.hermes)")
    p.add_argument("--lock-timeout", metavar="S", type=_lock_timeout,
                   default=DEFAULT_LOCK_TIMEOUT if top else argparse.SUPPRESS,
                   help=f"seconds to wait for auth.lock (default {DEFAULT_LOCK_TIMEOUT:g})")


def wanted(argv: Sequence[str] | None) -> set[str]:
    """The families to load for *argv*: every one whose verb (or extended verb) is a token
    of it (a home directory called ``list`` loads one family too many, never one too few);
    every family for None (the whole parser)."""
    if argv is None:
        return {module for module, _, _ in FAMILIES}
    tokens = set(argv)
    return {module for module, verbs, extends in FAMILIES
            if tokens & ({name for name, _ in verbs} | set(extends))}


def register(sub: argparse._SubParsersAction, argv: Sequence[str] | None) -> None:
    """Every family's verbs on *sub*: the real subparsers for those *argv* names, stubs
    (name and help only) for the rest."""
    load = wanted(argv)
    if load & {"tui.cli.profiles"}:
        load.add("tui.cli.store_verbs")   # profiles extends cooldown and reset: register them first
    for module, verbs, _extends in FAMILIES:
        if module in load:
            importlib.import_module(module).register(sub, add_common)
        else:
            for name, text in verbs:
                sub.add_parser(name, help=text, add_help=False)


def add_console_options(parser: argparse.ArgumentParser) -> None:
    """``hermes-admin --fleet URL``: the console with its fleet view."""
    parser.add_argument("--fleet", metavar="URL", help="open the console's fleet view on this "
                        "redis:// or rediss:// URL (F toggles to it later)")
    parser.add_argument("--fleet-secret-file", metavar="PATH", help="fleet secret, mode 0600, to "
                        "label fleet keys with this host's rows (default $HERMES_ADMIN_FLEET_SECRET)")
    parser.add_argument("--fleet-name", metavar="HOST", help="this console's host name in the fleet "
                        "(default: hostname); fleet-wide actions are published under it")
