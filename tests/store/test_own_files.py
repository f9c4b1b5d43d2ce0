"""hermes-admin's own files (status, fleet state, audit) are written without following a
link (RELIABILITY 40): the shared writer's no-follow mode, with auth.json's follow mode as
the negative control."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from store.authfile import atomic_write_bytes
from store.errors import WriteFailed


def test_a_symlink_in_place_of_an_own_file_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "auth.json"
    target.write_bytes(b'{"keys": "all of them"}')
    link = tmp_path / "hermes-admin-proxy-8645.json"
    link.symlink_to(target)
    with pytest.raises(WriteFailed, match="symlink"):
        atomic_write_bytes(link, b"{}", follow_link=False)
    assert target.read_bytes() == b'{"keys": "all of them"}'
    assert link.is_symlink()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    # Negative control: auth.json's mode follows the link and replaces the target.
    atomic_write_bytes(link, b"{}", follow_link=True)
    assert target.read_bytes() == b"{}"


@pytest.mark.parametrize("kind", ["fifo", "dir"])
def test_a_special_file_in_place_of_an_own_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "hermes-admin-fleet.json"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    with pytest.raises(WriteFailed, match="not a regular file"):
        atomic_write_bytes(path, b"{}", follow_link=False)


def test_a_regular_own_file_is_replaced_0600(tmp_path: Path) -> None:
    path = tmp_path / "hermes-admin-fleet.json"
    path.write_bytes(b"old")
    atomic_write_bytes(path, b"new", follow_link=False, sync=False)
    assert path.read_bytes() == b"new"
    assert path.stat().st_mode & 0o777 == 0o600
