"""``monitor --root``: every profile of a root followed by one watcher; a root's findings alert,
a profile's pool alerts under its own name, and each delivery is audited in its own home."""

from __future__ import annotations

from typing import Any

import pytest

from store.paths import Home
from store.profiles.root import Root
from tests.conftest import make_row, make_store, write_store
from tests.monitor.helpers import POOL, Running, Webhook, audit_lines, exhaust_all, rules, targets, wait_until

pytestmark = pytest.mark.slow

SHARED = "sk-or-v1-" + "5" * 48


@pytest.fixture
def hook() -> Any:
    w = Webhook()
    yield w
    w.close()


def test_a_root_alerts_per_profile_and_on_its_findings(tmp_home: Home, hook: Webhook) -> None:
    root = tmp_home.root
    write_store(tmp_home, make_store({POOL: [make_row("d00001", token=SHARED)]}))
    work = Home(root / "profiles" / "work")
    write_store(work, make_store({POOL: [make_row("w00001", token=SHARED),
                                         make_row("w00002", priority=1, token="sk-or-v1-" + "6" * 48)]}))
    with Running(root=Root(root), rules=rules(quiet=0.3, long_cooldown=False), targets=targets(hook.url),
                 backoff=0.05) as run:
        wait_until(lambda: any("shared key" in str(p.get("title")) for p in hook.got()), what="the finding's alert")
        exhaust_all(work)
        wait_until(lambda: any("work/openrouter has no usable key" in str(p.get("title")) for p in hook.got()),
                   what="the work profile's alert")
        wait_until(run.idle, what="the monitor to settle")
        assert run.call(lambda: run.monitor.sample(0).root)
    titles = [str(p.get("title")) for p in hook.got()]
    assert not any("default/openrouter has no usable key" in t for t in titles)
    assert sum("work/openrouter has no usable key" in t for t in titles) == 1
    assert any(a.get("rule") == "pool_empty" for a in audit_lines(work))          # audited where it happened
    assert any(a.get("rule") == "findings" for a in audit_lines(tmp_home))        # the root's own home
    assert (root / "hermes-admin-monitor.json").exists() and not (work.root / "hermes-admin-monitor.json").exists()
