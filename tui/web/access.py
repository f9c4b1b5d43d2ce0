"""Who may reach a console served by ``hermes-admin web``: one-time tokens, session cookies,
and the exact Origin and Host every request must carry.

- :class:`Tokens`: the URL printed at start holds a token that works once. Only its SHA-256
  is kept; a used or unknown token is refused.
- :class:`Sessions`: trading a token makes a session, named by a random cookie (HttpOnly,
  SameSite=Strict, Path=/, Secure and ``__Host-`` behind TLS). A session ends after
  ``idle`` seconds without a key, a click or a resize, and at most ``limit`` live at once.
- :class:`Gate`: the aiohttp middleware. Every request needs the Host it was served under;
  a request that carries an Origin (browsers send one with every WebSocket upgrade and
  every POST) needs the exact origin too, and an upgrade or a write without one is refused.
  A request a browser marks as coming from another site (``Sec-Fetch-Site``) is refused.
  A SameSite cookie does not stop a page on another loopback port: for cookies that is the
  same site, so the Origin check is what closes the socket to it.

Nothing here logs a token or a cookie, and neither is ever put in a URL after the first load.
(RELIABILITY 60: the browser is a door, not a window left open.)
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from tui.web.page import message_page

Clock = Callable[[], float]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

TOKEN_PARAM = "token"
COOKIE = "hermes_admin_session"
SECURE_COOKIE = "__Host-hermes_admin_session"   # the prefix: Secure, Path=/, no Domain


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


def is_loopback(host: str) -> bool:
    """True for a loopback address or the name localhost (what a non-TLS bind may use)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Tokens:
    """One-time tokens: :meth:`issue` a new one, :meth:`redeem` it once."""

    def __init__(self) -> None:
        self._live: set[bytes] = set()

    def issue(self) -> str:
        token = secrets.token_urlsafe(32)
        self._live.add(_digest(token))
        return token

    def redeem(self, token: str) -> bool:
        """True once for an issued token; False for a used, unknown or malformed one."""
        if not token or len(token) > 200:
            return False
        d = _digest(token)
        for live in list(self._live):
            if hmac.compare_digest(live, d):
                self._live.discard(live)
                return True
        return False


@dataclass
class Session:
    """One browser's session: the remote address it traded its token from, when last active."""

    key: bytes            # SHA-256 of the cookie value
    remote: str
    started: float
    last_active: float
    ended: bool = False
    # How to end this session's open page(s): each closes its socket, saying why.
    closers: list[Callable[[str], Awaitable[None]]] = field(default_factory=list)


class Sessions:
    """Live sessions by cookie; idle ones end, and at most *limit* live at once."""

    def __init__(self, *, idle: float, limit: int, clock: Clock = time.monotonic) -> None:
        self.idle = idle
        self.limit = limit
        self.clock = clock
        self._by_key: dict[bytes, Session] = {}

    def __len__(self) -> int:
        return len(self._by_key)

    def full(self) -> bool:
        return len(self._by_key) >= self.limit

    def start(self, remote: str) -> tuple[str, Session]:
        """A new session: its cookie value (given to the browser once) and its record."""
        cookie = secrets.token_urlsafe(32)
        now = self.clock()
        s = Session(_digest(cookie), remote, now, now)
        self._by_key[s.key] = s
        return cookie, s

    def find(self, cookie: str | None) -> Session | None:
        """The live session this cookie names, or None (unknown, malformed or ended)."""
        if not cookie or len(cookie) > 200:
            return None
        s = self._by_key.get(_digest(cookie))
        if s is None or s.ended:
            return None
        return s

    def live(self) -> list[Session]:
        return list(self._by_key.values())

    def touch(self, s: Session) -> None:
        s.last_active = self.clock()

    def idle_ones(self) -> list[Session]:
        now = self.clock()
        return [s for s in self._by_key.values() if now - s.last_active >= self.idle]

    def end(self, s: Session) -> None:
        s.ended = True
        self._by_key.pop(s.key, None)


@dataclass(frozen=True)
class Served:
    """Where the console is served: the exact Host values and origins a request may carry."""

    hosts: frozenset[str]
    origins: frozenset[str]
    secure: bool          # behind TLS (a https --public-url): Secure cookie

    @classmethod
    def of(cls, host: str, port: int, public_url: str | None) -> Served:
        """The loopback names of *host*:*port*, or only the public URL's when one is given."""
        if public_url:
            parts = urlsplit(public_url)
            netloc = parts.netloc.lower()
            return cls(frozenset({netloc}), frozenset({f"{parts.scheme}://{netloc}"}),
                       parts.scheme == "https")
        name = host.strip("[]").lower()
        names = {f"[{name}]" if ":" in name else name}
        if is_loopback(host):
            names.add("localhost")
            if name == "localhost":
                names.update(("127.0.0.1", "[::1]"))
        hosts = frozenset(f"{n}:{port}" for n in names)
        return cls(hosts, frozenset(f"http://{h}" for h in hosts), False)

    @property
    def cookie_name(self) -> str:
        return SECURE_COOKIE if self.secure else COOKIE

    @property
    def base_url(self) -> str:
        return sorted(self.origins, key=lambda o: ("localhost" in o, o))[0]


def refusal(status: int, why: str) -> web.Response:
    """A short page (not a blank one) saying why; never echoes what was sent."""
    return web.Response(status=status, text=message_page(why), content_type="text/html",
                        headers=NO_STORE)


NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
            "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY"}


class Gate:
    """The middleware that checks Host, Origin, Sec-Fetch-Site and the session cookie.

    ``check_origin=False`` exists only for the tests' control run, which shows the hijack
    the check prevents; the CLI has no way to turn it off.
    """

    def __init__(self, served: Served, tokens: Tokens, sessions: Sessions, *,
                 check_origin: bool = True, on_redeem: Callable[[], None] | None = None) -> None:
        self.served = served
        self.tokens = tokens
        self.sessions = sessions
        self.check_origin = check_origin
        self.on_redeem = on_redeem
        self.refused = 0      # requests refused (tests read it)

    def session_of(self, request: web.Request) -> Session | None:
        """The live session the request's cookie names (None: no such session)."""
        return self.sessions.find(request.cookies.get(self.served.cookie_name))

    def origin_problem(self, request: web.Request) -> str | None:
        """Why this request's Host, Origin or fetch site is not ours; None when it is."""
        if request.headers.get("Host", "").lower() not in self.served.hosts:
            return "this address is not the one hermes-admin web serves"
        if not self.check_origin:
            return None
        origin = request.headers.get("Origin")
        upgrade = request.headers.get("Upgrade", "").lower() == "websocket"
        if origin is None and (upgrade or request.method not in ("GET", "HEAD")):
            return "a request without an Origin is refused"
        if origin is not None and origin.lower() not in self.served.origins:
            return "a page from another origin may not use this console"
        site = request.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            return "a page from another site may not use this console"
        return None

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        problem = self.origin_problem(request)
        if problem is not None:
            self.refused += 1
            return refusal(403, problem)
        if request.path == "/" and TOKEN_PARAM in request.query:
            return self._redeem(request)
        if self.session_of(request) is None:
            self.refused += 1
            return refusal(403, "no session: open the link hermes-admin web printed "
                                "(each link works once), or ask for a new one")
        response = await handler(request)
        for k, v in NO_STORE.items():
            response.headers.setdefault(k, v)
        return response

    def _redeem(self, request: web.Request) -> web.StreamResponse:
        if self.sessions.full():
            self.refused += 1
            return refusal(403, f"{self.sessions.limit} session(s) already open (--max-sessions)")
        if not self.tokens.redeem(request.query.get(TOKEN_PARAM, "")):
            self.refused += 1
            return refusal(403, "this link has been used or is not valid: each link works once. "
                                "hermes-admin web prints a new one for the next browser")
        cookie, _ = self.sessions.start(request.remote or "—")
        response = web.Response(status=303, headers={**NO_STORE, "Location": "/"})
        response.set_cookie(self.served.cookie_name, cookie, path="/", httponly=True,
                            samesite="Strict", secure=self.served.secure)
        if self.on_redeem is not None:
            self.on_redeem()
        return response
