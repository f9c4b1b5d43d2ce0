"""Hostile hour: the fleet secret file and the proxy's client-keys file are read bounded.

Both were read whole (``read_bytes``/``read_text``): a multi-gigabyte file given by mistake
(a disk image, a log) was read into memory before anything was checked. They are now read
through :func:`store.safeio.read_checked` with a cap; a larger file is exit 3 naming it, and
nothing starts (no daemon, no listener).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import safeio
from store.errors import HermesAdminError, StoreUnreadable
from store.fleet import keys as fleet_keys
from store.paths import Home
from store.proxy.edge import inbound
from tests.conftest import make_row, run_cli, write_store

SECRET = b"fleet-secret-for-tests-0000000001"


def _file(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def test_an_oversize_fleet_secret_is_refused_naming_it(tmp_path: Path) -> None:
    big = _file(tmp_path / "secret", SECRET + b"\n" * fleet_keys.SECRET_CAP)
    with pytest.raises(StoreUnreadable, match="cap") as got:
        fleet_keys.load_secret(big, environ={})
    assert got.value.path == big
    ok = _file(tmp_path / "ok", SECRET + b"\n")
    assert fleet_keys.load_secret(ok, environ={}) == SECRET


def test_an_oversize_client_keys_file_is_refused_naming_it(tmp_path: Path) -> None:
    big = _file(tmp_path / "keys", b"client-key-0000000000001\n" * (inbound.CLIENT_KEYS_CAP // 25 + 1))
    with pytest.raises(inbound.InboundAuthError, match="cap") as got:
        inbound.load_client_keys(big)
    assert str(big) in str(got.value)
    ok = _file(tmp_path / "ok", b"# one\nclient-key-0000000000001\n")
    assert inbound.load_client_keys(ok) == [b"client-key-0000000000001"]


def test_negative_control_an_unbounded_read_takes_the_big_file(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """With the cap lifted the same oversize files are read whole: the cap is what refuses them."""
    monkeypatch.setattr(fleet_keys, "SECRET_CAP", 1 << 40)
    monkeypatch.setattr(inbound, "CLIENT_KEYS_CAP", 1 << 40)
    big = _file(tmp_path / "secret", SECRET + b"\n" * (64 * 1024))
    assert fleet_keys.load_secret(big, environ={}) == SECRET
    keys = _file(tmp_path / "keys", b"client-key-0000000000001\n" * (1024 * 1024 // 25 + 1))
    assert inbound.load_client_keys(keys)[0] == b"client-key-0000000000001"


def test_cli_refuses_to_start_on_oversize_files(tmp_home: Home, tmp_path: Path) -> None:
    write_store(tmp_home, {"version": 1, "providers": {}, "credential_pool": {"openrouter": [make_row("aaaaaa")]}})
    secret = _file(tmp_path / "secret", SECRET + b"\n" * fleet_keys.SECRET_CAP)
    proc = run_cli(tmp_home, "fleet", "sync", "--redis", "redis://127.0.0.1:1/0", "--secret-file", str(secret),
                   ok=False, timeout=20)
    assert proc.returncode == 3 and str(secret) in proc.stderr and "cap" in proc.stderr, proc.stderr
    keys = _file(tmp_path / "keys", b"k" * (inbound.CLIENT_KEYS_CAP + 1))
    proc = run_cli(tmp_home, "proxy", "--host", "127.0.0.2", "--port", "0", "--pool", "openrouter",
                   "--client-keys", str(keys),
                   ok=False, timeout=20)
    assert proc.returncode == 3 and str(keys) in proc.stderr and "cap" in proc.stderr, proc.stderr
    assert "kkkk" not in proc.stderr + proc.stdout


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=256))
def test_hostile_contents_are_a_value_or_a_named_error(tmp_path: Path, data: bytes) -> None:
    """Any bytes: a secret/keys or a clear error naming the file, never a crash or a secret echoed."""
    path = _file(tmp_path / "f", data)
    for load in (lambda: fleet_keys.load_secret(path, environ={}), lambda: inbound.load_client_keys(path)):
        try:
            got = load()
        except HermesAdminError as exc:
            assert str(path) in str(exc) or "--secret-file" in str(exc)
        else:
            assert got


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    import os
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(StoreUnreadable):
        fleet_keys.load_secret(fifo, environ={})
    with pytest.raises(inbound.InboundAuthError, match="regular file"):
        inbound.load_client_keys(fifo)
    assert safeio.kind(os.stat(fifo).st_mode).startswith("a FIFO")
