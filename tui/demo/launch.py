"""``hermes-admin demo``: the console on a generated home with live agents, in one command.

It creates a fresh temporary home (never ``~/.hermes``; ``--home DIR`` picks the place and
must not hold an auth.json yet), seeds four pools with keys in varied states (ok, cooling
with reset times in seconds, milliseconds and ISO-8601, dead, env-backed), writes a
config.yaml (strategies, fallback chain, routing, an auxiliary chain, short demo TTLs),
starts the fake provider, the hermes-admin proxy on a free loopback port
(``tui.demo.proxy_child``), and two simulated agent processes (``tui.demo.agent
--proxy``) that send their chat requests through the proxy, so rotation, fallback and
restore happen live in the store and in the proxy panel (``x``); then opens the dashboard.

Every process it starts runs in its own process group, is listed in
``<home>/hermes-admin-demo.pids`` while the demo runs, and is ended when the dashboard
quits, on SIGINT/SIGTERM/SIGHUP, when the terminal hangs up, or on an exception
(try/finally plus atexit). The children also exit by themselves if the demo process disappears.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from store.authfile import atomic_write_bytes, ensure_home, serialize
from store.config.settings import SETTINGS_FILE
from store.errors import BadInput, HermesAdminError
from store.paths import Home
from store.profiles.root import Root
from store.proxy.observing.stats import read_statuses
from tui.app import session_end
from tui.app.root_console import run_root
from tui.demo.agent import PARENT_ENV
from tui.demo.profiles import seed_profiles

PIDFILE = "hermes-admin-demo.pids"
AGENT_INTERVAL = 0.8
RESTORE_INTERVAL = 10.0
START_TIMEOUT = 15.0
ROOT = Path(__file__).resolve().parents[2]

# Demo secrets: obviously fake, long enough to show a fingerprint.
KEYS = {
    "or1": "sk-or-v1-demo0000000000000000000000000001",
    "or2": "sk-or-v1-demo0000000000000000000000000002",
    "or_env": "sk-or-v1-demo00000000000000000000000envK",
    "or_bill": "sk-or-v1-demo0000000000000000000000000402",
    "ant_oauth": "sk-ant-oat01-demo000000000000000000000A01",
    "ant_rt": "sk-ant-ort01-demo000000000000000000000R01",
    "ant1": "sk-ant-api03-demo000000000000000000000K01",
    "ant2": "sk-ant-api03-demo000000000000000000000K02",
    "cdx1": "cdx-demo-access-token-00000000000000C001",
    "cdx2": "cdx-demo-access-token-00000000000000C002",
    "tg1": "tg-demo-key-000000000000000000000000T001",
    "tg2": "tg-demo-key-000000000000000000000000T002",
}


def demo_row(rid: str, label: str, priority: int, token: str | None = None, *,
             source: str = "manual", auth_type: str = "api_key", **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"id": rid, "label": label, "auth_type": auth_type,
                           "priority": priority, "source": source}
    if token is not None:
        row["access_token"] = token
    for f in ("last_status", "last_status_at", "last_error_code", "last_error_reason",
              "last_error_message", "last_error_reset_at"):
        row[f] = None
    row["request_count"] = 0
    row.update(fields)
    return row


def seed_store(url: str, now: float) -> dict[str, Any]:
    """The demo auth.json: four pools, every state the dashboard can show."""
    iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 90))
    return {
        "version": 1,
        "active_provider": "openai-codex",
        "providers": {},
        "credential_pool": {
            "openrouter": [
                demo_row("a1b2c3", "or-primary", 0, KEYS["or1"], base_url=url + "/api/v1"),
                demo_row("d4e5f6", "or-backup", 1, KEYS["or2"], base_url=url + "/api/v1"),
                demo_row("0e0e0e", "OPENROUTER_API_KEY", 2, source="env:OPENROUTER_API_KEY",
                     secret_fingerprint="sha256:5d1c0ffee0ddba11", base_url=url + "/api/v1"),
                demo_row("b111ed", "or-billing", 3, KEYS["or_bill"], base_url=url + "/api/v1"),
            ],
            "anthropic": [
                demo_row("c1a0de", "claude-oauth", 0, KEYS["ant_oauth"], source="hermes_pkce",
                     auth_type="oauth", refresh_token=KEYS["ant_rt"], base_url=url,
                     expires_at_ms=int((now - 30) * 1000), last_status="exhausted",
                     last_status_at=now - 5, last_error_code=401,
                     last_error_reason="token_expired"),
                demo_row("a7a7a7", "ant-key-1", 1, KEYS["ant1"], base_url=url,
                     last_status="exhausted", last_status_at=now - 10, last_error_code=429,
                     last_error_reason="rate_limit_exceeded", last_error_reset_at=iso),
                demo_row("dead01", "ant-key-old", 2, KEYS["ant2"], base_url=url,
                     last_status="dead", last_status_at=now - 3600, last_error_code=401,
                     last_error_reason="token_revoked"),
            ],
            "openai-codex": [
                demo_row("cdx001", "codex-device", 0, KEYS["cdx1"], source="device_code",
                     auth_type="oauth", base_url=url + "/backend-api"),
                demo_row("cdx002", "codex-second", 1, KEYS["cdx2"], source="device_code",
                     auth_type="oauth", base_url=url + "/backend-api",
                     last_status="exhausted", last_status_at=now - 20, last_error_code=429,
                     last_error_reason="usage_limit_reached",
                     last_error_message="The usage limit has been reached for your plan.",
                     last_error_reset_at=int((now + 120) * 1000)),
            ],
            "custom:together.ai": [
                demo_row("t0g001", "together-1", 0, KEYS["tg1"], base_url=url + "/v1"),
                demo_row("t0g002", "together-2", 1, KEYS["tg2"], base_url=url + "/v1",
                     last_status="exhausted", last_status_at=now - 5, last_error_code=429,
                     last_error_reason="rate_limit_exceeded", failure_reason="rate_limit",
                     last_error_reset_at=now + 40),
            ],
        },
    }


def config_yaml(url: str) -> str:
    return f"""\
# hermes-admin demo home: generated by `hermes-admin demo`, safe to delete.
model:
  provider: openai-codex
  default: gpt-5-codex
credential_pool_strategies:
  openrouter: round_robin    # spread load over the keys
  anthropic: least_used
  openai-codex: fill_first
fallback_providers:
  - provider: openrouter
    model: anthropic/claude-sonnet-4
  - provider: custom
    model: llama-3.3-70b
    base_url: {url}/v1
fallback_model:
  provider: anthropic
  model: claude-sonnet-4
fallback:
  auto_activate: true
provider_routing:
  sort: price
  ignore: [together]
  order: [anthropic, google]
  data_collection: deny
custom_providers:
  - name: Together.ai
    base_url: {url}/v1
auxiliary:
  vision:
    provider: auto
    model: ""
    fallback_chain:
      - provider: openrouter
        model: google/gemini-3-flash-preview
        timeout: 240
hermes_admin:
  cooldown_ttls:       # short, so the demo moves
    401: 15
    429: 20
    default: 30
    only_row: 10
"""


# hermes-admin's own settings: a day budget on each OpenRouter key that the demo agents reach
# within a minute (SPEND_PER_ANSWER a answer), so "over budget" shows and the proxy moves on.
SPEND_PER_ANSWER = 0.0125
SETTINGS_YAML = """\
# hermes-admin demo settings: generated by `hermes-admin demo`.
budgets:
  openrouter:
    key: {day: 0.10}     # USD a key a day: reached after 8 answers
"""


def provider_script() -> dict[str, Any]:
    """How the fake provider behaves for each demo key.

    The OpenRouter, Together and Anthropic keys announce what is left on every answer (the
    OpenAI and Anthropic rate-limit dialects), so their headroom bars run down in the
    dashboard and the proxy rotates off a key when its answer says nothing is left, before
    the 429 it would get next. The Codex key keeps the reactive path (a 429, then a bench).
    """
    return {
        "quotas": {
            KEYS["or1"]: {"limit": 3, "window": 15, "dialect": "openai"},
            KEYS["or2"]: {"limit": 6, "window": 20, "dialect": "openai"},
            KEYS["cdx1"]: {"limit": 5, "window": 45, "reopens_in": 25, "usage_limit": True},
            KEYS["tg1"]: {"limit": 8, "window": 25, "dialect": "openai"},
            KEYS["ant1"]: {"limit": 10, "window": 60, "dialect": "anthropic"},
            "sk-ant-oat01-demo-refreshed00000000000A02": {"limit": 20, "window": 90,
                                                         "dialect": "anthropic-unified"},
        },
        "keys": {
            KEYS["or_bill"]: [{"status": 402, "error_type": "insufficient_credits",
                               "message": "Insufficient credits"}],
        },
        "usage": {KEYS["cdx2"]: {"used_percent": 100}},
        "spend": {"cost": SPEND_PER_ANSWER},      # every answer reports its usage; OpenRouter's its cost
        "oauth": {KEYS["ant_rt"]: {"access_token": "sk-ant-oat01-demo-refreshed00000000000A02",
                                   "expires_in": 3600}},
    }


class Children:
    """The processes the demo started; each in its own process group."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.pidfile: Path | None = None

    def spawn(self, argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "ab") as out:
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=out, start_new_session=True, cwd=ROOT)
        self.procs.append(proc)
        self._write_pidfile()
        return proc

    def _write_pidfile(self) -> None:
        if self.pidfile is not None:
            self.pidfile.write_text("".join(f"{p.pid}\n" for p in self.procs))

    def stop(self) -> None:
        """SIGTERM every group, wait briefly, SIGKILL what is left, reap all."""
        for p in self.procs:
            if p.poll() is None:
                _signal_group(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 3
        for p in self.procs:
            try:
                p.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(p.pid, signal.SIGKILL)
                try:
                    p.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    pass
        self.procs.clear()
        if self.pidfile is not None:
            try:
                self.pidfile.unlink()
            except OSError:
                pass


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)        # the child leads its own group (start_new_session)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _wait_for_port(path: Path, proc: subprocess.Popen[bytes], timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            text = path.read_text().strip()
            if text.isdigit():
                return int(text)
        if proc.poll() is not None:
            raise HermesAdminError(f"the fake provider exited with status {proc.returncode}")
        time.sleep(0.05)
    raise HermesAdminError(f"the fake provider did not start within {timeout:g}s")


def child_env() -> dict[str, str]:
    """The environment of the demo's children: no real provider key leaks in (a child would
    otherwise seed `env:` rows from it), our package on the path, the demo's pid to watch."""
    env = {k: v for k, v in os.environ.items()
           if not k.upper().endswith(("API_KEY", "_TOKEN", "_SECRET", "_KEY"))}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env[PARENT_ENV] = str(os.getpid())
    return env


def start_provider(children: Children, env: dict[str, str], logs: Path, script: dict[str, Any]) -> str:
    """Start the fake provider with *script* on a free loopback port; return its URL."""
    path = logs / "provider-script.json"
    path.write_text(json.dumps(script, indent=2))
    port_file = logs / "provider.port"
    provider = children.spawn([sys.executable, "-m", "tui.demo.fake_provider", "--port", "0",
                               "--script", str(path), "--port-file", str(port_file)],
                              env, logs / "provider.log")
    return f"http://127.0.0.1:{_wait_for_port(port_file, provider, START_TIMEOUT)}"


def start_proxy(home: Home, children: Children, env: dict[str, str], logs: Path, token_url: str,
                timeout: float = START_TIMEOUT) -> str:
    """Start the proxy on *home* (any free loopback port); its ``/v1`` URL once it serves."""
    proc = children.spawn([sys.executable, "-m", "tui.demo.proxy_child", "--home", str(home.root),
                           "--port", "0", "--restore-interval", str(RESTORE_INTERVAL),
                           "--token-url", token_url],
                          env, logs / "proxy.log")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # Its status file says where it listens (port 0 picks one); written once it serves.
        for st in read_statuses(home):
            if st.get("pid") == proc.pid and st.get("state") == "running" and st.get("url"):
                return str(st["url"])
        if proc.poll() is not None:
            raise HermesAdminError(f"the proxy exited with status {proc.returncode}; see {logs / 'proxy.log'}")
        time.sleep(0.05)
    raise HermesAdminError(f"the proxy did not start within {timeout:g}s; see {logs / 'proxy.log'}")


def prepare_home(home: Path | str | None) -> tuple[Home, Path | None]:
    """The demo home and, when we made it, the temp folder to delete afterwards."""
    if home is None:
        tmp = Path(tempfile.mkdtemp(prefix="hermes-admin-demo-"))
        return Home(tmp / "home"), tmp
    root = Path(home).expanduser().absolute()
    if (root / "auth.json").exists():
        raise BadInput("--home", f"{root} already has an auth.json; the demo only seeds a fresh home")
    return Home(root), None


def start(home: Home, children: Children) -> str:
    """Seed *home*, start the fake provider and the agents; return the provider URL."""
    ensure_home(home)
    children.pidfile = home.root / PIDFILE
    logs = home.root / "demo-logs"
    logs.mkdir(exist_ok=True)
    env = child_env()
    env["HERMES_HOME"] = str(home.root)
    url = start_provider(children, env, logs, provider_script())
    now = time.time()
    atomic_write_bytes(home.auth, serialize(seed_store(url, now)))
    atomic_write_bytes(home.config, config_yaml(url).encode())
    atomic_write_bytes(home.root / SETTINGS_FILE, SETTINGS_YAML.encode())
    atomic_write_bytes(home.env, f"OPENROUTER_API_KEY={KEYS['or_env']}\n".encode())
    agent_env = dict(env, OPENROUTER_API_KEY=KEYS["or_env"])
    proxy_url = start_proxy(home, children, agent_env, logs, url + "/v1/oauth/token")
    for name, pool in (("agent-codex", "openai-codex"), ("agent-openrouter", "openrouter")):
        children.spawn([sys.executable, "-m", "tui.demo.agent", "--home", str(home.root),
                        "--pool", pool, "--interval", str(AGENT_INTERVAL),
                        "--restore-interval", str(RESTORE_INTERVAL),
                        "--token-url", url + "/v1/oauth/token", "--proxy", proxy_url],
                       agent_env, logs / f"{name}.log")
    return url


def _open_console(home: Home) -> int:
    """Seed three team profiles beside the demo home and open the console on the root."""
    seed_profiles(home, time.time())
    return run_root(Root(home.root))


def run_demo(home: Path | str | None = None, *, open_dashboard: bool = True,
             duration: float | None = None) -> int:
    """Run the demo; return the dashboard's exit status. See the module docstring."""
    children = Children()
    prepared: list[Path | None] = [None]

    def cleanup() -> None:
        children.stop()
        tmp = prepared[0]
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
            prepared[0] = None

    def on_term(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    atexit.register(cleanup)
    # If the console cannot exit through its ordinary path, the watchdog still cleans up.
    session_end.at_forced_exit(cleanup)
    # While the dashboard runs, the app handles these itself and puts these handlers back.
    old = {sig: signal.signal(sig, on_term) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        h, prepared[0] = prepare_home(home)
        url = start(h, children)
        if not open_dashboard:
            print(f"demo home {h.root}; fake provider {url}; Ctrl-C to stop", flush=True)
            deadline = None if duration is None else time.monotonic() + duration
            while deadline is None or time.monotonic() < deadline:
                time.sleep(0.2)
            return 0
        return _open_console(h)
    except KeyboardInterrupt:
        return 130
    finally:
        cleanup()
        atexit.unregister(cleanup)
        session_end.forget_forced_exit(cleanup)
        for sig, handler in old.items():
            signal.signal(sig, handler)
