"""The real Hermes 0.19.0 pool code as a test partner process.

    python tests/hermes_partner_main.py <home>                  # JSON lines on stdin/stdout
    python tests/hermes_partner_main.py <home> '<command-json>' # one command, one answer

Run with PYTHONPATH pointing at the unpacked hermes-agent wheel (tests/hermes_real.py
sets up the environment). Every answer is one JSON line: {"result": ...} or
{"error": "...", "traceback": "..."}. A long-lived partner first prints {"ready": true}.
No secret is ever printed: entries are reported without their token fields.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

# Hermes resolves its home at import time in places: set it before any Hermes import.
if len(sys.argv) < 2:
    sys.stderr.write("usage: hermes_partner_main.py <home> [command-json]\n")
    sys.exit(2)
HOME = Path(sys.argv[1]).absolute()
os.environ["HERMES_HOME"] = str(HOME)

# Answers go to the real stdout; anything Hermes prints goes to stderr so it cannot
# corrupt the protocol.
_OUT = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
sys.stdout = sys.stderr

# Python put this script's folder (tests/) first on sys.path; its test folders are named
# like Hermes's own packages (tests/agent, tests/cli), and would shadow them.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from dataclasses import replace  # noqa: E402

import agent.credential_pool as cp  # noqa: E402
import hermes_cli.auth as auth  # noqa: E402

_SECRET_FIELDS = {"access_token", "refresh_token", "agent_key"}
_HELD: dict[str, Any] = {}


def _public(entry: Any) -> dict[str, Any]:
    data = entry.to_dict()
    for f in _SECRET_FIELDS:
        if f in data:
            data[f] = "<set>" if data[f] else data[f]
    return data


def op_select(pool: str) -> dict[str, Any] | None:
    entry = cp.load_pool(pool).select()
    return None if entry is None else {"id": entry.id, "label": entry.label}


def op_mark(pool: str, status_code: int | None, reason: str | None = None, message: str | None = None,
            reset_at: Any = None, api_key_hint: str | None = None) -> dict[str, Any]:
    p = cp.load_pool(pool)
    ctx = {k: v for k, v in (("reason", reason), ("message", message), ("reset_at", reset_at))
           if v is not None}
    before = {e.id: e.last_status_at for e in p.entries()}
    nxt = p.mark_exhausted_and_rotate(status_code=status_code, error_context=ctx,
                                      api_key_hint=api_key_hint)
    # The marked entry is the one whose status time moved.
    marked = [e for e in p.entries() if e.last_status_at is not None and e.last_status_at != before.get(e.id)]
    if not marked:
        raise RuntimeError("mark_exhausted_and_rotate marked no entry")
    entry = marked[0]
    out = _public(entry)
    out["exhausted_until"] = cp._exhausted_until(entry)
    out["next"] = None if nxt is None else nxt.id
    return out


def op_reset_statuses(pool: str) -> int:
    return cp.load_pool(pool).reset_statuses()


def op_exhausted_until(pool: str) -> dict[str, float | None]:
    return {e.id: cp._exhausted_until(e) for e in cp.load_pool(pool).entries()}


def op_entries(pool: str) -> list[dict[str, Any]]:
    return [_public(e) for e in cp.load_pool(pool).entries()]


def op_bump(pool: str, n: int, pause: float = 0.0) -> dict[str, Any]:
    """n request counts, each one locked read-modify-write the way Hermes writes.

    *pause* seconds between bumps (outside the lock) stand for the request itself;
    without them this loop re-takes the lock at once and other writers rarely get in.
    """
    started = time.time()
    first = last = None
    for i in range(int(n)):
        if pause and i:
            time.sleep(float(pause))
        with auth._auth_store_lock():
            p = cp.load_pool(pool)
            entry = p.select()
            if entry is None:
                raise RuntimeError(f"pool {pool} has no available entry to bump")
            current = next(e for e in p.entries() if e.id == entry.id)
            bumped = replace(current, request_count=current.request_count + 1)
            p._replace_entry(current, bumped)
            p._persist()  # write_credential_pool: re-enters the same lock, merges by id
            last = bumped.request_count
            if first is None:
                first = last
    return {"first": first, "last": last, "started": started, "ended": time.time()}


def op_load_ok() -> dict[str, Any]:
    """Load every pool in the file; say whether Hermes silently found it corrupt."""
    path = HOME / "auth.json"
    corrupt_copy = path.with_suffix(".json.corrupt")
    had_corrupt = corrupt_copy.exists()
    try:
        raw = json.loads(path.read_text())
        parse_error = None
    except Exception as exc:  # report, do not raise: the test asserts on it
        raw, parse_error = {}, f"{type(exc).__name__}: {exc}"
    store = auth._load_auth_store()
    disk_pools = raw.get("credential_pool") if isinstance(raw, dict) else None
    disk_pools = disk_pools if isinstance(disk_pools, dict) else {}
    report: dict[str, Any] = {}
    for key, rows in disk_pools.items():
        loaded = cp.load_pool(key)
        report[key] = {"disk": len(rows) if isinstance(rows, list) else None,
                       "loaded": len(loaded.entries())}
    return {
        "pools": report,
        "corrupt": parse_error is not None or (corrupt_copy.exists() and not had_corrupt),
        "hermes_pools": sorted((store.get("credential_pool") or {}).keys()),
        "parse_error": parse_error,
    }


def op_hold(pool: str) -> list[dict[str, Any]]:
    _HELD[pool] = cp.load_pool(pool)
    return [_public(e) for e in _HELD[pool].entries()]


def op_persist_held(pool: str) -> None:
    _HELD[pool]._persist()


class _JudgeAgent:
    """Just what ``recover_with_credential_pool`` asks of an agent: its pool, provider,
    current key, the entitlement check (Hermes's own) and a credential swap (recorded)."""

    def __init__(self, pool: Any, provider: str, entry: Any) -> None:
        import run_agent

        self._credential_pool = pool
        self.provider = provider
        self.api_key = getattr(entry, "runtime_api_key", None)
        self.api_mode = "chat_completions"
        self.base_url = ""
        self.swapped: list[str] = []
        self._is_entitlement_failure = run_agent.AIAgent._is_entitlement_failure

    def _swap_credential(self, entry: Any) -> None:
        self.swapped.append(entry.id)


def _sdk_error(status: int | None, headers: dict[str, str] | None, body: str | None,
               transport: str | None) -> Exception:
    """The exception the OpenAI SDK raises for this outcome (as its client builds it)."""
    import httpx
    import openai

    req = httpx.Request("POST", "https://upstream.invalid/v1/chat/completions")
    if transport == "timeout":
        return openai.APITimeoutError(request=req)
    if transport:
        return openai.APIConnectionError(request=req)
    resp = httpx.Response(int(status or 0), headers=headers or {}, content=(body or "").encode(), request=req)
    text = resp.text.strip()
    try:
        parsed: Any = json.loads(text)
        message = f"Error code: {resp.status_code} - {parsed}"
    except ValueError:
        parsed, message = text or None, text or f"Error code: {resp.status_code}"
    return openai.APIStatusError(message, response=resp, body=parsed)


def op_judge(pool: str, status: int | None = None, headers: dict[str, str] | None = None,
             body: str | None = None, transport: str | None = None) -> dict[str, Any]:
    """Hermes's own judgement of one failed request: ``classify_api_error``, then
    ``recover_with_credential_pool`` on a freshly loaded pool (a 429's same-key retry
    included), and whether any entry was benched (exhausted or dead) by it."""
    try:
        import requests  # noqa: F401  (model_metadata imports it; nothing here calls it)
    except ImportError:
        import types
        sys.modules["requests"] = types.ModuleType("requests")
    from agent.agent_runtime_helpers import extract_api_error_context, recover_with_credential_pool
    from agent.error_classifier import classify_api_error

    error = _sdk_error(status, headers, body, transport)
    classified = classify_api_error(error, provider=pool, model="m")
    p = cp.load_pool(pool)
    entry = p.select()
    before = {e.id: e.last_status for e in p.entries()}
    agent = _JudgeAgent(p, pool, entry)
    context = extract_api_error_context(error)
    retried = False
    calls = 0
    for _ in range(2):      # a first 429 is retried on the same key; the second rotates
        calls += 1
        recovered, now_retried = recover_with_credential_pool(
            agent, status_code=getattr(error, "status_code", None), has_retried_429=retried,
            classified_reason=classified.reason, error_context=context)
        if recovered or not now_retried or retried:
            break
        retried = now_retried
    after = {e.id: e.last_status for e in cp.load_pool(pool).entries()}
    benched = sorted(i for i, s in after.items() if s in ("exhausted", "dead") and s != before.get(i))
    return {"reason": classified.reason.value, "rotate_hint": classified.should_rotate_credential,
            "benched": benched, "swapped": agent.swapped, "calls": calls}


OPS = {name[3:]: fn for name, fn in globals().items() if name.startswith("op_")}


def handle(command: dict[str, Any]) -> dict[str, Any]:
    args = dict(command)
    op = args.pop("op", None)
    fn = OPS.get(op)
    if fn is None:
        return {"error": f"unknown op {op!r} (known: {', '.join(sorted(OPS))})"}
    try:
        return {"result": fn(**args)}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}


def _answer(obj: dict[str, Any]) -> None:
    _OUT.write(json.dumps(obj, default=str) + "\n")
    _OUT.flush()


def main() -> int:
    if len(sys.argv) > 2:
        _answer(handle(json.loads(sys.argv[2])))
        return 0
    _answer({"ready": True, "pid": os.getpid()})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            command = json.loads(line)
        except ValueError as exc:
            _answer({"error": f"bad command line: {exc}"})
            continue
        _answer(handle(command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
