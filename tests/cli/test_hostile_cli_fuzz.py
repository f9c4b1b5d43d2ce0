"""Hostile CLI input, generated (RELIABILITY 16-23, 28): every verb, every option, odd values.

Argument vectors are generated from the real argparse parser (verbs, sub-verbs, options,
choices), with values drawn from canary keys (bare and as ``--opt=KEY``), control
characters, huge and empty strings, unicode, numbers, NaN, and special paths; the home
is drawn from good and hostile shapes. Invariants, for every example:

- the exit code is 0, 2, 3, 4 or 5 (1 is only a declined confirmation; stdin is not a
  terminal here, so nothing can be declined), and no traceback is printed;
- on a non-zero exit every file under the home is byte-identical (and none appeared);
- no canary appears in stdout or stderr, nor in any file under the home except the store
  (``auth.json`` and its backups) and where it was planted (``config.yaml``, ``.env``).

``HERMES_FUZZ_EXAMPLES`` sets the examples per test (CI default below; ``make fuzz``
runs thousands). Counts per class are printed at the end (``-s``) for the closing note.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.ops import history
from store.paths import Home
from store.redaction import redact
from tests.cli.inprocess import run_main
from tests.conftest import HERMES_ADMIN, cli_env, make_row, make_store
from tui.cli import entry

EXAMPLES = int(os.environ.get("HERMES_FUZZ_EXAMPLES", "300"))

ARG_KEY = f"sk-or-v1-CANARYa{secrets.token_hex(16)}"          # typed on the command line
STORE_KEY = f"sk-or-v1-CANARYs{secrets.token_hex(16)}"        # held by the store
PLAIN_STORE = f"plainCANARYp{secrets.token_hex(12)}"          # a store secret with no key shape
CONFIG_KEY = f"localCANARYc{secrets.token_hex(12)}"           # config.yaml api_key, no key shape
ENV_KEY = f"envCANARYe{secrets.token_hex(12)}"                # .env value a row borrows, no key shape
STDIN_KEY = f"sk-or-v1-CANARYi{secrets.token_hex(16)}"
CANARIES = (ARG_KEY, STORE_KEY, PLAIN_STORE, CONFIG_KEY, ENV_KEY, STDIN_KEY)
PLANTED = {"config.yaml": (CONFIG_KEY,), ".env": (ENV_KEY,)}

# Verbs that serve, daemonise, open the console or talk to providers are not fuzzed
# in-process (they are tested on their own, with fakes).
SKIP = {("demo",), ("proxy",), ("monitor",), ("fleet", "sync"), ("probe",), ("web",)}
# Options that name places to write or read outside the test home: fixed, not drawn.
FIXED = {"--home", "--root", "--secret-file", "--client-keys", "--redis", "--namespace", "-h", "--help"}

COUNTS: collections.Counter[str] = collections.Counter()


def _hostile_row() -> dict[str, Any]:
    row = make_row("bbbbbb", label="evil\x1b]2;PWNED\x07\x1b[2J", priority=1, token=PLAIN_STORE)
    row.update(last_status="exhausted", last_status_at=1.0e9, last_error_code=429,
               last_error_reason=f"echo {STORE_KEY}", last_error_message=f"bad key {STORE_KEY}",
               failure_reason=f"x {STORE_KEY}", base_url=f"https://x.test/{STORE_KEY}",
               last_error_reset_at="NaN", extra_unknown={"note": STORE_KEY})
    return row


def _good_doc() -> dict[str, Any]:
    env_row = make_row("cccccc", label="OPENROUTER_API_KEY", priority=2)
    env_row.update(source="env:OPENROUTER_API_KEY", access_token=ENV_KEY)
    return make_store({"openrouter": [make_row("aaaaaa", label="main", priority=0, token=STORE_KEY),
                                      _hostile_row(), env_row],
                       "anthropic": [make_row("dddddd", label="main", priority=0, token=STORE_KEY + "x")]})


CONFIG = (f"credential_pool_strategies:\n  openrouter: round_robin\nfallback_providers:\n"
          f"  - provider: custom\n    model: m\n    base_url: http://localhost:1/v1\n"
          f"    api_key: {CONFIG_KEY}\n")


def _plant(root: Path, shape: str) -> None:
    """Build a home of *shape* under *root* (the good files first, then the hostility)."""
    if shape == "missing":
        return
    root.mkdir(mode=0o700)
    (root / "config.yaml").write_text(CONFIG)
    (root / ".env").write_text(f"OPENROUTER_API_KEY={ENV_KEY}\n")
    auth = root / "auth.json"
    doc = _good_doc()
    if shape == "pool-list":
        doc["credential_pool"]["openrouter"] = [1, "x"]
    elif shape == "pools-null":
        doc["credential_pool"] = None
    elif shape == "dup-ids":
        doc["credential_pool"]["openrouter"].append(make_row("aaaaaa", label="twin", priority=3))
    if shape == "deep-json":
        auth.write_text("[" * 100_000 + "]" * 100_000)
    elif shape == "garbage":
        auth.write_bytes(b"\xff\xfe\x00garbage" + STORE_KEY.encode())
    elif shape == "fifo":
        os.mkfifo(auth)
    elif shape == "dir":
        auth.mkdir()
    elif shape == "no-store":
        pass
    else:
        auth.write_text(json.dumps(doc))
        os.chmod(auth, 0o600)
    if shape == "audit-garbage":
        (root / "audit.log").write_bytes(b"\x00\xff{\n[[[[\n" + os.urandom(64))
    if shape == "alias-bomb":
        (root / "config.yaml").write_text('a: &a ["x","x","x","x","x","x","x","x","x"]\n'
                                          + "".join(f'{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n'
                                                    for p, c in zip("abcdefgh", "bcdefghi", strict=True)))


SHAPES = ["good", "good", "good", "missing", "no-store", "pool-list", "pools-null", "dup-ids",
          "deep-json", "garbage", "fifo", "dir", "audit-garbage", "alias-bomb"]


# --- argument vectors from the parser ---------------------------------------------------------

Verb = tuple[tuple[str, ...], argparse.ArgumentParser]


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Verb]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, sub in subs[0].choices.items():
        yield from _walk(sub, path + (name,))


PARSER = entry.build_parser()
VERBS = [(p, sp) for p, sp in _walk(PARSER) if not any(p[:len(s)] == s for s in SKIP)]

FIFO_DIR = Path(tempfile.mkdtemp(prefix="fuzz-special-"))
os.mkfifo(FIFO_DIR / "fifo")

VALUE_CLASSES: dict[str, st.SearchStrategy[str]] = {
    "canary-key": st.sampled_from([ARG_KEY, f"  {ARG_KEY}  ", f"Bearer {ARG_KEY}", f"x{ARG_KEY}"[1:]]),
    "control": st.sampled_from(["a\x1bb", "\x1b]2;PWNED\x07", "\x1b[2J", "x\x00y", "l\nnext", "r\rr",
                                "\u202egnp.exe", "zero\u200bwidth", "\x7fdel", "\x9bc1"]),
    "huge": st.sampled_from(["x" * 100_000, "openrouter" * 5000, "9" * 5000]),
    "empty": st.sampled_from(["", " ", "\t", "  \n "]),
    "unicode": st.text(min_size=1, max_size=12),
    "number": st.sampled_from(["0", "-1", "1", "3", "10001", "1e309", "nan", "NaN", "inf", "-inf",
                               "99999999999999999999", "0.5", "1_0", "0x10"]),
    "time": st.sampled_from(["15m", "90s", "2h", "1d", "9999-12-31", "0001-01-01", "18:30", "25:99",
                             "400d", "-5m", "now"]),
    "path": st.sampled_from([str(FIFO_DIR / "fifo"), str(FIFO_DIR), str(FIFO_DIR / "missing"), "/dev/null"]),
    "name": st.sampled_from(["openrouter", "openruoter", "or", "custom:local", "custom:", "anthropic",
                             "main", "aaaaaa", "bbbbbb", "1", "#2", "twin", "round_robin", "fill_first",
                             "random", "least_used", "sort", "price", "only", "a,b", "true"]),
}
CLASS_NAMES = list(VALUE_CLASSES)


@st.composite
def values(draw: st.DrawFn) -> str:
    cls = draw(st.sampled_from(CLASS_NAMES))
    COUNTS[f"value:{cls}"] += 1
    return draw(VALUE_CLASSES[cls])


@st.composite
def argvs(draw: st.DrawFn, verb: Verb) -> list[str]:
    path, sub = verb
    argv = list(path)
    for action in sub._actions:
        if action.option_strings or action.nargs == 0:
            continue
        if action.nargs in ("?", "*") and draw(st.booleans()):
            continue
        argv.append(draw(st.sampled_from(list(action.choices)) if action.choices and draw(st.booleans())
                         else values()))
    options = [a for a in sub._actions if a.option_strings and not set(a.option_strings) & FIXED]
    for action in draw(st.lists(st.sampled_from(options), max_size=4)) if options else []:
        opt = action.option_strings[-1]
        if action.nargs == 0:
            argv.append(opt)
            continue
        value = draw(values())
        if draw(st.booleans()):
            argv.append(f"{opt}={value}")
        else:
            argv += [opt, value]
    if draw(st.integers(0, 9)) == 0:  # a stray token argparse must refuse (and echo)
        argv.append(draw(st.sampled_from([f"--api-key={ARG_KEY}", ARG_KEY, "--bogus", "restore-backup"])))
    return argv


STDINS = st.sampled_from([b"", STDIN_KEY.encode() + b"\n", STDIN_KEY.encode(), (STDIN_KEY + "\nsecond\n").encode(),
                          b"\xff\xfe" + STDIN_KEY.encode(), ("\ufeff" + STDIN_KEY).encode(),
                          (STDIN_KEY[:10] + "\x00" + STDIN_KEY[10:]).encode(),
                          (STDIN_KEY[:10] + "\u200b" + STDIN_KEY[10:]).encode(), b"\x1b[2J\n"])


# --- running ------------------------------------------------------------------------------------

def snapshot(root: Path) -> dict[str, str]:
    """Path -> sha256 (or the kind, for what is not a regular file) of everything under *root*."""
    out: dict[str, str] = {}
    if not root.exists():
        return out
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if rel.endswith(".lock") and p.is_file() and p.stat().st_size == 0:
            continue  # taking a lock creates its file (as Hermes does); it holds no data
        if p.is_symlink() or p.is_dir() or not p.is_file():
            out[rel] = "dir" if p.is_dir() else "special"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def leaks(text: str) -> list[str]:
    found = []
    for c in CANARIES:
        body = c.split("CANARY", 1)[1]
        if c in text or body[:12] in text or body[-12:] in text:
            found.append(c[:14])
    return found


def file_leaks(root: Path) -> list[str]:
    found = []
    if not root.exists():
        return found
    for p in root.rglob("*"):
        if not p.is_file() or p.is_symlink() or p.name.startswith("auth.json"):
            continue  # the store (and its backups and kept-aside copies) holds its keys
        if p.parent.name == history.HISTORY_DIR and p.name.startswith("auth.json."):
            continue  # the operator history's copy of the store, as it was before a write
        text = p.read_bytes().decode("utf-8", "replace")
        # A history copy of config.yaml holds what config.yaml held.
        name = p.name.rsplit(".", 1)[0] if p.parent.name == history.HISTORY_DIR else p.name
        allowed = PLANTED.get(name, ())
        found += [f"{p.name}: {c}" for c in leaks(text) if not any(a.startswith(c) for a in allowed)]
    return found


@pytest.fixture(autouse=True)
def _no_ambient_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "ambient-home-never-used"))
    monkeypatch.delenv("HERMES_ADMIN_DEBUG", raising=False)
    monkeypatch.delenv("HERMES_ADMIN_REDIS", raising=False)


def check_one(argv: list[str], shape: str, stdin: bytes, *, debug: bool = False) -> tuple[int, str, str]:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        root = Path(tmp) / "home"
        _plant(root, shape)
        before = snapshot(root)
        full = ["--home", str(root), "--lock-timeout", "0.5", *argv]
        if argv and argv[0] == "inventory":
            full += ["--root", str(root)]
        if argv and argv[0] == "fleet":
            full = full[:4] + [argv[0], argv[1], "--redis", "redis://127.0.0.1:9/0", *argv[2:]]
        code, out, err = run_main(full, stdin)
        COUNTS[f"shape:{shape}"] += 1
        COUNTS[f"verb:{' '.join(argv[:2]) if argv[:1] == ['fallback'] else argv[0]}"] += 1
        # `fleet` with its server unreachable says "disconnected" and exits 1, by design
        # (the fleet's own contract: a monitoring probe must see it); nothing else may.
        fleet_down = argv[:1] == ["fleet"] and "disconnected" in out + err
        assert code in (0, 2, 3, 4, 5) or (code == 1 and fleet_down), (argv, shape, code, err[-500:])
        assert "Traceback" not in out + err and "internal error" not in err, (argv, shape, err[-800:])
        assert not leaks(out) and not leaks(err), (argv, shape, leaks(out), leaks(err))
        assert not file_leaks(root), (argv, shape, file_leaks(root))
        if code != 0:
            assert snapshot(root) == before, (argv, shape, code, err[-300:])
        return code, out, err


@pytest.mark.parametrize("verb", VERBS, ids=[" ".join(p) for p, _ in VERBS])
def test_random_argument_vectors_on_random_homes(verb: Verb) -> None:
    """Every verb gets its share of the examples (uniform draws starve some verbs)."""

    @settings(max_examples=max(6, EXAMPLES // len(VERBS)), deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(argv=argvs(verb), shape=st.sampled_from(SHAPES), stdin=STDINS)
    def run(argv: list[str], shape: str, stdin: bytes) -> None:
        COUNTS["examples"] += 1
        check_one(argv, shape, stdin)

    run()


@settings(max_examples=max(20, EXAMPLES // 3), deadline=None, suppress_health_check=list(HealthCheck))
@given(stdin=STDINS, label=st.one_of(st.none(), values()), shape=st.sampled_from(SHAPES))
def test_add_from_stdin_takes_one_printable_ascii_line(stdin: bytes, label: str | None, shape: str) -> None:
    COUNTS["examples"] += 1
    argv = ["add", "openrouter", "--api-key", "-"] + (["--label", label] if label is not None else [])
    code, _, err = check_one(argv, shape, stdin)
    body = stdin[:-1] if stdin.endswith(b"\n") else stdin
    clean = body == STDIN_KEY.encode()
    if not clean:
        assert code in (2, 3), (stdin, code, err)


def test_every_verb_is_fuzzed() -> None:
    names = {p[0] for p, _ in VERBS}
    assert {"list", "add", "remove", "reset", "cooldown", "priority", "audit", "restore-backup",
            "strategy", "fallback", "routing", "inventory", "fleet"} <= names


def _case_id(value: object) -> str | None:
    """A parameter's test id with the canaries by name: they are random per run, and
    pytest-xdist's workers must collect the same ids (``make test`` runs with -n 2)."""
    if not isinstance(value, (str, bytes)):
        return None
    text = value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else value
    return re.sub(r"CANARY([a-z])[0-9a-f]+", r"CANARY\1", text)


# Base URLs no agent could send to: each was stored, and failed its route at the first request.
BAD_URLS = ("https://[::1", "https://x.example:99999/v1", "https://x.example:abc/v1", "https://:443/v1")


@pytest.mark.parametrize("argv,stdin,field", [
    (["add", "openrouter", "--api-key", "-"], b"\xff\xfe\xfd\n", "UTF-8"),
    (["add", "openrouter", "--api-key", "-"], (STDIN_KEY + "\nmore\n").encode(), "stdin held 2 lines"),
    (["add", "openrouter", "--api-key", "-"], ("\ufeff" + STDIN_KEY).encode(), "U+FEFF"),
    (["add", "openrouter", "--api-key", "-"], (STDIN_KEY[:9] + "\x1b" + STDIN_KEY[9:]).encode(), "control"),
    (["add", "openrouter", "--api-key", "-", "--label", ARG_KEY], STDIN_KEY.encode(), "--api-key -"),
    (["add", "openruoter", "--api-key", "-"], STDIN_KEY.encode(), "did you mean openrouter"),
    (["strategy", "openroutr", "round_robin"], b"", "did you mean openrouter"),
    (["fallback", "add", "opnerouter", "m"], b"", "did you mean openrouter"),
    (["reset", "openrouter", ""], b"", "TARGET"),
    (["reset", "openrouter", "  "], b"", "TARGET"),
    (["reset", "openrouter"], b"", "refusing to reset the whole pool without --yes"),
    (["restore-backup"], b"", "--yes"),
    (["reset", "openrouter", ARG_KEY], b"", "--api-key -"),
    (["cooldown", "openrouter", "main", "--for", "1h", "--reason", "a\x1b]2;x\x07"], b"", "control"),
    (["cooldown", "openrouter", "main", "--for", "1h", "--reason", ARG_KEY], b"", "--reason"),
    (["cooldown", "openrouter", "main", "--until", "9999-12-31"], b"", "366 days"),
    (["fallback", "add", "openrouter", "m", "--key-env", ARG_KEY], b"", "--key-env"),
    (["fallback", "add", "openrouter", "m", "--base-url", ARG_KEY], b"", "--base-url"),
    (["add", "openrouter", "--api-key", "-", "--base-url", f"https://{ARG_KEY}.x"], STDIN_KEY.encode(), "--base-url"),
    *((["fallback", "add", "openrouter", "m", "--base-url", bad], b"", "--base-url") for bad in BAD_URLS),
    *((["add", "openrouter", "--api-key", "-", "--base-url", bad], STDIN_KEY.encode(), "--base-url")
      for bad in BAD_URLS),
    (["remove", "openrouter", "main"], b"", "#1 id=aaaaaa"),
    (["priority", "openrouter", "1", "10001"], b"", "10000"),
], ids=_case_id)
def test_named_refusals_exit_2_and_say_why(argv: list[str], stdin: bytes, field: str) -> None:
    shape = "dup-label" if argv[:1] == ["remove"] else "good"
    with tempfile.TemporaryDirectory(prefix="named-") as tmp:
        root = Path(tmp) / "home"
        _plant(root, "good")
        if shape == "dup-label":
            doc = json.loads((root / "auth.json").read_text())
            doc["credential_pool"]["openrouter"].append(make_row("eeeeee", label="main", priority=5))
            (root / "auth.json").write_text(json.dumps(doc))
        (root / "auth.json.bak").write_text((root / "auth.json").read_text())
        before = snapshot(root)
        code, out, err = run_main(["--home", str(root), *argv], stdin)
        assert code == 2, (argv, code, err)
        assert field in err, err
        assert not leaks(out + err), err
        assert snapshot(root) == before


def test_only_add_creates_a_missing_home(tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    for argv in (["strategy", "openrouter", "round_robin"], ["fallback", "add", "openrouter", "m"],
                 ["routing", "set", "sort", "price"], ["cooldown", "openrouter", "1", "--for", "1h"],
                 ["reset", "openrouter", "1"], ["audit"]):
        code, _, err = run_main(["--home", str(typo), *argv], b"")
        assert code in (2, 3) and str(typo) in err, (argv, code, err)
        assert not typo.exists(), argv
    code, _, err = run_main(["--home", str(typo), "add", "openrouter", "--api-key", "-"], STDIN_KEY.encode())
    assert code == 0, err
    assert typo.is_dir()


def test_ordinary_words_pass_and_keys_do_not_in_argparse_messages() -> None:
    code, out, err = run_main(["nosuchverb", f"--api-key={ARG_KEY}"], b"")
    assert code == 2
    assert "restore-backup" in err  # the choices list prints as it is
    assert not leaks(err)
    code, out, err = run_main(["list", f"--api-key={ARG_KEY}"], b"")
    assert code == 2 and "unrecognized arguments" in err and not leaks(err)


def test_debug_traceback_passes_the_boundary(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = tmp_path / "home"
    _plant(root, "good")
    monkeypatch.setenv("HERMES_ADMIN_DEBUG", "1")

    def boom(*_a: Any, **_k: Any) -> None:
        raise RuntimeError(f"provider said {STORE_KEY} and {CONFIG_KEY} and {ENV_KEY}")

    monkeypatch.setattr("tui.cli.store_verbs.view.build_pools", boom)
    code, out, err = run_main(["--home", str(root), "list"], b"")
    assert code == 1 and "Traceback" in err and "RuntimeError" in err
    assert not leaks(out + err), leaks(err)


def test_negative_control_without_the_boundary_the_canaries_show(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """Switch the redactor to identity: the same checks must see canaries."""
    monkeypatch.setattr(redact.Redactor, "redact", lambda self, text: str(text))
    monkeypatch.setenv("HERMES_ADMIN_DEBUG", "1")
    root = tmp_path / "home"
    _plant(root, "good")
    seen = []
    for argv in (["list", f"--api-key={ARG_KEY}"], ["reset", "openrouter", ARG_KEY + "-nope"]):
        _, out, err = run_main(["--home", str(root), *argv], b"")
        seen += leaks(out + err)

    def boom(*_a: Any, **_k: Any) -> None:
        raise RuntimeError(f"provider said {CONFIG_KEY} {ENV_KEY}")

    monkeypatch.setattr("tui.cli.store_verbs.view.build_pools", boom)
    _, out, err = run_main(["--home", str(root), "list"], b"")
    seen += leaks(out + err)
    assert ARG_KEY[:14] in seen and CONFIG_KEY[:14] in seen and ENV_KEY[:14] in seen, seen


def test_controls_in_the_store_print_escaped(tmp_path: Path) -> None:
    root = tmp_path / "home"
    _plant(root, "good")
    for argv in (["list"], ["inventory", "--root", str(tmp_path)]):
        code, out, err = run_main(["--home", str(root), *argv], b"")
        assert "\x1b" not in out + err and "\x07" not in out + err, argv
    code, out, _ = run_main(["--home", str(root), "list"], b"")
    assert "evil\\x1b]2;PWNED\\x07\\x1b[2J" in out
    assert "data error" in out and "'NaN'" in out


@pytest.mark.parametrize("argv,stdin", [
    (["list", f"--api-key={ARG_KEY}"], ""),
    (["add", "openrouter", "--api-key", "-", "--label", ARG_KEY], STDIN_KEY + "\n"),
    (["list"], ""),
    (["nosuchverb"], ""),
], ids=_case_id)
def test_real_process_streams_are_wrapped(tmp_path: Path, argv: list[str], stdin: str) -> None:
    root = tmp_path / "home"
    _plant(root, "good")
    proc = subprocess.run([str(HERMES_ADMIN), "--home", str(root), *argv], input=stdin, capture_output=True,
                          text=True, env=cli_env(Home(root)), timeout=60)
    assert proc.returncode in (0, 2), proc.stderr
    assert not leaks(proc.stdout + proc.stderr)
    assert "\x1b" not in proc.stdout + proc.stderr
    if argv == ["nosuchverb"]:
        assert "restore-backup" in proc.stderr


def teardown_module() -> None:
    shutil.rmtree(FIFO_DIR, ignore_errors=True)
    if COUNTS:
        print("\nhostile CLI cases tried, per class:")
        for k, v in sorted(COUNTS.items()):
            print(f"  {k}: {v}")
