"""`hermes-admin fleet status|bench|sync` at their edges: malformed data in Redis, one
fingerprint form, the durations of every verb, Redis URLs as ``redis://host:port/db``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from store.errors import BadInput
from store.fleet import keys as fkeys
from store.fleet.client import FleetClient, connect
from store.redaction import redact
from tests.conftest import run_cli
from tests.fleet_helpers import KEY_1, KEY_2, SECRET, make_home
from tui.cli import boundary, guard
from tui.cli.fleet import bench_seconds

pytestmark = pytest.mark.slow

FP_1 = fkeys.fleet_fingerprint(SECRET, "token:" + KEY_1)
FP_2 = fkeys.fleet_fingerprint(SECRET, "token:" + KEY_2)
NS = "hermes-admin:fleet:"


def refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not strict JSON")


def forge_malformed(url: str) -> None:
    """Host hashes, holders, sets and states as a careless or hostile writer leaves them."""
    good = FleetClient(connect(url), "host-a")
    good.heartbeat({FP_1: 3}, interval=2.0, started_at=good.server_time(), seen_version=0, offset=0.0)
    good.mark(FP_2, until_in=600, code=429, reason="rate_limit_exceeded")
    r = connect(url)
    r.sadd(NS + "hosts", "host-b", "bad host\x1b[2J")
    r.hset(NS + "host:host-b", mapping={"heartbeat_at": "nan", "interval": "1e300", "keys": "abc",
                                        "seen_version": "-4", "offset": "inf"})
    r.hset(NS + "h:" + FP_1, mapping={"host-b": "x", "host-c": "1e400"})
    r.hset(NS + "s:" + FP_1, mapping={"status": "exhausted", "until": "1e300", "since": "nan", "version": "2"})
    r.sadd(NS + "fps", FP_1, "not-a-fingerprint")


def test_fleet_status_shows_what_is_readable_and_names_what_is_not(tmp_path: Any, redis_server: Any) -> None:
    forge_malformed(redis_server.url)
    home = make_home(tmp_path, "a")
    text = run_cli(home, "fleet", "status", "--redis", redis_server.url)
    assert "internal error" not in text.stderr and "Traceback" not in text.stderr
    out = text.stdout
    assert "host-a" in out and "connected" in out                        # the readable host
    assert fkeys.short(FP_2) in out and "benched until" in out            # the readable key
    assert f"{fkeys.short(FP_1)}  ⚠ unreadable" in out
    tail = out[out.index("unreadable ("):]
    for named in ("host host-b: heartbeat_at", "host host-b: keys", f"key {fkeys.short(FP_1)}: until",
                  f"key {fkeys.short(FP_1)}: since", "holder host-b", "fps: 1 members are not fingerprints"):
        assert named in tail, named
    assert "\x1b" not in out                                              # a host name from outside, inert
    js = run_cli(home, "fleet", "status", "--json", "--redis", redis_server.url)
    snap = json.loads(js.stdout, parse_constant=refuse_constant)
    assert snap["connected"] is True and snap["problems"]
    key = next(k for k in snap["keys"] if k["fp"] == fkeys.full(FP_1))
    assert key["usable"] is False and key["benched"] is False and key["problems"]


def test_negative_control_the_forged_hashes_are_what_the_old_reader_died_of(redis_server: Any) -> None:
    forge_malformed(redis_server.url)
    h = connect(redis_server.url).hgetall(NS + "host:host-b")
    with pytest.raises(ValueError):
        int(h.get("keys") or 0)                                           # `fleet status`: internal error


def test_the_fingerprint_fleet_status_prints_is_the_one_fleet_bench_takes(tmp_path: Any, redis_server: Any) -> None:
    home = make_home(tmp_path, "a")
    c = FleetClient(connect(redis_server.url), "host-b")
    c.heartbeat({FP_1: 1, FP_2: 1}, interval=2.0, started_at=c.server_time(), seen_version=0, offset=0.0)
    snap = json.loads(run_cli(home, "fleet", "status", "--json", "--redis", redis_server.url).stdout)
    whole = next(k["fp"] for k in snap["keys"] if k["fp"].endswith(FP_1))
    assert whole == "fl:" + FP_1
    text = run_cli(home, "fleet", "status", "--redis", redis_server.url).stdout
    assert fkeys.short(FP_1) in text
    for given, duration, seconds in ((whole, "10m", 600), (fkeys.short(FP_1), "1h30m", 5400),
                                     (FP_1, "90s", 90), (FP_1[:8], "60", 60)):
        c.clear(FP_1)
        out = run_cli(home, "fleet", "bench", given, duration, "--redis", redis_server.url, "--name", "ops")
        assert "looks like an API key" not in out.stderr
        assert f"{fkeys.short(FP_1)}: applied" in out.stdout, (given, out.stderr)
        st = c.states([FP_1])[FP_1]
        assert st.until is not None and st.since is not None
        assert seconds - 5 <= st.until - st.since <= seconds, (given, duration)
    out = run_cli(home, "fleet", "bench", whole, "dead", "--redis", redis_server.url, "--name", "ops")
    assert c.states([FP_1])[FP_1].status == "dead", out.stdout
    assert c.states([FP_1])[FP_1].host == "ops"                          # published under --name


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1", "1e300"])
def test_fleet_sync_refuses_an_interval_that_is_not_a_number_of_seconds(tmp_path: Any, value: str) -> None:
    home = make_home(tmp_path, "a")
    out = run_cli(home, "fleet", "sync", "--interval", value, "--redis", "redis://127.0.0.1:9/0", ok=False,
                  input="")
    assert out.returncode == 2 and "--interval:" in out.stderr, out.stderr


def test_an_abbreviated_option_never_reaches_the_namespace(tmp_path: Any) -> None:
    home = make_home(tmp_path, "a")
    out = run_cli(home, "fleet", "status", "--names", "x", "--redis", "redis://127.0.0.1:9/0", ok=False)
    assert out.returncode == 2 and "unrecognized arguments: --names" in out.stderr


def test_negative_control_bare_hex_without_the_prefix_reads_as_a_key() -> None:
    with pytest.raises(BadInput, match="looks like an API key"):
        guard.check_text("FP", FP_1)                                      # what `fleet bench` said of it
    guard.check_text("FP", fkeys.full(FP_1))                              # the one form passes


@pytest.mark.parametrize("text, seconds", [("10m", 600), ("2h", 7200), ("1h30m", 5400), ("1d", 86400),
                                           ("45", 45), ("dead", float("inf")), ("inf", float("inf"))])
def test_fleet_bench_takes_the_durations_of_every_verb(text: str, seconds: float) -> None:
    assert bench_seconds(text) == seconds


@pytest.mark.parametrize("text", ["0", "-5", "nan", "1e300", "400d", "2y", "ten minutes", KEY_1, ""])
def test_a_bad_duration_is_refused_without_echoing_it(text: str) -> None:
    with pytest.raises(BadInput) as exc:
        bench_seconds(text)
    assert exc.value.field == "DURATION"
    assert len(text) < 4 or text not in str(exc.value)                   # what was typed is not echoed


def test_bad_fp_and_duration_exit_2_before_any_network_call(tmp_path: Any) -> None:
    home = make_home(tmp_path, "a")
    for args, field in ((["not-hex!", "10m"], "FP"), (["fl:0123456789ab", "10 parsecs"], "DURATION")):
        out = run_cli(home, "fleet", "bench", *args, "--redis", "redis://127.0.0.1:9/0", ok=False)
        assert out.returncode == 2 and f"{field}:" in out.stderr, out.stderr
        assert "disconnected" not in out.stdout                            # refused before connecting


@pytest.mark.parametrize("name", [KEY_1, "plainSECRETvalue0123456789"])
def test_a_host_name_that_is_a_key_or_a_secret_of_the_home_is_refused(tmp_path: Any, name: str) -> None:
    home = make_home(tmp_path, "a")
    (home.root / ".env").write_text(f"OTHER_API_KEY={name}\n")
    out = run_cli(home, "fleet", "bench", "fl:0123456789ab", "10m", "--name", name, "--redis",
                  "redis://127.0.0.1:9/0", ok=False)
    assert out.returncode == 2 and "--name:" in out.stderr, out.stderr
    assert name not in out.stdout + out.stderr


def test_a_redis_url_is_shown_as_host_port_db_with_the_password_masked(tmp_path: Any, redis_server: Any) -> None:
    home = make_home(tmp_path, "a")
    port = redis_server.port
    plain = run_cli(home, "fleet", "status", "--redis", f"redis://127.0.0.1:{port}").stdout
    assert f"connected to redis://127.0.0.1:{port}/0 " in plain and "…" not in plain.splitlines()[0]
    down = run_cli(home, "fleet", "status", "--redis", "redis://127.0.0.1:9/0", ok=False).stdout
    assert "(redis://127.0.0.1:9/0: " in down
    masked = fkeys.safe_url("redis://:hunter2-0123456789@10.0.0.5:6379/0")
    assert masked == "redis://:***@10.0.0.5:6379/0"
    assert fkeys.safe_url("rediss://ops:pw0123456789@r.example/2?password=pw0123456789") == \
        "rediss://ops:***@r.example:6379/2?password=***"


def test_negative_control_registering_a_url_without_a_password_prints_it_as_a_fingerprint() -> None:
    url = "redis://127.0.0.1:6399/0"
    assert boundary.argv_secrets(["fleet", "status", "--redis", url]) == []
    assert "…99/0" in redact.Redactor([url]).redact(f"connected to {url}")   # what the CLI printed
    pw = "hunter2-0123456789"
    assert set(boundary.argv_secrets(["--redis", f"redis://:{pw}@h:1/0"])) == {f"redis://:{pw}@h:1/0", pw}


def test_the_fleet_verbs_take_the_consoles_fleet_url(tmp_path: Any, redis_server: Any) -> None:
    """`hermes-admin --fleet URL fleet status`: the URL the console's fleet view takes serves the
    fleet verbs too (it was ignored: "no Redis URL"); --redis given beats it, the variable is last."""
    home = make_home(tmp_path, "a")
    good, down = redis_server.url, "redis://127.0.0.1:9/0"
    out = run_cli(home, "--fleet", good, "fleet", "status").stdout
    assert f"connected to {fkeys.safe_url(good)} " in out, out
    out = run_cli(home, "--fleet", down, "fleet", "status", "--redis", good).stdout
    assert f"connected to {fkeys.safe_url(good)} " in out, out
    bad = run_cli(home, "--fleet", "http://x", "fleet", "status", ok=False)
    assert bad.returncode == 2 and "--fleet: http://x:6379/0: " in bad.stderr, bad.stderr


def test_a_fleet_url_password_is_a_secret_of_the_process(tmp_path: Any) -> None:
    pw = "Sup3rSecretPassw0rdXYZ"
    url = f"redis://ops:{pw}@127.0.0.1:9/0"
    assert pw in boundary.argv_secrets(["--fleet", url, "fleet", "status"])
    assert pw in boundary.argv_secrets([f"--fleet={url}", "list"])
    out = run_cli(make_home(tmp_path, "a"), "--fleet", url, "fleet", "status", ok=False)
    assert out.returncode == 1 and "redis://ops:***@127.0.0.1:9/0" in out.stdout, out.stdout + out.stderr
    assert pw not in out.stdout + out.stderr


@pytest.mark.parametrize("url", ["http://x", "redis://h", "redis://h:1", "rediss://h/2", "redis://:pw0123456789@h",
                                 "redis://u:pw0123456789@h:7/3?password=pw0123456789"])
def test_scrub_fills_a_url_in_once(url: str) -> None:
    """A message that already holds the safe form keeps it as it is (``http://x`` is a prefix of
    ``http://x:6379/0``: it was filled in twice, ``http://x:6379/0:6379/0``); a raw URL in it is
    made safe; no password is left."""
    safe = fkeys.safe_url(url)
    assert fkeys.scrub(f"{safe}: refused", url) == f"{safe}: refused"
    assert fkeys.scrub(f"connecting to {url} failed", url) == f"connecting to {safe} failed"
    assert "pw0123456789" not in fkeys.scrub(f"{url} {safe}", url)
