"""The rules file: every problem is exit 2 naming the field; hostile files fail fast and cleanly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from store.errors import BadInput
from store.monitor import rules as R
from store.paths import Home
from tests.conftest import run_cli
from tests.monitor.helpers import canaries_in, canary


def test_no_file_means_every_rule_on_with_its_defaults() -> None:
    rules = R.defaults()
    assert all(r.enabled for r in rules.rules.values()) and set(rules.rules) == set(R.NAMES)
    assert rules[R.LONG_COOLDOWN].threshold == 7200 and rules[R.LOW_HEADROOM].threshold == 0.10
    assert rules.quiet_period == R.DEFAULT_QUIET


def test_a_full_file_is_read() -> None:
    rules = R.parse(yaml.safe_load("""
quiet_period: 90s
retries: 5
rules:
  pool_empty: {severity: info, pools: [openrouter]}
  key_dead: false
  long_cooldown: {longer_than: 1h30m}
  proxy_fallback: {longer_than: 600}
  low_headroom: {below: 25%, profiles: [work]}
  oauth_expiry: {within: 3d}
  findings: {kinds: [shared_key]}
"""))
    assert rules.quiet_period == 90 and rules.retries == 5
    assert not rules[R.KEY_DEAD].enabled
    assert rules[R.POOL_EMPTY].applies("default", "openrouter") and not rules[R.POOL_EMPTY].applies("x", "anthropic")
    assert rules[R.LONG_COOLDOWN].threshold == 5400 and rules[R.PROXY_FALLBACK].threshold == 600
    assert rules[R.LOW_HEADROOM].threshold == 0.25 and not rules[R.LOW_HEADROOM].applies("default", "openrouter")
    assert rules[R.OAUTH_EXPIRY].threshold == 3 * 86400 and rules[R.FINDINGS].kinds == ("shared_key",)
    assert rules[R.OAUTH_REFRESH_FAILED].enabled       # unlisted: on, with its defaults


@pytest.mark.parametrize("text, field, words", [
    ("rules: {pool_emtpy: {}}", "rules.pool_emtpy", "did you mean 'pool_empty'"),
    ("quiet: 5m", "quiet", "did you mean 'quiet_period'"),
    ("rules: {long_cooldown: {longer: 2h}}", "rules.long_cooldown.longer", "did you mean 'longer_than'"),
    ("rules: {long_cooldown: {longer_than: soon}}", "rules.long_cooldown.longer_than", "not a duration"),
    ("rules: {long_cooldown: {longer_than: 0}}", "rules.long_cooldown.longer_than", "positive"),
    ("rules: {long_cooldown: {longer_than: 400d}}", "rules.long_cooldown.longer_than", "longer than a year"),
    ("rules: {low_headroom: {below: 150%}}", "rules.low_headroom.below", "between 0% and 100%"),
    ("rules: {low_headroom: {below: true}}", "rules.low_headroom.below", "true/false"),
    ("rules: {key_dead: {severity: loud}}", "rules.key_dead.severity", "info, warning, critical"),
    ("rules: {key_dead: {enabled: yes please}}", "rules.key_dead.enabled", "true or false"),
    ("rules: {key_dead: {pools: []}}", "rules.key_dead.pools", "non-empty list"),
    ("rules: {findings: {kinds: [copied]}}", "rules.findings.kinds.copied", "unknown key"),
    ("rules: {key_dead: 3}", "rules.key_dead", "mapping of settings"),
    ("retries: 99", "retries", "from 0 to 10"),
    ("rules: [pool_empty]", "rules", "mapping of rule name"),
    ("- a\n- b", "rules", "must be a mapping"),
])
def test_each_problem_names_its_field(text: str, field: str, words: str) -> None:
    with pytest.raises(R.RulesError) as err:
        R.parse(yaml.safe_load(text))
    assert err.value.field == field and words in err.value.problem


def test_a_key_pasted_into_a_field_is_not_echoed() -> None:
    with pytest.raises(R.RulesError) as err:
        R.parse({"rules": {"long_cooldown": {"longer_than": canary(1)}}})
    assert canaries_in(str(err.value)) == []


KEYS = [*R.NAMES, "enabled", "severity", "pools", "profiles", "rules", "quiet_period", "retries", "below",
        "longer_than", "within", "kinds", "x"]


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(KEYS), kids, max_size=5),
                    max_leaves=20))
def test_any_document_is_rules_or_a_rules_error(data: object) -> None:
    try:
        R.parse(data)
    except R.RulesError:
        pass


def _file(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "rules.yaml"
    p.write_text(text)
    return p


def test_file_problems_are_bad_input_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such file"):
        R.load(tmp_path / "missing.yaml")
    with pytest.raises(BadInput, match="not valid YAML at line 2"):
        R.load(_file(tmp_path, "rules:\n  key_dead: : x\n"))
    with pytest.raises(BadInput, match=r"rules\.key_dead\.severity"):
        R.load(_file(tmp_path, "rules: {key_dead: {severity: loud}}\n"))
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefg", "bcdefgh", strict=True))
    with pytest.raises(BadInput, match="alias"):
        R.load(_file(tmp_path, bomb))
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(BadInput, match="FIFO"):
        R.load(fifo)


def test_the_cli_exits_2_naming_the_field(tmp_home: Home, tmp_path: Path) -> None:
    bad = _file(tmp_path, "rules: {low_headroom: {below: 2}}\n")
    proc = run_cli(tmp_home, "monitor", "--rules", str(bad), "--check", ok=False)
    assert proc.returncode == 2 and "rules.low_headroom.below" in proc.stderr
    good = _file(tmp_path, "quiet_period: 1m\nrules: {key_dead: false}\n")
    proc = run_cli(tmp_home, "monitor", "--rules", str(good), "--check")
    assert "quiet period 60s" in proc.stdout and "key_dead" not in proc.stdout
