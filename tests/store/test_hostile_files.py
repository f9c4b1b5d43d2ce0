"""RELIABILITY 22 and 23: special files, bombs and giants.

A FIFO, directory or device in place of auth.json, config.yaml, .env or the audit log is
refused at once (exit 3), never opened blocking, and the lock is free afterwards. A YAML
alias bomb, 100,000-deep JSON, non-UTF-8 and files over their size cap are exit 3, never
an internal error. Every wait is bounded by a subprocess timeout (no timed asserts).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path

import pytest
import yaml

from store import authfile, envfile, safeio, yamlguard
from store.config import yamlread
from store.errors import ConfigUnreadable, StoreUnreadable
from store.ops import audit
from store.ops.actions import Outcome
from store.paths import Home
from tests.conftest import make_row, run_cli, write_store

KEY = "sk-or-v1-filesCANARY00000000000000000000000001"
BOMB = ("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n"
                  for i in range(8)))


def _store(home: Home) -> bytes:
    write_store(home, {"version": 1, "providers": {}, "credential_pool": {
        "openrouter": [make_row("aaaaaa", token=KEY)]}})
    return home.auth.read_bytes()


def _special(path: Path, kind: str) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "device":
        path.symlink_to("/dev/zero")   # a symlink to a character device: endless bytes
    elif kind == "dangling-dir-link":
        path.symlink_to(path.parent)


def _lock_is_free(home: Home) -> bool:
    fd = os.open(home.lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


KINDS = ["fifo", "dir", "device"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("verb", [("reset", "openrouter", "aaaaaa"), ("list",),
                                  ("add", "openrouter", "--api-key", "-")])
def test_special_auth_json_is_exit_3_at_once(tmp_home: Home, kind: str, verb: tuple[str, ...]) -> None:
    _store(tmp_home)
    _special(tmp_home.auth, kind)
    # The subprocess timeout bounds the wait: a blocking open on the FIFO would hang here.
    proc = run_cli(tmp_home, *verb, input=KEY[:-1] + "9\n", ok=False, timeout=20)
    assert proc.returncode == 3, proc.stderr
    assert str(tmp_home.auth) in proc.stderr and "not a regular file" in proc.stderr
    assert _lock_is_free(tmp_home)


@pytest.mark.parametrize("kind", KINDS)
def test_special_config_yaml_is_exit_3(tmp_home: Home, kind: str) -> None:
    _store(tmp_home)
    _special(tmp_home.config, kind)
    for verb in (("strategy", "openrouter", "round_robin"), ("fallback", "list")):
        proc = run_cli(tmp_home, *verb, ok=False, timeout=20)
        assert proc.returncode == 3, (verb, proc.stderr)
        assert str(tmp_home.config) in proc.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_special_env_file_is_reported_without_blocking(tmp_home: Home, kind: str) -> None:
    _special(tmp_home.env, kind)
    values, problem = envfile.read_env_report(tmp_home)
    assert values == {} and problem and "not a regular file" in problem


@pytest.mark.parametrize("kind", KINDS)
def test_special_audit_log_is_refused_both_ways(tmp_home: Home, kind: str) -> None:
    _store(tmp_home)
    _special(tmp_home.audit, kind)
    with pytest.raises(StoreUnreadable, match="not a regular file"):
        audit.record(tmp_home, Outcome("reset", "openrouter"), via="test")
    with pytest.raises(StoreUnreadable, match="not a regular file"):
        audit.tail(tmp_home)


def test_negative_control_a_plain_open_of_the_fifo_blocks(tmp_home: Home) -> None:
    """What the check prevents: open() on a FIFO with no writer waits. The thread is
    released by opening the write end, so the test itself never hangs."""
    _special(tmp_home.auth, "fifo")
    opened = threading.Event()

    def reader() -> None:
        with open(tmp_home.auth, "rb"):
            opened.set()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    blocked = not opened.wait(0.3)
    fd = os.open(tmp_home.auth, os.O_WRONLY)   # unblock the reader
    os.close(fd)
    t.join(5)
    assert blocked and opened.is_set()


def test_size_caps_name_the_figure(tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _store(tmp_home)
    with open(tmp_home.auth, "r+b") as fh:      # sparse: no 64 MiB actually written
        fh.truncate(safeio.AUTH_CAP + 1)
    with pytest.raises(StoreUnreadable, match="64 MiB"):
        authfile.read_store(tmp_home)
    tmp_home.auth.write_bytes(raw)
    with open(tmp_home.config, "wb") as fh:
        fh.truncate(safeio.CONFIG_CAP + 1)
    proc = run_cli(tmp_home, "strategy", "openrouter", "round_robin", ok=False)
    assert proc.returncode == 3 and "4 MiB" in proc.stderr
    # Negative control: under the cap the same file is read (and fails only as YAML, if at all).
    monkeypatch.setattr(safeio, "CONFIG_CAP", safeio.CONFIG_CAP + 2)
    assert yamlread.read_bytes(tmp_home.config) is not None


def test_alias_bomb_is_refused_by_both_parsers(tmp_home: Home) -> None:
    _store(tmp_home)
    tmp_home.config.write_text(BOMB)
    for verb in (("strategy", "openrouter", "round_robin"), ("fallback", "list")):
        proc = run_cli(tmp_home, *verb, ok=False, timeout=20)
        assert proc.returncode == 3, (verb, proc.returncode, proc.stderr)
        assert "alias" in proc.stderr
    # `list` keeps showing the store and names the broken config (a read path's warning).
    proc = run_cli(tmp_home, "list", ok=False, timeout=20)
    assert "alias bomb" in proc.stderr and "aaaaaa" in proc.stdout
    with pytest.raises(ConfigUnreadable, match="alias"):
        yamlread.load_tree(BOMB.encode(), tmp_home.config)


def test_negative_control_the_bomb_really_expands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the bound the document parses, and it is 10**9 leaves wide once walked."""
    monkeypatch.setattr(yamlguard, "MAX_EXPANDED_NODES", 10**12)
    yamlguard.check(BOMB, Path("config.yaml"))      # no refusal
    data = yaml.safe_load(BOMB)
    width = 1
    node = data["i"]
    while isinstance(node, list):
        width *= len(node)
        node = node[0]
    assert width == 10**9


def test_ordinary_anchors_and_depth_pass() -> None:
    text = ("base: &b {provider: openrouter, model: m}\n"
            "fallback_providers: [*b, *b, {provider: nous, model: n}]\n")
    yamlguard.check(text, Path("c.yaml"))
    deep = "a:\n" + "".join("  " * i + f"  k{i}:\n" for i in range(yamlguard.MAX_DEPTH - 2)) + "  " * 99 + "  x: 1\n"
    yamlguard.check(deep, Path("c.yaml"))
    too_deep = "[" * (yamlguard.MAX_DEPTH + 1) + "]" * (yamlguard.MAX_DEPTH + 1)
    with pytest.raises(ConfigUnreadable, match="nested deeper"):
        yamlguard.check(too_deep, Path("c.yaml"))


def test_deep_json_is_exit_3_not_recursion_error(tmp_home: Home) -> None:
    raw = _store(tmp_home)
    deep = b'{"credential_pool": {"p": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}}"
    # Negative control: the input really does overflow the plain parser.
    with pytest.raises(RecursionError):
        json.loads(deep)
    tmp_home.auth.write_bytes(deep)
    for verb in (("list",), ("reset", "openrouter", "aaaaaa")):
        proc = run_cli(tmp_home, *verb, ok=False, timeout=20)
        assert proc.returncode == 3 and "nested too deeply" in proc.stderr, proc.stderr
    assert tmp_home.auth.read_bytes() == deep
    tmp_home.auth.write_bytes(raw)


def test_deep_json_in_the_audit_log_is_skipped(tmp_home: Home) -> None:
    _store(tmp_home)
    tmp_home.audit.write_bytes(b"[" * 100_000 + b"\n" + b'[1]\n"x"\n' + b'{"action": "reset"}\n')
    assert audit.tail(tmp_home) == [{"action": "reset"}]
    proc = run_cli(tmp_home, "audit", ok=False)
    assert proc.returncode == 0 and "internal error" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("target", ["auth", "config"])
def test_non_utf8_is_exit_3(tmp_home: Home, target: str) -> None:
    _store(tmp_home)
    path = tmp_home.auth if target == "auth" else tmp_home.config
    path.write_bytes(b'{"credential_pool": {"p\xff": []}}' if target == "auth" else b"x: caf\xe9\n")
    proc = run_cli(tmp_home, "strategy", "openrouter", "round_robin", ok=False) if target == "config" \
        else run_cli(tmp_home, "reset", "openrouter", "aaaaaa", ok=False)
    assert proc.returncode == 3 and "UTF-8" in proc.stderr, proc.stderr
