"""HomeState.config is the parsed Config (store.config.read.Config) or None, and every
reader of it (the loader's views, the inventory, the agent's view, the console's
redactor) takes what it needs by attribute, with the defaults when there is none."""

from __future__ import annotations

from store.config.agent_view import ConfigView, Route
from store.config.read import Config
from store.paths import Home
from store.pools.policy import DEFAULT_TTLS
from store.profiles.inventory import from_state
from store.watch.home import HomeLoader
from tests.conftest import make_row, make_store, write_store
from tui.text import shown

CANARY = "hunter2-not-key-shaped-but-a-secret"
CONFIG = f"""\
model:
  provider: openrouter
  default: some/model
credential_pool_strategies:
  openrouter: round_robin
hermes_admin:
  cooldown_ttls:
    "429": 120
custom_providers:
  - name: Local Box
    base_url: http://box:8000/v1/
fallback_providers:
  - provider: custom
    model: local-m
    base_url: http://box:8000/v1
auxiliary:
  vision:
    provider: openrouter
    api_key: {CANARY}
"""


def seeded(home: Home) -> None:
    write_store(home, make_store({"openrouter": [make_row("aaaaaa", priority=0)]}))


def test_a_home_without_config_has_none_and_every_reader_its_defaults(tmp_home: Home) -> None:
    seeded(tmp_home)
    state = HomeLoader(tmp_home).load()
    assert state.config is None
    assert state.strategies == {} and state.ttls == DEFAULT_TTLS
    assert state.pools[0].strategy == "fill_first"
    inv = from_state("default", state)
    assert (inv.primary, inv.fallbacks, inv.strategies, inv.custom_providers, inv.auxiliary) == (
        None, [], {}, [], {})
    view = ConfigView(tmp_home)
    assert view.fallback_routes() == []
    assert view.ttls == DEFAULT_TTLS and view.strategy_for("openrouter") == "fill_first"
    assert shown.secrets_of(state).redact("plain words") == "plain words"


def test_a_parsed_config_reaches_every_reader(tmp_home: Home) -> None:
    seeded(tmp_home)
    tmp_home.config.write_text(CONFIG)
    state = HomeLoader(tmp_home).load()
    assert isinstance(state.config, Config)
    assert state.strategies == {"openrouter": "round_robin"}
    assert state.ttls.rate_limit_429 == 120.0 and state.pools[0].strategy == "round_robin"
    inv = from_state("default", state)
    assert inv.primary is not None and inv.primary_provider == "openrouter"
    assert [(f.provider, f.model) for f in inv.fallbacks] == [("custom", "local-m")]
    assert inv.strategies == {"openrouter": "round_robin"}
    assert [c["name"] for c in inv.custom_providers] == ["Local Box"]
    assert set(inv.auxiliary) == {"vision"}
    view = ConfigView(tmp_home)
    assert view.strategy_for("openrouter") == "round_robin" and view.ttls.rate_limit_429 == 120.0
    assert view.fallback_routes() == [Route("custom:local-box", "local-m", "http://box:8000/v1", None, "custom")]
    # The config's inline key is a secret of the home: the console's redactor hides it.
    assert CANARY not in shown.secrets_of(state).redact(f"echo {CANARY}")


def test_a_half_written_config_keeps_the_last_good_one(tmp_home: Home) -> None:
    seeded(tmp_home)
    tmp_home.config.write_text(CONFIG)
    loader = HomeLoader(tmp_home)
    good = loader.load().config
    tmp_home.config.write_text("credential_pool_strategies:\n  openrouter: [\n")
    state = loader.load({"config.yaml"})
    assert state.config_error is not None and state.config is good
    assert state.strategies == {"openrouter": "round_robin"}
