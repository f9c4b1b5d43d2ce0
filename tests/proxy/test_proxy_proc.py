"""The installed ``hermes-admin proxy`` as a process: SIGTERM drain, refusing an exposed
bind without client keys, ``proxy status``, and two proxies plus a console writer on one
home losing no request count and no operator edit."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from store.paths import Home
from store.proxy.observing.stats import status_path
from store.transaction import transaction
from tests.conftest import HERMES_ADMIN, cli_env, read_doc
from tests.proxy_helpers import seed, wait_until
from tui.demo.fake_provider import FakeProvider

pytestmark = pytest.mark.slow
MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture
def fake():
    with FakeProvider() as f:
        yield f


@pytest.fixture
def home(tmp_home: Home, fake: FakeProvider) -> Home:
    seed(tmp_home, fake)
    return tmp_home


def start_proxy(home: Home, *extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([str(HERMES_ADMIN), "proxy", "--home", str(home.root), "--port", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(home))
    line = ""
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(20)
    line = box[0] if box else ""
    if "http://" not in line:
        proc.kill()
        raise AssertionError(f"proxy did not start: {line!r} {proc.stderr.read()!r}")
    return proc, line.split()[3]


def stop(proc: subprocess.Popen, timeout: float = 20) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def test_sigterm_drains_the_stream_in_flight_then_flushes(home, fake):
    fake.stream_chunks, fake.stream_interval = 20, 0.1      # a 2 s answer
    proc, url = start_proxy(home, "--drain-timeout", "15")
    got: list[bytes] = []

    def client() -> None:
        with httpx.stream("POST", url + "/chat/completions", timeout=30,
                          json={"model": "m", "messages": MSG, "stream": True}) as r:
            got.extend(r.iter_raw())

    t = threading.Thread(target=client)
    t.start()
    try:
        assert fake.wait_for_request("/chat/completions", 10)
        proc.send_signal(signal.SIGTERM)

        def refused() -> bool:
            try:
                httpx.get(url + "/models", timeout=1)
            except httpx.TransportError:
                return True
            return False

        wait_until(refused, 10, "the listener to close")
        t.join(30)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    body = b"".join(got)
    assert body.count(b"tok") == 20 and body.rstrip().endswith(b"data: [DONE]")
    assert read_doc(home)["credential_pool"]["openrouter"][0]["request_count"] == 1
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    assert json.loads(status_path(home, port).read_text())["state"] == "stopped"


def test_exposed_bind_without_client_keys_refuses_to_start(home, tmp_path):
    r = subprocess.run([str(HERMES_ADMIN), "proxy", "--home", str(home.root), "--host", "127.0.0.2",
                        "--port", "0"], capture_output=True, text=True, env=cli_env(home), timeout=20)
    assert r.returncode == 3
    assert "client-keys file missing" in r.stderr and "hermes-admin-proxy-keys" in r.stderr
    keys = tmp_path / "keys"
    keys.write_text("client-key-proc-00000000001\n")
    keys.chmod(0o640)
    r = subprocess.run([str(HERMES_ADMIN), "proxy", "--home", str(home.root), "--host", "127.0.0.2",
                        "--port", "0", "--client-keys", str(keys)],
                       capture_output=True, text=True, env=cli_env(home), timeout=20)
    assert r.returncode == 3 and "0640" in r.stderr
    assert "client-key-proc" not in r.stderr + r.stdout


def test_proxy_status(home):
    r = subprocess.run([str(HERMES_ADMIN), "proxy", "status", "--home", str(home.root)],
                       capture_output=True, text=True, env=cli_env(home), timeout=20)
    assert r.returncode == 1 and "no proxy has run" in r.stdout
    proc, url = start_proxy(home)
    try:
        httpx.post(url + "/chat/completions", json={"model": "m", "messages": MSG}, timeout=10)
        r = subprocess.run([str(HERMES_ADMIN), "proxy", "status", "--json", "--home", str(home.root)],
                           capture_output=True, text=True, env=cli_env(home), timeout=20)
        assert r.returncode == 0
        data = json.loads(r.stdout)
        assert data["running"] is True and data["proxies"][0]["primary"] == "openrouter"
        r = subprocess.run([str(HERMES_ADMIN), "proxy", "status", "--home", str(home.root)],
                           capture_output=True, text=True, env=cli_env(home), timeout=20)
        assert "chain: on primary openrouter" in r.stdout
    finally:
        assert stop(proc) == 0
    r = subprocess.run([str(HERMES_ADMIN), "proxy", "status", "--home", str(home.root)],
                       capture_output=True, text=True, env=cli_env(home), timeout=20)
    assert r.returncode == 1 and "last status stopped" in r.stdout


def test_two_proxies_and_a_console_lose_nothing(home: Home, fake):
    counts0 = {r["id"]: r["request_count"] for r in read_doc(home)["credential_pool"]["openrouter"]}
    a, url_a = start_proxy(home)
    b, url_b = start_proxy(home)
    per_client, edits = 150, 60
    errors: list[str] = []

    def load(url: str) -> None:
        with httpx.Client(timeout=20) as c:
            for _ in range(per_client):
                r = c.post(url + "/chat/completions", json={"model": "m", "messages": MSG})
                if r.status_code != 200:
                    errors.append(r.text)

    def console() -> None:
        # Operator edits through the same transaction API the console's worker uses.
        for i in range(edits):
            with transaction(home) as doc:
                doc.setdefault("console_edits", 0)
                doc["console_edits"] += 1
                doc["credential_pool"]["openrouter"][2]["label"] = f"edited-{i}"
            time.sleep(0.01)

    threads = [threading.Thread(target=load, args=(u,)) for u in (url_a, url_a, url_b, url_b)]
    threads.append(threading.Thread(target=console))
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        assert stop(a) == 0
        assert stop(b) == 0
    assert not errors
    ports = {int(u.rsplit(":", 1)[1].split("/")[0]) for u in (url_a, url_b)}
    states = {json.loads(status_path(home, port).read_text())["state"] for port in ports}
    assert len(ports) == 2 and states == {"stopped"}     # each proxy kept its own status file
    doc = read_doc(home)
    rows = doc["credential_pool"]["openrouter"]
    served = sum(r["request_count"] - counts0[r["id"]] for r in rows)
    assert served == 4 * per_client
    assert doc["console_edits"] == edits and rows[2]["label"] == f"edited-{edits - 1}"
    assert (Path(home.root) / "auth.json").stat().st_mode & 0o777 == 0o600
