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
from store.paths import DEFAULT_PROFILE, resolve_home
from store.profiles.root import discover, home_profile, resolve_root
from store.redaction import crash
from tui.cli import boundary, guard, verbs
from tui.cli.verbs import Parser, add_common
from tui.text.shown import shown


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; with *argv*, only the verb modules its tokens name are imported
    (``tui.cli.verbs``): the console's start-up imports none of them."""
    parser = Parser(
        prog="hermes-admin",
        description="Operator console for Hermes Agent credential pools. "
                    "With no verb, opens the live dashboard.",
        epilog="exit codes: 0 ok, 1 unexpected failure or declined, 2 bad input, "
               "3 store/config unreadable, 4 lock timeout, 5 probe undecided. "
               "Exits 2-4 write nothing; probe exits 5 after lifting what did reopen.",
    )
    add_common(parser, top=True)
    parser.add_argument("--version", action=_Version, nargs=0, help="print hermes-admin's version and exit")
    parser.add_argument("--root", dest="console_root", metavar="DIR",
                        help="open the console on every profile of this root "
                             "(default: derived from --home/$HERMES_HOME as Hermes does)")
    parser.add_argument("--read-only", action="store_true",
                        help="open the dashboard with every writing action disabled")
    verbs.add_console_options(parser)
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=Parser)
    verbs.register(sub, argv)
    demo = sub.add_parser("demo", help="run the console on a generated demo home with a simulated agent")
    add_common(demo)
    demo.add_argument("--fleet", dest="fleet_demo", action="store_true",
                      help="two simulated hosts sharing keys through a local redis-server; "
                           "the console in fleet view on host A")
    demo.set_defaults(func=_run_demo)
    return parser


class _Version(argparse.Action):
    """``hermes-admin --version``: the installed distribution's version (read only when asked)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib import metadata

        try:
            version = metadata.version("hermes-admin")
        except metadata.PackageNotFoundError:   # run from a source tree that was never installed
            version = "unknown (not installed)"
        sys.stdout.write(f"hermes-admin {version}\n")
        parser.exit(0)


class NoTerminal(HermesAdminError):
    """The console was started where it cannot draw or read keys (exit 2)."""

    exit_code = EXIT_BAD_INPUT


def _need_terminal() -> None:
    """The console's refusal off a terminal (:func:`no_terminal`): after the arguments' own
    checks (a bad option is named first), before anything is written or started."""
    if (missing := no_terminal()) is not None:
        raise NoTerminal(missing)


def _run_demo(args: argparse.Namespace) -> int:
    _need_terminal()
    # Imported on use: `hermes-admin list` should not pay for the demo's modules.
    if args.fleet_demo:
        from tui.demo.fleet import run_fleet_demo

        return run_fleet_demo()
    from tui.demo.launch import run_demo

    return run_demo(args.home)


def _run_dashboard(args: argparse.Namespace) -> int:
    home = resolve_home(args.home)
    root = resolve_root(args.console_root, args.home)
    if args.console_root or len(discover(root)) > 1:
        # Imported on use: Textual and the screens cost most of the CLI's start-up (see bench).
        from tui.app.root_console import run_root

        # A --home/$HERMES_HOME inside profiles/ opens narrowed to it; `P` widens it again.
        profile = None if args.console_root else home_profile(root, home)
        _need_terminal()
        return run_root(root, profile=None if profile == DEFAULT_PROFILE else profile,
                        read_only=args.read_only, lock_timeout=args.lock_timeout)
    from tui.app.console import run

    fleet = None
    if getattr(args, "fleet", None):     # the fleet verb's module (socket, signal...) only with --fleet
        from tui.cli.fleet import console_config

        fleet = console_config(args)
    _need_terminal()
    return run(home, read_only=args.read_only, lock_timeout=args.lock_timeout, fleet=fleet)


def main(argv: Sequence[str] | None = None) -> int:
    # The boundary goes up before argparse parses: its own messages pass it too.
    edge = boundary.install(argv)
    try:
        return _main(argv, edge)
    except boundary.ClosedStdout:
        return _stdout_refused(None)
    except SystemExit as exc:       # argparse: --help, --version, a usage error
        if exc.code in (0, None) and (refused := edge.stdout_failure()) is not None:
            return _stdout_refused(refused)      # argparse dropped the failed write: exit 0, silent
        raise
    except OSError as exc:          # a write of --version that stdout refused, while arguments are read
        refused = edge.stdout_failure()
        if refused is None:
            raise
        return _stdout_refused(refused if isinstance(refused, boundary.ClosedStdout) else exc)
    finally:
        edge.release()
        boundary.settle_streams()


def _main(argv: Sequence[str] | None, edge: boundary.Boundary) -> int:
    tokens = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(tokens).parse_args(tokens)  # usage errors: SystemExit(2), after the boundary
    func: Callable[[argparse.Namespace], int] = getattr(args, "func", _run_dashboard)
    if func not in (_run_dashboard, _run_demo):
        args.redactor = edge.redactor       # what the boundary knows: writes audit with it, no second read
    try:
        guard.check(args, creates_home=func in (_run_dashboard, _run_demo))
        if func in (_run_dashboard, _run_demo):
            edge.release()  # the console draws on the terminal and redacts in its own funnel
        return int(func(args) or 0)
    except HermesAdminError as exc:
        _fail(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        _fail("interrupted; nothing was written unless it said so")
        return 130
    except BrokenPipeError as exc:      # `hermes-admin list | head`: quiet exit, like other Unix tools
        return _stdout_refused(exc)
    except RecursionError:
        _fail("input nested too deeply to read")
        return EXIT_BAD_INPUT
    except boundary.ClosedStdout:
        raise                       # main() says so, as for a --help that could not print
    except Exception as exc:  # never a raw traceback: the debug one passes the boundary, no locals
        if isinstance(exc, OSError) and edge.stdout_failure() is not None:
            return _stdout_refused(exc)     # a full disk under stdout is not hermes-admin's fault
        _fail(f"internal error: {crash.summary(exc, edge.redactor)}")
        if boundary.debug_enabled():
            sys.stderr.write(crash.report(exc, edge.redactor) + "\n")
        return EXIT_FAILURE


def no_terminal() -> str | None:
    """Why the console cannot run here, or None. It reads keys on standard input and draws
    on standard error (Textual's terminal driver), so both must be terminals: under ``nohup``
    or with ``2>file`` it would draw into a file, unseen, and fail at its exit. A driver named
    in ``TEXTUAL_DRIVER`` (the web console's) draws elsewhere: not checked."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return None
    for fd, name, use in ((0, "standard input", "reads keys"), (2, "standard error", "draws")):
        try:
            ok = os.isatty(fd)
        except OSError:
            ok = False
        if not ok:
            return (f"the console needs a terminal, and {name} is not one (it {use} there); run it in a "
                    "terminal (over SSH: ssh -t), or use a verb (`hermes-admin list`; every verb: "
                    "`hermes-admin --help`)")
    return None


def _stdout_refused(exc: OSError | None) -> int:
    """Say on stderr that stdout took none of the output (*exc*: why; None or
    :class:`~tui.cli.boundary.ClosedStdout`: it was closed at the start); exit 1. A reader
    that left (``--help | head -1``) is a quiet exit 0, as for a verb's output."""
    if isinstance(exc, BrokenPipeError):     # nothing more goes to the pipe, not even Python's last flush
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        return 0
    if exc is None or isinstance(exc, boundary.ClosedStdout):
        _fail("stdout is closed: the output could not be printed (any change made is in "
              "`hermes-admin history`; send stdout to /dev/null rather than closing it)")
    else:
        _fail(f"the output could not be printed on stdout ({exc}); any change made is in `hermes-admin history`")
    return EXIT_FAILURE


def _fail(message: str) -> None:
    # One line, whatever a pool name or a provider's text inside the message held.
    sys.stderr.write(f"hermes-admin: error: {shown(message)}\n")
