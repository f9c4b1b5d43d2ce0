"""`hermes-admin`: the dashboard with no verb, and a headless CLI with the same verbs.

Every verb takes --home and --lock-timeout. Errors are one line on stderr naming
the file, field or argument; the exit codes are documented in the README:
0 ok, 1 unexpected failure, 2 bad input, 3 store/config unreadable, 4 lock timeout,
5 probe could not decide.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

from store.errors import EXIT_BAD_INPUT, EXIT_FAILURE, HermesAdminError
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.secrets import fingerprint, redact

from . import cli_config, cli_store

# Secrets seen on this command line, redacted from anything we print on failure.
_SEEN_SECRETS: list[str] = []


def remember_secret(secret: str | None) -> None:
    if secret:
        _SEEN_SECRETS.append(secret)


def _looks_secret(token: str) -> bool:
    return len(token) >= 16 and not any(c.isspace() for c in token) and not token.startswith("-")


class _Parser(argparse.ArgumentParser):
    """argparse echoes stray arguments ("unrecognized arguments: sk-...") — fingerprint them."""

    def error(self, message: str) -> None:  # type: ignore[override]
        words = [fingerprint(w) if _looks_secret(w) else w for w in message.split(" ")]
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {' '.join(words)}\n")


def _lock_timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value < 0 or value > 3600:
        raise argparse.ArgumentTypeError("must be between 0 and 3600 seconds")
    return value


def add_common(p: argparse.ArgumentParser, *, top: bool = False) -> None:
    """--home and --lock-timeout, accepted before or after the verb."""
    default = None if top else argparse.SUPPRESS
    p.add_argument("--home", metavar="DIR", default=default,
                   help="Hermes home (default: $HERMES_HOME, else ~/.hermes)")
    p.add_argument("--lock-timeout", metavar="S", type=_lock_timeout,
                   default=DEFAULT_LOCK_TIMEOUT if top else argparse.SUPPRESS,
                   help=f"seconds to wait for auth.lock (default {DEFAULT_LOCK_TIMEOUT:g})")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="hermes-admin",
        description="Operator console for Hermes Agent credential pools. "
                    "With no verb, opens the live dashboard.",
        epilog="exit codes: 0 ok, 1 unexpected failure or declined, 2 bad input, "
               "3 store/config unreadable, 4 lock timeout, 5 probe undecided. "
               "Exits 2-4 write nothing; probe exits 5 after lifting what did reopen.",
    )
    add_common(parser, top=True)
    parser.add_argument("--read-only", action="store_true",
                        help="open the dashboard with every writing action disabled")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    cli_store.register(sub, add_common)
    cli_config.register(sub, add_common)
    _register_optional(sub)
    return parser


def _register_optional(sub: argparse._SubParsersAction) -> None:
    """Verbs whose modules may be absent in a trimmed install (probe, demo)."""
    try:
        from . import cli_probe
    except ImportError:
        pass
    else:
        cli_probe.register(sub, add_common)
    try:
        from . import cli_proxy
    except ImportError:   # the proxy needs aiohttp
        pass
    else:
        cli_proxy.register(sub, add_common)
    demo = sub.add_parser("demo", help="run the console on a generated demo home with a simulated agent")
    add_common(demo)
    demo.set_defaults(func=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(args.home)


def _run_dashboard(args: argparse.Namespace) -> int:
    from store.paths import resolve_home

    from .app import run

    return run(resolve_home(args.home), read_only=args.read_only, lock_timeout=args.lock_timeout)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = getattr(args, "func", _run_dashboard)
    try:
        return int(func(args) or 0)
    except HermesAdminError as exc:
        _fail(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        _fail("interrupted; nothing was written unless it said so")
        return 130
    except BrokenPipeError:
        # `hermes-admin list | head`: quiet exit, like other Unix tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # never a traceback (it could carry a secret)
        _fail(f"internal error: {type(exc).__name__}: {exc}")
        if os.environ.get("HERMES_ADMIN_DEBUG"):
            import traceback

            sys.stderr.write(redact(traceback.format_exc(), _SEEN_SECRETS))
        return EXIT_FAILURE


def _fail(message: str) -> None:
    sys.stderr.write(f"hermes-admin: error: {redact(message, _SEEN_SECRETS)}\n")


if __name__ == "__main__":
    sys.exit(main())
