"""``proxy restore`` / ``proxy pin ROUTE`` / ``proxy unpin``: commands to a running proxy, by file.

The path never touches the network: the one asking (the CLI, the console's proxy panel)
writes a small JSON request beside the proxy's status file,
``<home>/hermes-admin-proxy-<port>.control-<id>`` (atomically, mode 0600, never through a
link), and the proxy, which looks for its own requests once a second, takes each one: it
opens it without following a link, refuses anything that is not a small regular file of
this user with no group or other permission bits (a planted link or someone else's file
does nothing), removes it, applies it on its event loop (:func:`apply`) and writes the answer
into its status file (``control``: the last answers, by request id). The asker waits for its
id there (bounded), then records the action through the audit log, as every operator action
is recorded (:func:`ask`).

Only a user who can write the home (0700) can steer the proxy, the same user who can write
``auth.json``. Nothing on the proxy's HTTP port (loopback or exposed) answers a control
request: the served paths and ``/metrics`` are all there is.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import stat
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store.agent.outcomes import Notice
from store.authfile import atomic_write_bytes
from store.errors import BadInput, HermesAdminError
from store.ops import audit
from store.ops.actions import Outcome
from store.paths import Home
from store.proxy import STATUS_PREFIX
from store.proxy.observing.report import describe
from store.proxy.observing.stats import is_live, read_statuses
from store.proxy.offloop import run_blocking
from store.proxy.routing.chain import Chain
from store.proxy.routing.steering import CONTROL_RESTORE
from store.proxy.routing.upstreams import route_name

COMMANDS = ("restore", "pin", "unpin")
REQUEST_CAP = 4096
MAX_PER_TICK = 16
ANSWERS_KEPT = 16
ANSWER_WAIT = 10.0         # the proxy looks once a second and writes its status right after
log = logging.getLogger("hermes_admin.proxy")     # the proxy's log: its redacting filter applies
_NAME = re.compile(rf"^{re.escape(STATUS_PREFIX)}(\d{{1,5}})\.control-([0-9a-f]{{16}})$")


class NoProxy(HermesAdminError):
    """No proxy runs on the home (or none on the port asked for): exit 1."""

    exit_code = 1


@dataclass
class Request:
    """One command as the proxy read it."""

    id: str
    command: str
    route: str | None = None
    via: str = "cli"


@dataclass
class Answer:
    """What the proxy did with a request (or why it did nothing)."""

    id: str
    ok: bool
    message: str
    command: str = ""
    route: str | None = None
    active: str | None = None
    pinned: str | None = None
    at: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "ok": self.ok, "message": self.message, "command": self.command,
                "route": self.route, "active": self.active, "pinned": self.pinned, "at": self.at}


def request_path(home: Home, port: int, rid: str) -> Path:
    return home.root / f"{STATUS_PREFIX}{port}.control-{rid}"


# -- the proxy's side -------------------------------------------------------------------------

def _read_own(path: Path) -> bytes:
    """The bytes of a request file that is ours; ValueError saying why it is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ValueError("a link or unreadable" if exc.errno in (40, 31) else exc.strerror or "unreadable") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_uid != os.geteuid():
            raise ValueError(f"owned by uid {st.st_uid}, not this user")
        if st.st_mode & 0o077:
            raise ValueError(f"mode {stat.S_IMODE(st.st_mode):04o}: group or others may use it")
        if st.st_size > REQUEST_CAP:
            raise ValueError(f"over {REQUEST_CAP} bytes")
        return os.read(fd, REQUEST_CAP + 1)
    finally:
        os.close(fd)


def parse(rid: str, raw: bytes) -> Request:
    """A request's checked fields; ValueError naming what is wrong."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise ValueError("not JSON") from None
    if not isinstance(data, dict) or data.get("id") != rid:
        raise ValueError("not a control request of this name")
    command, route, via = data.get("command"), data.get("route"), data.get("via", "cli")
    if command not in COMMANDS:
        raise ValueError(f"unknown command (one of {', '.join(COMMANDS)})")
    if route is not None and not (isinstance(route, str) and 0 < len(route) <= 200 and route.isprintable()):
        raise ValueError("a route is a short line of text")
    if (command == "pin") != (route is not None):
        raise ValueError("pin takes a route; restore and unpin take none")
    if via not in ("cli", "console"):
        raise ValueError("via is cli or console")
    return Request(rid, command, route, via)


def take_requests(home: Home, port: int) -> list[Request | Answer]:
    """This proxy's waiting requests, oldest first, each removed as it is taken; a refused one
    is an :class:`Answer` that says why (blocking: run off the event loop)."""
    try:
        names = [e for e in os.scandir(home.root) if e.name.startswith(STATUS_PREFIX) and ".control-" in e.name]
    except OSError:
        return []
    mine = []
    for entry in names:
        m = _NAME.match(entry.name)
        if m is None or int(m.group(1)) != port:
            continue
        try:
            when = entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        mine.append((when, m.group(2), Path(entry.path)))
    out: list[Request | Answer] = []
    for _when, rid, path in sorted(mine)[:MAX_PER_TICK]:
        try:
            raw = _read_own(path)
            got: Request | Answer = parse(rid, raw)
        except ValueError as exc:
            got = Answer(rid, False, f"request refused: {exc}", at=time.time())
        try:
            os.unlink(path)       # a link is removed, never what it points at
        except OSError:
            pass
        out.append(got)
    return out


def apply(chain: Chain, req: Request, now: float) -> Answer:
    """Carry out *req* on the chain (event loop): what it did, in words, for the asker."""
    rt, steer = chain.runtime, chain.steer
    names = [route_name(r.name) for r in chain.routes]
    was = names[rt.active]

    def done(ok: bool, message: str) -> Answer:
        return Answer(req.id, ok, message, req.command, req.route, names[rt.active], steer.pin, now)

    if req.command == "unpin":
        if steer.pin is None:
            return done(True, "not pinned; nothing changed")
        pinned, steer.pin = steer.pin, None
        rt.notices.append(Notice(now, "unpinned", f"operator unpinned {pinned} (proxy unpin)"))
        return done(True, f"unpinned from {pinned}; on {was}, the restore check resumes")
    if req.command == "pin":
        index = next((i for i, r in enumerate(chain.routes) if req.route in (names[i], r.pool)), None)
        if index is None:
            return done(False, f"{req.route!r} is no route of this proxy (its chain: {' -> '.join(names)})")
        steer.pin, steer.wanted = names[index], None
        if rt.active != index:
            rt.active = index
            chain.fallback_since = now if index else None
        rt.notices.append(Notice(now, "pinned", f"operator pinned {names[index]} (proxy pin)"))
        where = "no move back up the chain and no restore check" if index else "no fallback kept"
        return done(True, f"pinned to {names[index]} (was on {was}): {where} until proxy unpin")
    steer.pin, steer.wanted = None, None
    usable = describe(chain)[0]["usable"]
    note = "" if usable else f"; {names[0]} has no usable credential now, so the next request falls back again"
    if rt.active == 0:
        return done(True, f"on primary {names[0]} already{note}")
    rt.active = 0
    chain.fallback_since = None
    rt.notices.append(Notice(now, CONTROL_RESTORE, f"operator asked (proxy restore): back on primary {names[0]}"))
    return done(True, f"back on primary {names[0]} (was on {was}){note}")


async def take(home: Home, port: int, chain: Chain, clock: Callable[[], float]) -> list[Answer]:
    """This proxy's waiting requests, read off the loop and applied on it; their answers (logged)."""
    out = []
    for got in await run_blocking(take_requests, home, port):
        a = got if isinstance(got, Answer) else apply(chain, got, clock())
        log.info("control %s %s%s (%s): %s", a.id, a.command, f" {a.route}" if a.route else "",
                 "done" if a.ok else "refused", a.message)
        out.append(a)
    return out


class Answers:
    """The proxy's last answers, for its status file."""

    def __init__(self) -> None:
        self.kept: deque[Answer] = deque(maxlen=ANSWERS_KEPT)

    def extend(self, answers: list[Answer]) -> None:
        self.kept.extend(answers)

    def snapshot(self) -> list[dict[str, Any]]:
        return [a.as_dict() for a in self.kept]


# -- the asker's side -------------------------------------------------------------------------

def live_proxies(home: Home, now: float | None = None) -> list[dict[str, Any]]:
    """The status of every proxy running on *home*, newest first."""
    now = time.time() if now is None else now
    return [st for st in read_statuses(home) if is_live(st, now)]


def choose(home: Home, port: int | None) -> dict[str, Any]:
    """The status of the proxy to steer: the one on *port*, or the only one running."""
    live = live_proxies(home)
    if not live:
        raise NoProxy(f"no proxy is running on {home.root} (start one: hermes-admin --home {home.root} proxy)")
    ports = sorted(int(st["port"]) for st in live if isinstance(st.get("port"), int))
    if port is not None:
        for st in live:
            if st.get("port") == port:
                return st
        raise BadInput("--port", f"no proxy listens on port {port} of this home (running: "
                       f"{', '.join(f':{p}' for p in ports)})")
    if len(live) > 1:
        raise BadInput("--port", f"{len(live)} proxies run on this home ({', '.join(f':{p}' for p in ports)}); "
                       "say which with --port")
    return live[0]


def route_names(st: dict[str, Any]) -> list[str]:
    return [r["name"] for r in st.get("chain") or [] if isinstance(r, dict) and isinstance(r.get("name"), str)]


def resolve_route(st: dict[str, Any], route: str) -> str:
    """*route* as the chain names it (by name or by pool); BadInput listing the chain."""
    chain = [r for r in st.get("chain") or [] if isinstance(r, dict)]
    for key in ("name", "pool"):
        hits = [r["name"] for r in chain if r.get(key) == route]
        if len(hits) == 1:
            return str(hits[0])
    names = route_names(st)
    raise BadInput("ROUTE", f"{route!r} is no route of the proxy on :{st.get('port')} (its chain: "
                   f"{' -> '.join(names) or 'none'})")


def send(home: Home, port: int, command: str, route: str | None, via: str, *,
         wait: float = ANSWER_WAIT, sleep: Callable[[float], None] = time.sleep) -> Answer:
    """Write a request for the proxy on *port*, wait (bounded) for its answer in the status file."""
    rid = secrets.token_hex(8)
    path = request_path(home, port, rid)
    body = {"id": rid, "command": command, "route": route, "via": via, "at": time.time()}
    atomic_write_bytes(path, json.dumps(body).encode(), sync=False, mode=0o600, follow_link=False)
    deadline = time.monotonic() + wait
    while True:
        for st in read_statuses(home):
            if st.get("port") != port:
                continue
            for a in st.get("control") or []:
                if isinstance(a, dict) and a.get("id") == rid:
                    return Answer(rid, a.get("ok") is True, str(a.get("message") or ""), command, route,
                                  a.get("active") if isinstance(a.get("active"), str) else None,
                                  a.get("pinned") if isinstance(a.get("pinned"), str) else None,
                                  float(a["at"]) if isinstance(a.get("at"), (int, float)) else 0.0)
        if time.monotonic() >= deadline:
            break
        sleep(0.05)
    try:
        os.unlink(path)
        taken = False
    except FileNotFoundError:
        taken = True
    raise NoProxy(f"the proxy on :{port} did not answer within {wait:g} s; "
                  + ("it took the request and may still act on it" if taken else "nothing was changed"))


def ask(home: Home, port: int, command: str, route: str | None, via: str, **kw: Any) -> Answer:
    """:func:`send`, then the audit line for what the proxy did (an operator action)."""
    answer = send(home, port, command, route, via, **kw)
    if answer.ok:
        try:
            audit.record(home, Outcome(action=f"proxy-{command}", pool=route or "", notes=[answer.message]),
                         via=via, extra={"proxy_port": port, "active": answer.active, "pinned": answer.pinned})
        except (HermesAdminError, OSError) as exc:
            answer.message += f" (warning: not recorded in the audit log: {exc})"
    return answer
