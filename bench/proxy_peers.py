"""The other proxies ``bench/bench_proxy.py`` measures hermes-admin against: nginx (one worker,
``proxy_pass`` with upstream keep-alive, no buffering: the physical limit of a proxy here) and
LiteLLM's proxy, each installed on first use (``apt-get install nginx-light`` as root;
``pip install 'litellm[proxy]'`` into ``.cache/litellm-venv``); when either cannot be
installed or does not start, None, and the bench says so and reports the others. Also the
small process helpers the proxy benchmarks share (bounded readiness polling, a free port).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
LITELLM_VENV = ROOT / ".cache" / "litellm-venv"
# LiteLLM refuses to start without a master key; clients then present it as their bearer.
LITELLM_MASTER = "sk-litellm-bench-master-" + "0" * 32


NGINX_CONF = """\
daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log error;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 1000000;     # not the default 1000: the load generator keeps one connection
    client_body_temp_path {tmp}/nginx-body;
    proxy_temp_path {tmp}/nginx-proxy;
    fastcgi_temp_path {tmp}/nginx-fastcgi;
    uwsgi_temp_path {tmp}/nginx-uwsgi;
    scgi_temp_path {tmp}/nginx-scgi;
    upstream fake {{ server {upstream}; keepalive 128; keepalive_requests 1000000; }}
    server {{
        listen 127.0.0.1:{port};
        location /v1/ {{
            proxy_pass http://fake/api/v1/;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
    }}
}}
"""


def ensure_nginx() -> str | None:
    """nginx's binary: already there, or ``nginx-light`` from Debian (as root)."""
    exe = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if exe is not None:
        return exe
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        print("nginx is not installed and cannot be here (needs root and apt-get); no nginx figures")
        return None
    print("installing nginx-light from Debian (one time) ...", flush=True)
    try:
        subprocess.run(["apt-get", "install", "-y", "-q", "nginx-light"], check=True, timeout=600,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"nginx-light could not be installed ({exc}); no nginx figures")
        return None
    return shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


def start_nginx(tmp: Path, upstream: str) -> tuple[subprocess.Popen, str] | None:
    """nginx in front of the fake provider: one worker, upstream keep-alive, no buffering."""
    exe = ensure_nginx()
    if exe is None:
        return None
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX_CONF.format(tmp=tmp, upstream=urlsplit(upstream).netloc, port=port))
    proc = subprocess.Popen([exe, "-c", str(conf), "-p", str(tmp)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    import socket

    def up() -> bool:
        if proc.poll() is not None:
            return True
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_until(up, 20, "nginx")
    if proc.poll() is not None:
        print("nginx exited at start:", (tmp / "nginx-error.log").read_text()[-800:])
        return None
    return proc, f"http://127.0.0.1:{port}/v1"


def ensure_litellm() -> Path | None:
    exe = LITELLM_VENV / "bin" / "litellm"
    if exe.exists():
        return exe
    print("installing litellm[proxy] into .cache/litellm-venv (one time) ...", flush=True)
    try:
        subprocess.run([PY, "-m", "venv", str(LITELLM_VENV)], check=True, timeout=120)
        subprocess.run([str(LITELLM_VENV / "bin" / "pip"), "install", "-q", "litellm[proxy]"],
                       check=True, timeout=1200)
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"LiteLLM could not be installed here ({exc}); reporting direct and hermes-admin only")
        return None
    return exe if exe.exists() else None


def start_litellm(tmp: Path, upstream: str, port: int, keys: list[str]) -> subprocess.Popen | None:
    """LiteLLM's proxy on *port*, one model whose deployments are *keys* on *upstream*."""
    exe = ensure_litellm()
    if exe is None:
        return None
    cfg = tmp / "litellm.yaml"
    entries = "".join(
        f"  - model_name: fake-model\n    litellm_params:\n      model: openai/fake-model\n"
        f"      api_base: {upstream}/api/v1\n      api_key: {k}\n" for k in keys)
    cfg.write_text("model_list:\n" + entries + "litellm_settings:\n  drop_params: true\n"
                   "  telemetry: false\n")
    log = open(tmp / "litellm.log", "w")  # noqa: SIM115 - closed with the process
    env = dict(os.environ, LITELLM_LOG="ERROR", LITELLM_TELEMETRY="False", DISABLE_SCHEMA_UPDATE="True",
               LITELLM_MASTER_KEY=LITELLM_MASTER)
    proc = subprocess.Popen([str(exe), "--config", str(cfg), "--host", "127.0.0.1", "--port", str(port),
                             "--num_workers", "1"], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp)
    import urllib.request

    def up() -> bool:
        if proc.poll() is not None:
            return True
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveliness", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_until(up, 180, "LiteLLM")
    except TimeoutError:
        proc.kill()
        print("LiteLLM did not start within 180 s; see", tmp / "litellm.log")
        return None
    if proc.poll() is not None:
        print("LiteLLM exited at start:", (tmp / "litellm.log").read_text()[-800:])
        return None
    return proc


def wait_until(pred, timeout: float, what: str) -> None:
    """Poll *pred* every 0.1 s until it is true; TimeoutError after *timeout* seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise TimeoutError(f"{what} not ready after {timeout:g} s")


def free_port() -> int:
    """A loopback TCP port nothing listens on now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
