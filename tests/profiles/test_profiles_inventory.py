"""The inventory over every profile: JSON schema, no secret in it, each finding (with a
negative case), and the cron and delegation views against Hermes's own formats."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from store.config.profile_view import read_cron_jobs, read_delegation, read_gateway
from store.config.providers import KNOWN_PROVIDERS, canonical, suggest
from store.paths import Home
from store.profiles import findings, inventory
from store.profiles.root import Root
from tests.conftest import cli_env, make_row, make_store, write_store

FIXTURES = Path(__file__).parents[1] / "fixtures"
HERMES_ADMIN = Path(sys.executable).parent / "hermes-admin"
CANARY = "sk-or-v1-CANARYcanaryCANARYcanary0000Zz9Q"
CANARY_RT = "rt-CANARYrefreshCANARYrefresh0000Yy8P"
CANARY_ENV = "sk-ant-CANARYenvCANARYenvCANARY0000Xx7R"
CANARY_CFG = "sk-CANARYconfigCANARYconfig0000Ww6S"


def home(root: Root, name: str) -> Home:
    return root.profile(name).home


def put(h: Home, pools: dict, config: str = "", env: str = "", **top) -> None:
    write_store(h, make_store(pools, **top))
    if config:
        h.config.write_text(config)
    if env:
        h.env.write_text(env)


def kinds(root: Root, kind: str) -> list[findings.Finding]:
    return [f for f in findings.compute(inventory.read_root(root)) if f.kind == kind]


def run_inventory(root: Root, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HERMES_ADMIN), "inventory", "--root", str(root.path), *args],
                          capture_output=True, text=True, env=cli_env(Home(root.path)), timeout=60)


# --- JSON schema and secrets ----------------------------------------------------------------

def canary_root(tmp_path: Path) -> Root:
    root = Root(tmp_path / "hermes")
    oauth = make_row("oooooo", token=CANARY, auth_type="oauth", source="device_code",
                     refresh_token=CANARY_RT, last_error_message=f"bad key {CANARY}")
    put(home(root, "default"), {"nous": [oauth], "openrouter": [make_row("aaaaaa", token=CANARY)]},
        config=f"model:\n  provider: openrouter\n  default: m\ndelegation:\n  provider: openrouter\n"
               f"  api_key: {CANARY_CFG}\nfallback_providers:\n  - provider: openrouter\n"
               f"    model: x\n    api_key: {CANARY_CFG}\n")
    put(home(root, "team"), {"anthropic": [make_row("eeeeee", source="env:ANTHROPIC_API_KEY")],
                             "openrouter": [make_row("bbbbbb", token=CANARY, request_count=7)]},
        env=f"ANTHROPIC_API_KEY={CANARY_ENV}\n",
        config=f"profile_routes:\n  - platform: slack\n    profile: team\n    token: {CANARY_CFG}\n")
    return root


def test_inventory_json_schema(tmp_path: Path) -> None:
    root = canary_root(tmp_path)
    proc = run_inventory(root, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"schema", "root", "generated_at", "profiles", "findings"}
    assert doc["schema"] == inventory.INVENTORY_SCHEMA_VERSION and doc["root"] == str(root.path)
    assert [p["name"] for p in doc["profiles"]] == ["default", "team"]
    prof = doc["profiles"][1]
    assert set(prof) == {"name", "home", "error", "config_error", "primary", "active_provider",
                         "fallbacks", "health", "pools", "delegation", "cron_jobs", "cron_error",
                         "gateway", "auxiliary", "warnings"}
    pool = next(p for p in prof["pools"] if p["pool"] == "openrouter")
    cred = pool["credentials"][0]
    assert set(cred) == {"id", "label", "auth_type", "source", "status", "seconds_left",
                         "fingerprint", "request_count", "env_backed"}
    assert cred["fingerprint"] == "sk-or-…" + CANARY[-4:]
    assert cred["request_count"] == 7 and cred["status"] == "ok"
    env_cred = prof["pools"][0]["credentials"][0]
    assert env_cred["env_backed"] is True and env_cred["fingerprint"].endswith(CANARY_ENV[-4:])
    assert doc["profiles"][0]["delegation"]["api_key"].endswith(CANARY_CFG[-4:])
    f = doc["findings"][0]
    assert set(f) == {"kind", "severity", "message", "profiles", "rows", "detail"}
    assert {x["kind"] for x in doc["findings"]} >= {"shared_key"}


def test_no_canary_in_inventory_output(tmp_path: Path) -> None:
    root = canary_root(tmp_path)
    every = (CANARY, CANARY_RT, CANARY_ENV, CANARY_CFG)
    # Negative control: the canaries really are in the files the inventory reads, and
    # the check below does catch one if a serializer leaks the rows.
    on_disk = b"".join(p.read_bytes() for p in root.path.rglob("*") if p.is_file())
    assert all(c.encode() in on_disk for c in every)
    profiles = inventory.read_root(root)
    leaky = json.dumps([cv.row for p in profiles for pv in p.pools for cv in pv.credentials])
    assert any(c in leaky for c in every)
    for args in ((), ("--json",)):
        proc = run_inventory(root, *args)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout + proc.stderr
        assert "…" in out
        for c in every:
            assert c not in out and c[4:-4] not in out, (args, c[:6])


# --- findings -------------------------------------------------------------------------------

def test_shared_key_side_by_side_and_negatives(tmp_path: Path) -> None:
    root = Root(tmp_path / "h")
    now = time.time()
    put(home(root, "default"), {"openrouter": [make_row("aaaaaa", token=CANARY)]})
    put(home(root, "team"), {"openrouter": [make_row("bbbbbb", token=CANARY, last_status="exhausted",
                                                     last_status_at=now, last_error_code=429)]})
    # Same key borrowed from .env in a third profile: still the same key.
    put(home(root, "ops"), {"openrouter": [make_row("cccccc", source="env:OPENROUTER_API_KEY")]},
        env=f"OPENROUTER_API_KEY={CANARY}\n")
    [f] = kinds(root, findings.SHARED_KEY)
    assert f.profiles == ("default", "ops", "team")
    states = {h["profile"]: h["status"] for h in f.detail["holders"]}
    assert states == {"default": "ok", "ops": "ok", "team": "cooling"}
    assert ("team", "openrouter", "bbbbbb") in f.rows and CANARY not in f.message

    # Negatives: a look-alike key (same prefix and last four) is a different key, and
    # the same key twice inside ONE profile is not "shared between profiles".
    lookalike = CANARY[:12] + "DIFFERENTmiddle" + CANARY[-4:]
    root2 = Root(tmp_path / "h2")
    put(home(root2, "default"), {"openrouter": [make_row("aaaaaa", token=CANARY)],
                                  "custom:x": [make_row("dddddd", token=CANARY)]})
    put(home(root2, "team"), {"openrouter": [make_row("bbbbbb", token=lookalike)]})
    assert kinds(root2, findings.SHARED_KEY) == []


def test_shared_refresh_token_and_negative(tmp_path: Path) -> None:
    def oauth(rid: str, rt: str) -> dict:
        return make_row(rid, token=f"at-{rid}-0123456789abcdef", auth_type="oauth",
                        source="device_code", refresh_token=rt)

    root = Root(tmp_path / "h")
    put(home(root, "default"), {"nous": [oauth("aaaaaa", CANARY_RT)]})
    put(home(root, "team"), {"nous": [oauth("bbbbbb", CANARY_RT)]})
    [f] = kinds(root, findings.SHARED_REFRESH)
    assert f.severity == "error" and f.profiles == ("default", "team")
    put(home(root, "team"), {"nous": [oauth("bbbbbb", CANARY_RT + "x")]})
    assert kinds(root, findings.SHARED_REFRESH) == []


def test_primary_without_usable_credential_and_negative(tmp_path: Path) -> None:
    root = Root(tmp_path / "h")
    cfg = "model:\n  provider: openrouter\n  default: some/model\n"
    dead = make_row("aaaaaa", token=CANARY, last_status="dead", last_error_code=401,
                    last_error_reason="invalid_token", last_status_at=time.time())
    put(home(root, "default"), {"openrouter": [dead]}, config=cfg)
    put(home(root, "team"), {"anthropic": [make_row("bbbbbb", token=CANARY_ENV)]},
        config="model:\n  provider: claude\n  default: c\n")   # alias of anthropic
    put(home(root, "nopool"), {}, active_provider="xai")
    got = {f.profiles[0]: f for f in kinds(root, findings.PRIMARY_UNUSABLE)}
    assert set(got) == {"default", "nopool"}
    assert got["default"].rows == (("default", "openrouter", "aaaaaa"),)
    assert "dead" in got["default"].message
    # Negative: a usable row clears it; an env row whose variable is missing does not.
    put(home(root, "default"), {"openrouter": [dead, make_row("cccccc", token=CANARY, priority=1)]},
        config=cfg)
    put(home(root, "nopool"), {"xai": [make_row("dddddd", source="env:XAI_API_KEY")]},
        active_provider="xai")
    got = {f.profiles[0] for f in kinds(root, findings.PRIMARY_UNUSABLE)}
    assert got == {"nopool"}
    home(root, "nopool").env.write_text("XAI_API_KEY=xai-0123456789abcdef0123\n")
    assert kinds(root, findings.PRIMARY_UNUSABLE) == []


def test_env_row_missing_from_the_profiles_env_and_negative(tmp_path: Path) -> None:
    root = Root(tmp_path / "h")
    row = make_row("aaaaaa", source="env:OPENROUTER_API_KEY")
    put(home(root, "default"), {"openrouter": [row]}, env=f"OPENROUTER_API_KEY={CANARY}\n")
    put(home(root, "team"), {"openrouter": [row]}, env="OTHER=1\n")
    [f] = kinds(root, findings.ENV_MISSING)
    assert f.profiles == ("team",) and f.detail["variable"] == "OPENROUTER_API_KEY"
    assert str(home(root, "team").env) in f.message
    home(root, "team").env.write_text(f"OPENROUTER_API_KEY={CANARY}\n")
    assert kinds(root, findings.ENV_MISSING) == []


def test_unknown_providers_everywhere_they_are_named_and_negative(tmp_path: Path) -> None:
    root = Root(tmp_path / "h")
    h = home(root, "default")
    put(h, {}, config=(
        "credential_pool_strategies:\n  openrutor: round_robin\n"
        "fallback_providers:\n  - provider: antropic\n    model: m\n"
        "delegation:\n  provider: gemni\n"
        "auxiliary:\n  vision:\n    provider: auto\n    fallback_chain:\n      - provider: nuos\n"))
    cron = h.root / "cron"
    cron.mkdir()
    shutil.copy(FIXTURES / "cron_jobs_hermes_0_19_0.json", cron / "jobs.json")   # has 'anthropc'
    got = {f.detail["where"]: f.detail for f in kinds(root, findings.UNKNOWN_PROVIDER)}
    assert set(got) == {"credential_pool_strategies.openrutor", "fallback_providers[0]",
                        "delegation.provider", "cron job typo", "auxiliary.vision.fallback_chain[0]"}
    assert got["fallback_providers[0]"]["suggestions"][0] == "anthropic"
    assert got["credential_pool_strategies.openrutor"]["suggestions"][0] == "openrouter"
    # Negative: canonical ids, aliases, custom:<name> and auto are all known.
    put(h, {}, config=(
        "credential_pool_strategies:\n  openrouter: round_robin\n  custom:my-box: fill_first\n"
        "fallback_providers:\n  - provider: claude\n    model: m\n  - provider: custom\n    model: q\n"
        "delegation:\n  provider: google\n"
        "auxiliary:\n  vision:\n    provider: auto\n    fallback_chain:\n      - provider: nous\n"))
    shutil.rmtree(cron)
    assert kinds(root, findings.UNKNOWN_PROVIDER) == []


def test_provider_registry_is_hermes_data() -> None:
    assert {"openrouter", "anthropic", "nous", "openai-codex", "xai", "custom"} <= KNOWN_PROVIDERS
    assert canonical("Claude") == "anthropic" and canonical("custom:Box") == "custom:box"
    assert canonical("nope") is None and suggest("opnrouter")[0] == "openrouter"
    assert suggest("") == [] and suggest("qqqqqqqq") == []


def test_marked_rows_for_the_console(tmp_path: Path) -> None:
    root = Root(tmp_path / "h")
    put(home(root, "default"), {"openrouter": [make_row("aaaaaa", token=CANARY)]})
    put(home(root, "team"), {"openrouter": [make_row("bbbbbb", token=CANARY)]})
    marks = findings.marked_rows(findings.compute(inventory.read_root(root)))
    assert marks == {("default", "openrouter", "aaaaaa"): ["shared_key"],
                     ("team", "openrouter", "bbbbbb"): ["shared_key"]}


# --- cron, delegation, gateway views --------------------------------------------------------

def test_cron_view_reads_hermes_jobs_file(tmp_path: Path) -> None:
    h = Home(tmp_path / "h")
    (h.root / "cron").mkdir(parents=True)
    shutil.copy(FIXTURES / "cron_jobs_hermes_0_19_0.json", h.root / "cron" / "jobs.json")
    jobs = {j.name: j for j in read_cron_jobs(h)}
    assert set(jobs) == {"digest", "typo", "model-only"}      # "plain" overrides nothing
    assert (jobs["digest"].provider, jobs["digest"].model) == ("openrouter", "openai/gpt-5-mini")
    assert jobs["typo"].base_url == "https://x.example/v1"
    assert jobs["model-only"].provider is None and jobs["model-only"].enabled
    # A bare list (Hermes auto-repairs it) reads the same; a wrong shape is an error.
    data = json.loads((h.root / "cron" / "jobs.json").read_text())
    (h.root / "cron" / "jobs.json").write_text(json.dumps(data["jobs"]))
    assert {j.name for j in read_cron_jobs(h)} == set(jobs)
    (h.root / "cron" / "jobs.json").write_text('"nope"')
    prof = inventory.read_profile(Root(h.root).profile("default"))
    assert prof.cron_error is not None and prof.cron_error.path == h.root / "cron" / "jobs.json"
    assert read_cron_jobs(Home(tmp_path / "none")) == []


def test_cron_view_against_jobs_written_by_real_hermes(tmp_path: Path, hermes_path: Path) -> None:
    h = tmp_path / "h"
    h.mkdir()
    env = {**cli_env(Home(h)), "HERMES_HOME": str(h), "PYTHONPATH": str(hermes_path)}
    script = ("from cron.jobs import create_job\n"
              "create_job('p', 'every 1h', name='pinned', provider='nous', model='hermes-4')\n"
              "create_job('q', 'every 1h', name='free')\n")
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=hermes_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [job] = read_cron_jobs(Home(h))
    assert (job.name, job.provider, job.model) == ("pinned", "nous", "hermes-4")


def test_delegation_and_gateway_views(tmp_path: Path) -> None:
    # The delegation keys of Hermes 0.19.0's DEFAULT_CONFIG, as `hermes config set` writes them.
    text = (FIXTURES / "config_delegation_hermes_0_19_0.yaml").read_text()
    data = yaml.safe_load(text)
    w: list[str] = []
    d = read_delegation(data, w)
    assert (d.provider, d.model, d.base_url) == ("openrouter", "google/gemini-3-flash-preview",
                                                 "https://openrouter.ai/api/v1")
    assert d.api_key == "sk-or-…" + "D3l9" and "D3l9" in text and d.overrides
    g = read_gateway(data, w)
    assert g.multiplex_profiles is True and g.max_concurrent_sessions == 8
    assert [r["profile"] for r in g.profile_routes] == ["team-a"]     # the bad route skipped
    assert any("profile_routes[1]" in x for x in w)
    # Inherit-everything defaults override nothing; top-level multiplex_profiles wins.
    d0 = read_delegation({"delegation": {"model": "", "provider": "", "base_url": "", "api_key": ""}}, [])
    assert not d0.overrides
    g0 = read_gateway({"multiplex_profiles": False, "gateway": {"multiplex_profiles": True}}, [])
    assert g0.multiplex_profiles is False


def test_root_loader_findings_follow_writes_walking_only_the_written_profile(tmp_path: Path,
                                                                             monkeypatch) -> None:
    """The watcher's findings (FindingsCache) equal a whole compute after each write, and a
    write to one profile looks up the key identities of that profile's rows only."""
    from store.profiles.live import RootChange, RootLoader
    from store.transaction import transaction
    root = Root(tmp_path / "h")
    put(home(root, "default"), {"openrouter": [make_row("aaaaaa", token=CANARY)]},
        config="model:\n  provider: openrouter\n  default: m\n")
    for i in range(5):
        put(home(root, f"team{i}"), {"openrouter": [make_row(f"bb{i}bbb", token=f"sk-or-v1-team{i:030d}")]})
    loader = RootLoader(root)
    loader.load()
    looked: list[str] = []
    real = findings.key_identity
    monkeypatch.setattr(findings, "key_identity", lambda row, env=None: (looked.append(row["id"]),
                                                                         real(row, env))[1])

    def write(profile: str, change) -> list[findings.Finding]:
        with transaction(home(root, profile)) as doc:
            change(doc["credential_pool"]["openrouter"][0])
        looked.clear()
        got = loader.load(RootChange({profile: {"auth.json"}})).findings
        walked[:] = looked
        # Control: the whole compute over a fresh read gives the same, walking every row.
        assert got == findings.compute(inventory.read_root(root))
        assert len(looked) - len(walked) == 6
        return got

    walked: list[str] = []
    # team3 takes the default profile's key: a shared key appears...
    got = write("team3", lambda row: row.update(access_token=CANARY))
    assert [f.kind for f in got] == [findings.SHARED_KEY]
    # ...and the watcher's findings looked at team3's row only.
    assert walked == ["bb3bbb"]
    # The default profile's only key benched: its primary has no usable credential.
    got = write("default", lambda row: row.update(last_status="exhausted", last_status_at=time.time(),
                                                  last_error_code=429))
    assert {f.kind for f in got} == {findings.SHARED_KEY, findings.PRIMARY_UNUSABLE}
    # team3 gets its own key back: the shared key is gone, the benched primary stays.
    got = write("team3", lambda row: row.update(access_token="sk-or-v1-team3-own-key-000000000000"))
    assert [f.kind for f in got] == [findings.PRIMARY_UNUSABLE]
