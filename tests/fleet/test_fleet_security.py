"""What the fleet never lets out: keys, key-derived plain hashes, the fleet secret, the
Redis password; and the secret file must be 0600.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time

import pytest
import redis

from store.errors import BadInput, StoreUnreadable
from store.fleet.keys import load_secret, safe_url, scrub
from store.pools import policy
from store.transaction import transaction
from tests.conftest import HERMES_ADMIN, make_row
from tests.fleet_helpers import (
    BOUND,
    POOL,
    SECRET,
    Daemon,
    RedisServer,
    dump_redis,
    env_without_secrets,
    leaks,
    make_home,
    row,
)
from tests.hermes_real import wait_for

pytestmark = pytest.mark.slow

CANARY = "sk-or-v1-CANARYcanary0123456789ZZZZqq99"
PASSWORD = "pw-CANARY-hunter2-0123456789"


@pytest.fixture
def server(tmp_path):
    d = tmp_path / "redis"
    d.mkdir()
    srv = RedisServer(d, password=PASSWORD)
    yield srv
    srv.stop()


def test_redis_holds_no_key_no_secret_and_no_plain_hash(tmp_path, server):
    rows = [make_row("aaaaaa", label="canary", priority=0, token=CANARY)]
    a, b = make_home(tmp_path, "a", rows), make_home(tmp_path, "b", [dict(r) for r in rows])
    da, db = Daemon(a, server.url, "host-a"), Daemon(b, server.url, "host-b")
    try:
        # The provider echoes the key in its error message; a reason carries it too.
        with transaction(a) as doc:
            rws = doc["credential_pool"][POOL]
            policy.mark_exhausted(rws, rws[0], time.time(), code=429, reason=f"limit for {CANARY}",
                                  message=f"Rate limit for key {CANARY}", reset_at=time.time() + 600)
        assert wait_for(lambda: row(b)["last_status"] == "exhausted", timeout=BOUND)
    finally:
        da.close()
        db.close()
    r = redis.Redis.from_url(server.url, decode_responses=True)
    text = dump_redis(r)
    assert "host-a" in text and "429" in text                 # the scan does see the data
    assert leaks(text, [CANARY, SECRET.decode()]) == []
    # Negative control: a plain sha256 of the key stored by a careless writer is caught.
    r.set("careless", hashlib.sha256(CANARY.encode()).hexdigest())
    assert leaks(dump_redis(r), [CANARY]) == ["sha256 of it", "sha256 prefix of it"]


def _cli(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = env_without_secrets()
    env.update(env_extra or {})
    return subprocess.run([str(HERMES_ADMIN), *args], capture_output=True, text=True, timeout=60, env=env)


def test_the_url_password_is_never_printed(tmp_path, server):
    url = server.url
    assert PASSWORD in url                                    # what a naive print would leak
    ok = _cli("fleet", "status", "--redis", url)
    assert ok.returncode == 0 and "connected to redis://:***@127.0.0.1" in ok.stdout  # auth worked
    js = _cli("fleet", "status", "--json", "--redis", url)
    bad = _cli("fleet", "status", "--redis", url.replace(PASSWORD, PASSWORD + "x"))
    assert bad.returncode == 1 and "disconnected" in bad.stdout
    malformed = _cli("fleet", "status", "--redis", f"redis://:{PASSWORD}@127.0.0.1:notaport/0")
    assert malformed.returncode != 0
    home = make_home(tmp_path, "a")
    proc = subprocess.Popen([str(HERMES_ADMIN), "fleet", "sync", "--home", str(home.root), "--redis", url,
                             "--name", "host-a", "--interval", "0.5"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**env_without_secrets(), "HERMES_ADMIN_FLEET_SECRET": SECRET.decode()})
    try:
        state_file = home.root / "fleet-sync.json"
        assert wait_for(lambda: state_file.exists() and '"connected": true' in state_file.read_text(), timeout=BOUND)
        server.kill()                                          # log lines about the partition
        assert wait_for(lambda: '"connected": false' in state_file.read_text(), timeout=BOUND)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=BOUND)
    state = (home.root / "fleet-sync.json").read_text()
    for text in (ok.stdout, ok.stderr, js.stdout, js.stderr, bad.stdout, bad.stderr, malformed.stdout,
                 malformed.stderr, out, err, state):
        assert PASSWORD not in text
    assert "disconnected" in err and "***" in err


def test_safe_url_and_scrub():
    url = f"rediss://fleet:{PASSWORD}@redis.example:6380/2?ssl_cert_reqs=required"
    assert safe_url(url) == "rediss://fleet:***@redis.example:6380/2?ssl_cert_reqs=required"
    assert PASSWORD not in scrub(f"error talking to {url}: AUTH {PASSWORD} failed", url)
    assert safe_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_secret_file_must_be_0600(tmp_path):
    path = tmp_path / "fleet.secret"
    path.write_bytes(SECRET + b"\n")
    os.chmod(path, 0o644)
    with pytest.raises(StoreUnreadable, match="must be 0600"):
        load_secret(path, environ={})
    os.chmod(path, 0o600)
    assert load_secret(path, environ={}) == SECRET
    with pytest.raises(BadInput, match="no fleet secret"):
        load_secret(None, environ={})
    with pytest.raises(BadInput, match="at least 16 bytes"):
        load_secret(None, environ={"HERMES_ADMIN_FLEET_SECRET": "short"})
    assert load_secret(None, environ={"HERMES_ADMIN_FLEET_SECRET": SECRET.decode()}) == SECRET


def test_cli_refuses_a_world_readable_secret_file_and_a_missing_secret(tmp_path):
    home = make_home(tmp_path, "a")
    path = tmp_path / "fleet.secret"
    path.write_bytes(SECRET)
    os.chmod(path, 0o640)
    before = home.auth.read_bytes()
    out = _cli("fleet", "sync", "--home", str(home.root), "--redis", "redis://127.0.0.1:1/0",
               "--secret-file", str(path))
    assert out.returncode == 3 and "mode 0640" in out.stderr and "chmod 600" in out.stderr
    out = _cli("fleet", "sync", "--home", str(home.root), "--redis", "redis://127.0.0.1:1/0")
    assert out.returncode == 2 and "HERMES_ADMIN_FLEET_SECRET" in out.stderr
    assert home.auth.read_bytes() == before and SECRET.decode() not in out.stderr
