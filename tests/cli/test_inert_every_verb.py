"""Inert text on every verb: no text from outside starts a line of its own (issue 28).

A home is planted with one generated payload (wide characters, then a line break, ESC,
CR or another separator, then a forged line) in every text field of the store (pool
names, ids, labels, sources, auth types, error reasons and messages, base URLs, model
names), of config.yaml (strategies, the fallback chain, provider routing), of the audit
log, and of a live proxy's and a monitor's status files. Then EVERY verb the parser
knows runs on it (the verbs are enumerated from ``entry.build_parser()``, so a new verb
is covered without touching this file; a positional whose metavar this file does not
know gets the payload itself). For each verb:

- no line of stdout or stderr starts with the forged text (a line break that passed);
- no raw ESC, CR or BEL reaches either stream;
- each stderr line is one of ours (``hermes-admin: ...``) or argparse's usage;
- where a verb's line shape is known, each stdout line starts as that verb means it to
  (``list``: a pool header or ``  #N``, and exactly one line per pool and per row;
  ``audit`` a time; ``history`` a number; ``fallback list`` ``N.``; ``proxy status`` its
  own words).

The negative control switches the escape of ``\\n`` off in the funnel (tui.text.shown)
and sees the same checks fail.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from store.paths import AUDIT_FILE
from store.proxy import STATUS_PREFIX
from tests.cli.inprocess import run_main
from tests.conftest import make_row, make_store
from tui.cli import entry
from tui.text import shown as shown_module

FORGED = "FORGEDLINE"
# Verbs that serve or daemonise (or open the console) are run only in their status form;
# `probe` asks a provider over the network (its printer passes the funnel, see probe.py);
# `web` serves until stopped and has no status form (its output: tests/web/test_web_cli.py).
SKIP = {("demo",), ("fleet", "sync"), ("probe",), ("web",)}
SEPARATORS = ["\n", "\r\n", "\r", "\x1b[2J\n", "\n\x1b]2;t\x07", "\x85", "\u2028", "\n\n  "]
WIDE = list("ab 漢字🔑ｗé-_.")


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...],
                                                                                          argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, sub in subs[0].choices.items():
        yield from _walk(sub, path + (name,))


VERBS = [(p, sp) for p, sp in _walk(entry.build_parser()) if p not in SKIP]


@st.composite
def payloads(draw: st.DrawFn) -> str:
    head = draw(st.text(alphabet=st.sampled_from(WIDE), max_size=6))
    sep = draw(st.sampled_from(SEPARATORS))
    tail = draw(st.text(alphabet=st.sampled_from(WIDE), max_size=4))
    return f"{head}{sep}{FORGED}{tail}"


# --- the planted home --------------------------------------------------------------------------

def plant(root: Path, text: str) -> str:
    """A home with *text* in every text field; returns the hostile pool's name."""
    now = time.time()
    root.mkdir(mode=0o700)
    evil_pool = "evil" + text
    benched = {"last_status": "exhausted", "last_status_at": now - 10, "last_error_code": 429,
               "last_error_reason": "r" + text, "last_error_message": "m" + text,
               "model_cooldowns": {"model" + text: now + 600}}
    doc = make_store({
        "openrouter": [make_row("aaaaaa", label="l" + text, priority=0, source="manual:" + text,
                                base_url="https://x.test/" + text, **benched),
                       make_row("bbbbbb", label="ok" + text, priority=1, auth_type="t" + text)],
        evil_pool: [make_row("c" + text, label="e" + text, priority=0, source=text, **benched)],
    })
    (root / "auth.json").write_text(json.dumps(doc))
    os.chmod(root / "auth.json", 0o600)
    (root / "auth.json.bak").write_text(json.dumps(doc))
    config = {"credential_pool_strategies": {"openrouter": "round_robin", evil_pool: "s" + text},
              "fallback_providers": [{"provider": "p" + text, "model": "m" + text,
                                      "base_url": "http://localhost:1/" + text, "key_env": "K" + text}],
              "provider_routing": {"sort": "price" + text, "only": ["a" + text, "b"]},
              "model": {"default": "d" + text, "provider": "openrouter"}}
    (root / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    audit = [{"time": now - 60, "user": "u" + text, "host": "h" + text, "via": "v" + text, "action": "a" + text,
              "pool": evil_pool, "changes": [{"pool": evil_pool, "id": "i" + text, "label": "l" + text}]}]
    (root / AUDIT_FILE).write_text("".join(json.dumps(e) + "\n" for e in audit))
    route = {"name": "route" + text, "model": "m" + text, "active": True, "usable": 1, "rows": 2,
             "cooling": 1, "dead": 0, "down": text, "paths": ["/v1" + text]}
    status = {"url": "http://127.0.0.1:1/" + text, "pid": os.getpid(), "state": "running" + text,
              "started_at": now - 5, "updated_at": now, "port": 1, "primary": "route" + text,
              "active": "other" + text, "pinned": "route" + text, "chain": [route],
              "upstreams": [{"upstream": "up" + text, "state": "open" + text}],
              "credentials": [{"pool": evil_pool, "id": "i" + text, "label": "l" + text, "in_flight": 0,
                               "requests_per_minute": 1}],
              "pools": {evil_pool: {"requests": [1], "rate_limited": [0]}}}
    (root / f"{STATUS_PREFIX}1.json").write_text(json.dumps(status))
    monitor = {"version": 1, "state": "running", "pid": os.getpid(), "started_at": now, "updated_at": now,
               "path": "p" + text, "metrics": "x" + text,
               "open_alerts": [{"severity": "s" + text, "title": "t" + text, "since": now}],
               "last_deliveries": [{"time": now, "kind": "k" + text, "result": "r" + text,
                                    "target": "t" + text, "attempts": 1, "error": "e" + text}]}
    (root / "hermes-admin-monitor.json").write_text(json.dumps(monitor))
    return evil_pool


# Valid values by metavar, so each verb gets as far as printing what it prints; any other
# required positional (a verb added later) gets the payload itself.
FILLED = {"ACTION", "status", "TARGET"}   # the optional positionals given a value
VALUES = {"TARGET": "1", "N": "1", "M": "2", "ID|N": "1", "STRATEGY": "round_robin", "PROVIDER": "openrouter",
          "KEY": "sort", "VALUE": "latency", "ACTION": "status", "status": "status", "FP": "fl:abcdef",
          "DURATION": "15m"}


def argv_for(path: tuple[str, ...], sub: argparse.ArgumentParser, pool: str, text: str) -> list[str]:
    argv = list(path)
    for action in sub._actions:
        if action.option_strings or (action.nargs == "?" and action.metavar not in FILLED):
            continue   # `list` lists every pool, `strategy` every strategy, `proxy` no ROUTE
        argv.append(pool if action.metavar == "POOL" else VALUES.get(str(action.metavar), "m" + text))
    for action in sub._actions:
        if action.option_strings and action.required:
            argv += [action.option_strings[-1], "sk-or-v1-" + "7" * 40 if "--api-key" in action.option_strings
                     else "m" + text]
    if path in (("cooldown",),):
        argv += ["--for", "15m"]
    if any("--yes" in a.option_strings for a in sub._actions):
        argv.append("--yes")
    if path[:1] == ("fleet",):
        argv += ["--redis", "redis://127.0.0.1:9/0"]
    return argv


# --- what each line may start with -------------------------------------------------------------

TIME = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|—|⚠ bad time) "
LINE_STARTS = {
    ("audit",): re.compile(TIME),
    ("history",): re.compile(r"( *\d+  |no operator action is kept)"),
    ("fallback", "list"): re.compile(r"\d+\. "),
    ("proxy",): re.compile(r"(proxy |chain: |pinned to |  [▶ ] |      serves |upstream |credentials:|  |pool )"),
}
STDERR = re.compile(r"(hermes-admin[: ]|usage: | {2,}\S|\S.*: error: )")


def problems_of(path: tuple[str, ...], out: str, err: str, doc: dict[str, Any] | None) -> list[str]:
    found = []
    for stream, text in (("stdout", out), ("stderr", err)):
        for raw in ("\x1b", "\r", "\x07"):
            if raw in text:
                found.append(f"{' '.join(path)}: raw {raw!r} on {stream}")
        for line in text.splitlines():
            if line.lstrip().startswith(FORGED) or line.lstrip(" #0123456789.[]▶").startswith(FORGED):
                found.append(f"{' '.join(path)}: forged line on {stream}: {line!r}")
    for line in err.splitlines():
        if line and not STDERR.match(line):
            found.append(f"{' '.join(path)}: stderr line not ours: {line!r}")
    shape = LINE_STARTS.get(path)
    if shape is not None:
        found += [f"{' '.join(path)}: line starts wrong: {line!r}" for line in out.splitlines()
                  if line and not shape.match(line)]
    if path == ("list",) and doc is not None:
        found += _list_shape(out, doc["credential_pool"])
    return found


def _list_shape(out: str, pools: dict[str, list[Any]]) -> list[str]:
    """``list``: each pool's header, then exactly one ``  #N`` line per row of that pool."""
    headers = {_shown(p) + " (": len(rows) for p, rows in pools.items()}
    lines, found, i = out.splitlines(), [], 0
    while i < len(lines):
        rows = next((n for head, n in headers.items() if lines[i].startswith(head)), None)
        if rows is None:
            return [f"list: line {i} is no pool's header: {lines[i]!r}"]
        block = lines[i + 1:i + 1 + rows]
        if len(block) != rows or not all(line.startswith("  #") for line in block):
            return [f"list: pool at line {i} wants {rows} row lines: {lines[i:i + 1 + rows + 1]!r}"]
        i += 1 + rows
    return found


def _shown(text: str) -> str:
    return shown_module.shown(text)


def run_every_verb(text: str, hostile_pool_arg: bool) -> list[str]:
    found: list[str] = []
    with tempfile.TemporaryDirectory(prefix="inert-") as tmp:
        root = Path(tmp) / "home"
        evil_pool = plant(root, text)
        pool = evil_pool if hostile_pool_arg else "openrouter"
        for path, sub in VERBS:
            argv = argv_for(path, sub, pool, text)
            doc = json.loads((root / "auth.json").read_text()) if path == ("list",) else None
            code, out, err = run_main(["--home", str(root), "--lock-timeout", "0.5", *argv], b"")
            assert "Traceback" not in err and "internal error" not in err, (argv, err[-600:])
            found += problems_of(path, out, err, doc)
    return found


@pytest.fixture(autouse=True)
def _no_ambient_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "ambient-home-never-used"))
    monkeypatch.delenv("HERMES_ADMIN_DEBUG", raising=False)
    monkeypatch.delenv("HERMES_ADMIN_REDIS", raising=False)


# No shrinking: one example runs every verb, and the failure already names its payload.
@settings(max_examples=int(os.environ.get("HERMES_FUZZ_EXAMPLES", "300")) // 30 + 4, deadline=None,
          suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
@given(text=payloads(), hostile_pool_arg=st.booleans())
def test_no_outside_text_starts_a_line_on_any_verb(text: str, hostile_pool_arg: bool) -> None:
    found = run_every_verb(text, hostile_pool_arg)
    assert not found, "\n".join(found[:20])


def test_every_verb_is_run() -> None:
    names = {" ".join(p) for p, _ in VERBS}
    assert {"list", "add", "remove", "reset", "cooldown", "priority", "audit", "restore-backup", "history",
            "undo", "strategy", "fallback list", "routing show", "inventory", "proxy", "monitor",
            "fleet status"} <= names


def test_the_planted_fields_reach_the_output() -> None:
    """The checks look at real output: the escaped payload shows in what the verbs print."""
    with tempfile.TemporaryDirectory(prefix="inert-") as tmp:
        root = Path(tmp) / "home"
        plant(root, "漢\nFORGEDLINE")
        for argv in (["list"], ["proxy", "status"], ["audit"], ["fallback", "list"], ["monitor", "status"]):
            _, out, _ = run_main(["--home", str(root), *argv], b"")
            assert "漢\\x0aFORGEDLINE" in out, (argv, out)


def test_negative_control_with_the_newline_escape_off_the_checks_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    escape = shown_module.escape_controls

    def newline_passes(text: Any) -> str:
        return "\n".join(escape(part) for part in str(text).split("\n"))

    monkeypatch.setattr(shown_module, "escape_controls", newline_passes)
    found = run_every_verb("漢字\nFORGEDLINE", False)
    assert any("forged line" in f and f.startswith("list") for f in found), found
    assert any(f.startswith("list: ") and ("header" in f or "row lines" in f) for f in found), found
    assert any(f.startswith("proxy") for f in found), found
