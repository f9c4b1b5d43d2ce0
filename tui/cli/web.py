"""`hermes-admin web`: the console in a browser (tui.web), its arguments checked here.

Every bad argument is exit 2 naming it, before anything listens: a non-loopback ``--host``
needs ``--public-url https://…`` (the TLS-terminating proxy in front), a public URL is an
origin (scheme, host, port: no path, query or user), and ``--allow-writes`` and
``--read-only`` contradict each other.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from store.errors import BadInput
from store.paths import Home, resolve_home
from store.profiles.root import resolve_root
from tui.cli.common import AddCommon
from tui.text.durations import parse_duration

if TYPE_CHECKING:
    from tui.web.server import WebOptions

_HOST = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[?[0-9A-Fa-f:.]{2,45}\]?)$")
MAX_SESSIONS = 64


def register(sub: argparse._SubParsersAction, add_common: AddCommon) -> None:
    p = sub.add_parser("web", help="serve the console to a browser (one-time link, read-only by default)")
    p.add_argument("--root", metavar="DIR", help="serve the console on every profile of this root")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; beyond loopback needs --public-url https://…)")
    p.add_argument("--port", default="8765", help="port to listen on (default 8765)")
    p.add_argument("--allow-writes", action="store_true", help="let the browser's console change keys")
    p.add_argument("--read-only", action="store_true", help="no writes from the browser (the default)")
    p.add_argument("--public-url", metavar="URL",
                   help="https://host[:port] of the TLS-terminating reverse proxy in front of this server")
    p.add_argument("--idle-timeout", default="15m", metavar="DURATION",
                   help="end a session after this long without a key (default 15m)")
    p.add_argument("--max-sessions", default="4", metavar="N",
                   help=f"at most N browser sessions at once (default 4, at most {MAX_SESSIONS})")
    add_common(p)
    p.set_defaults(func=cmd_web)


def check_public_url(text: str | None) -> str | None:
    """The proxy's origin, ``https://host[:port]``; BadInput naming --public-url otherwise."""
    if text is None:
        return None
    raw = text.strip()
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        raise BadInput("--public-url", "is not a URL like https://console.example.org") from None
    if parts.scheme != "https":
        raise BadInput("--public-url", "must start with https:// (the TLS-terminating proxy in front)")
    if not parts.hostname or not _HOST.match(parts.hostname) or parts.username or parts.password:
        raise BadInput("--public-url", "needs a host name, and no user or password")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise BadInput("--public-url", "is an origin only: https://host[:port], no path, query or fragment")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"https://{host.lower()}" + (f":{port}" if port not in (None, 443) else "")


def options(args: argparse.Namespace) -> WebOptions:
    """The server's options from parsed arguments; BadInput naming the first bad one."""
    from tui.web.access import is_loopback
    from tui.web.server import WebOptions

    if args.allow_writes and args.read_only:
        raise BadInput("--allow-writes", "contradicts --read-only: give one of them")
    if args.root is not None and getattr(args, "home", None):
        raise BadInput("--root", "give --home or --root, not both")
    host = args.host.strip()
    if not _HOST.match(host):
        raise BadInput("--host", f"{host[:60]!r} is not a host name or address")
    if not args.port.isdigit() or not 1 <= int(args.port) <= 65535:
        raise BadInput("--port", f"{args.port[:10]!r} must be a number from 1 to 65535")
    public = check_public_url(args.public_url)
    if not is_loopback(host) and public is None:
        raise BadInput("--host", f"{host[:60]!r} is not a loopback address: serving beyond this machine "
                       "needs --public-url https://… (a TLS-terminating reverse proxy; see docs/web.md)")
    try:
        idle = parse_duration(args.idle_timeout)
    except ValueError as exc:
        raise BadInput("--idle-timeout", str(exc)) from None
    if not args.max_sessions.isdigit() or not 1 <= int(args.max_sessions) <= MAX_SESSIONS:
        raise BadInput("--max-sessions", f"{args.max_sessions[:10]!r} must be a number from 1 to {MAX_SESSIONS}")
    if args.root is not None:
        root = resolve_root(args.root)
        if not root.path.is_dir():
            raise BadInput("--root", f"{root.path}: no such directory")
        where, name = {"root": str(root.path)}, root.path.name
    else:
        home: Home = resolve_home(getattr(args, "home", None))
        if not home.root.is_dir():
            raise BadInput("--home", f"{home.root}: no Hermes home here (check --home or $HERMES_HOME)")
        where, name = {"home": str(home.root)}, home.root.name
    return WebOptions(host=host.strip("[]"), port=int(args.port), public_url=public,
                      allow_writes=args.allow_writes, idle=idle, max_sessions=int(args.max_sessions),
                      lock_timeout=getattr(args, "lock_timeout", None), title=f"hermes-admin · {name}",
                      **where)


def cmd_web(args: argparse.Namespace) -> int:
    # Imported on use: `hermes-admin list` should not pay for aiohttp's server and textual-serve.
    from tui.web.server import WebConsole, run

    return run(WebConsole(options(args)))
