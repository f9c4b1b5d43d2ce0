"""Hostile hour: the operator's keymap file (``~/.config/hermes-admin/keymap.yaml``).

A FIFO there hung the console at start on a blocking open, before the first frame: a blank
terminal deaf to ``q`` (RELIABILITY 22: nothing ever blocks on a special file). Bytes that
are not UTF-8 ended the start in a traceback, and a YAML alias bomb was expanded in full.
Each is now a problem naming the file, shown like any bad keymap entry; the console starts.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from store import safeio
from tui.app.keymap import load_keymap

BOMB = ("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n"
                  for i in range(8)))
BOUND = 20.0


def _load_bounded(path: Path) -> tuple[dict[str, str], list[str]]:
    """load_keymap on a thread, waited on with a bound: a blocking open fails the test."""
    out: list[tuple[dict[str, str], list[str]]] = []
    t = threading.Thread(target=lambda: out.append(load_keymap(path, lambda: {"app.quit"})), daemon=True)
    t.start()
    t.join(BOUND)
    if t.is_alive():
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)   # let the blocked open return, then fail
        os.close(fd)
        t.join(BOUND)
        pytest.fail(f"load_keymap blocked on {path}")
    return out[0]


@pytest.mark.parametrize("kind", ["fifo", "dir", "device", "not-utf8", "bomb"])
def test_a_hostile_keymap_is_a_problem_never_a_hang_or_a_crash(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "keymap.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "not-utf8":
        path.write_bytes(b"app.quit: \xff\xfe\n")
    else:
        path.write_text(BOMB)
    keymap, problems = _load_bounded(path)
    assert keymap == {}
    assert len(problems) == 1 and str(path) in problems[0], problems


def test_an_ordinary_keymap_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "keymap.yaml"
    path.write_text("app.quit: Q\n")
    assert _load_bounded(path) == ({"app.quit": "Q"}, [])
    assert load_keymap(tmp_path / "absent.yaml", set) == ({}, [])


def test_negative_control_a_plain_read_would_open_the_fifo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the checked read swapped for a plain one, the FIFO is opened as a file (here
    non-blocking, or this test would hang): the protection is what refuses it."""
    path = tmp_path / "keymap.yaml"
    os.mkfifo(path)

    def plain(p: Path, cap: int, *a: object, **k: object) -> tuple[bytes, os.stat_result]:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        try:
            return os.read(fd, cap), os.fstat(fd)
        finally:
            os.close(fd)

    monkeypatch.setattr(safeio, "read_checked", plain)
    assert load_keymap(path, lambda: {"app.quit"}) == ({}, [])   # an empty "keymap": no word of the FIFO
