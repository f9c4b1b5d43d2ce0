"""A proxy status file of the wrong shape is skipped, never shown or taken for a live proxy.

Found by a hostile session: a status file (``hermes-admin-proxy-<port>.json``) with a field of
the wrong type (``"chain": "x"``) made ``proxy status`` die with ``internal error:
AttributeError`` (exit 1, no file named); ``Infinity`` and ``NaN`` passed into ``proxy status
--json``; a pid of ``"x"`` or ``1e400`` counted as a running proxy. A proxy never writes such a
file, so one that differs is someone else's, skipped as unreadable.
"""

from __future__ import annotations

import json
import os
import time

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from store.paths import Home
from store.proxy.observing.stats import LISTS, OBJECTS, read_statuses
from tests.cli.inprocess import run_main
from tests.conftest import make_store, write_store


def _good() -> dict:
    return {"port": 8645, "pid": os.getpid(), "state": "running", "updated_at": time.time(),
            "url": "http://127.0.0.1:8645/v1", "primary": "openrouter", "active": "openrouter",
            "requests_total": 3, "in_flight": 0,
            "chain": [{"name": "openrouter", "active": True, "usable": 1, "rows": 1}],
            "credentials": [], "upstreams": [], "recent_requests": [], "pools": {}, "counters": {}}


def _home(tmp_path_factory) -> Home:
    home = Home(tmp_path_factory.mktemp("h"))
    write_store(home, make_store({}))
    return home


WRONG = st.one_of(st.text(max_size=5), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                  st.lists(st.integers(), min_size=1, max_size=2), st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from([*LISTS, *OBJECTS, "pid", "port"]), value=WRONG)
def test_a_wrong_shape_is_skipped_and_never_crashes(tmp_path_factory, key: str, value: object) -> None:
    bound = {"pid": 2**31, "port": 65536}.get(key)
    assume(not (bound and type(value) is int and 0 < value < bound))      # a real pid or port
    home = _home(tmp_path_factory)
    doc = _good()
    doc[key] = value
    (home.root / "hermes-admin-proxy-8645.json").write_text(json.dumps(doc))
    assert read_statuses(home) == []
    for argv in (["proxy", "status"], ["proxy", "status", "--json"]):
        code, out, err = run_main(["--home", str(home.root), *argv], b"")
        assert "internal error" not in err and "Traceback" not in err
        assert code == 1 and "Infinity" not in out and "NaN" not in out


def test_nan_and_infinity_are_not_json(tmp_path_factory) -> None:
    home = _home(tmp_path_factory)
    text = json.dumps(_good()).replace('"requests_total": 3', '"requests_total": Infinity')
    (home.root / "hermes-admin-proxy-8645.json").write_text(text)
    assert read_statuses(home) == []


def test_control_the_well_formed_file_is_a_live_proxy(tmp_path_factory) -> None:
    home = _home(tmp_path_factory)
    (home.root / "hermes-admin-proxy-8645.json").write_text(json.dumps(_good()))
    assert len(read_statuses(home)) == 1
    code, out, err = run_main(["--home", str(home.root), "proxy", "status"], b"")
    assert code == 0 and "chain: on primary openrouter" in out, err
