"""Everything downstream takes the one verdict (#27): the request log, the counters (the
``answers`` family and the per-pool rate-limit counts) and the bench agree on each upstream
answer, one case per outcome class (success, the key's, the route's, the request's fault).

The route case is a 429 that is no rate limit (an overloaded provider): a counter that read
the status would count it. Negative controls: the log without the verdict (its hook off), and
the pool counter without it, no longer agree with the bench.
"""

from __future__ import annotations

import json

import httpx
import pytest

from store.paths import Home
from store.proxy.observing import requests as trace
from store.proxy.observing import stats as stats_mod
from store.proxy.observing.stats import status_path
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import CONFIG, running_chain_proxy

pytestmark = pytest.mark.slow
ROW_KEY = "sk-or-v1-verdictdown-row" + "1" * 24
SPARE_KEY = "sk-or-v1-verdictdown-spare" + "2" * 22
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _err(message: str, code: object = None) -> dict[str, object]:
    return {"error": {"message": message, "code": code, "type": "error"}}


# (case, the row's answer, class, kind, its answers (a first 429 is tried again on the same
# row, as the agent runtime does), rate limited, the row benched)
CASES = [
    ("success", http(200), "success", "ok", 1, False, False),
    ("key", http(429, {"Retry-After": "600"}, _err("Rate limit reached; slow down.", "rate_limit_exceeded")),
     "key", "rate_limit", 2, True, True),
    ("route", http(429, {}, _err("The service may be temporarily overloaded, please try again later.", 1305)),
     "route", "overloaded", 1, False, False),
    ("request", http(400, {}, _err("messages: field required", "invalid_request_error")),
     "request", "format_error", 1, False, False),
]


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


def _home(home: Home, up: ScriptedUpstream) -> None:
    write_store(home, make_store({"openrouter": [
        make_row("or0down", token=ROW_KEY, priority=0, base_url=up.url + "/api/v1"),
        make_row("or1down", token=SPARE_KEY, priority=1, base_url=up.url + "/api/v1")]}))
    home.config.write_text(CONFIG.split("fallback_providers")[0])


def _seen(home: Home, up: ScriptedUpstream, answer) -> tuple[dict, str, dict]:
    """One request whose first answer is *answer* (the spare key serves after it): the
    status file (log and counters), the /metrics text and the row as auth.json holds it."""
    _home(home, up)
    up.script(ROW_KEY, answer)
    up.script(SPARE_KEY, http(200))
    with running_chain_proxy(home) as p:
        httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)
        p.settled()
        p.server._write_status()
        metrics = httpx.get(p.url[:-3] + "/metrics", timeout=10).text
        status = json.loads(status_path(home, p.server.port).read_text())
    row = read_doc(home)["credential_pool"]["openrouter"][0]
    return status, metrics, row


def _agree(status: dict, metrics: str, row: dict, cls: str, kind: str, n: int, limited: bool,
           benched: bool) -> None:
    """The log, the metrics and the bench say the same of the row's answers."""
    answers = status["counters"]["answers"]
    assert {"class": cls, "kind": kind, "n": n} in answers, answers
    line = status["recent_requests"][-1]
    # The line holds the last verdict of the request: the row's own, or the spare's success.
    assert (line["class"], line["kind"]) == ((cls, kind) if cls in ("success", "request") else ("success", "ok"))
    assert f'hermes_admin_proxy_answers_total{{class="{cls}",kind="{kind}"}} {n:.1f}' in metrics
    assert status["pool_totals"]["openrouter"]["rate_limited"] == (n if limited else 0)
    assert (row.get("last_status") == "exhausted") is benched == (cls == "key")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_log_the_metrics_and_the_bench_agree(tmp_home: Home, up, case) -> None:
    _agree(*_seen(tmp_home, up, case[1]), *case[2:])


def test_control_a_log_without_the_verdict_disagrees(tmp_home: Home, up, monkeypatch) -> None:
    monkeypatch.setattr(trace, "judged", lambda verdict: None)
    with pytest.raises(AssertionError):
        _agree(*_seen(tmp_home, up, CASES[1][1]), *CASES[1][2:])


def test_control_a_pool_counter_without_the_verdict_disagrees(tmp_home: Home, up, monkeypatch) -> None:
    monkeypatch.setattr(stats_mod.Stats, "judged", lambda self, pool, verdict: None)
    with pytest.raises(AssertionError):
        _agree(*_seen(tmp_home, up, CASES[1][1]), *CASES[1][2:])
