"""Homes whose secrets are placed anywhere (a helper module, not a test module).

:func:`secret_homes` draws a plan: seven secrets of the home, each a fresh canary of its own
kind (a key-shaped token, a token with no key shape, an OAuth refresh token, config.yaml's
``api_key``, a ``.env`` value a row borrows, and the passwords of a row's and of config's base
URL), then places copies of them in any text field: labels, reasons, messages, failure
reasons, unknown fields, base URLs (path, user, password), config.yaml's model names and
unknown sections, ``.env`` lines, as they are or inside a sentence or a URL's userinfo.

:func:`plant` writes the plan into a home; :func:`leaks` finds any of the secrets (whole, or
any 10 characters of its random part) in a text; :func:`file_leaks` searches every file
under the home except where secrets are stored (the store and its copies, config.yaml,
.env, the operator history's copies of both). Every secret is the home's, so every output
must show it only as a fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from hypothesis import strategies as st

from store.ops import history
from store.paths import Home
from tests.conftest import make_row, make_store, write_store

KINDS = ("key", "plain", "refresh", "config", "env", "url", "config_url")
PREFIX = {"key": "sk-or-v1-CANARYk", "plain": "plainCANARYp", "refresh": "refreshCANARYr",
          "config": "configCANARYc", "env": "envCANARYe", "url": "urlpwCANARYu", "config_url": "cfgpwCANARYw"}
SLOTS = ("label", "last_error_reason", "last_error_message", "failure_reason", "unknown", "base_url_path",
         "base_url_user", "config_model", "config_note", "env_note")
FORMS = ("{s}", "upstream said: invalid key {s}.", "https://op:{s}@gw.test/v1", "https://gw.test/{s}/v1",
         '{{"error": "{s}"}}')


@dataclass
class Plan:
    secrets: dict[str, str]
    places: list[tuple[str, str, str]] = field(default_factory=list)   # (slot, kind, form)

    def texts(self, slot: str) -> list[str]:
        return [form.format(s=self.secrets[kind]) for where, kind, form in self.places if where == slot]

    def first(self, slot: str, default: str) -> str:
        got = self.texts(slot)
        return " ".join(got) if got else default


@st.composite
def secret_homes(draw: st.DrawFn) -> Plan:
    seed = draw(st.integers(0, 2**64))   # distinct, random-looking bodies however hypothesis shrinks
    secrets = {kind: PREFIX[kind] + hashlib.sha256(f"{kind}:{seed}".encode()).hexdigest()[:24] for kind in KINDS}
    places = draw(st.lists(st.tuples(st.sampled_from(SLOTS), st.sampled_from(KINDS), st.sampled_from(FORMS)),
                           min_size=1, max_size=8))
    return Plan(secrets, places)


def fixed_plan() -> Plan:
    """Every secret in every slot, bare: what the negative controls run on."""
    secrets = {kind: PREFIX[kind] + hashlib.sha256(kind.encode()).hexdigest()[:24] for kind in KINDS}
    return Plan(secrets, [(slot, kind, "{s}") for slot in SLOTS for kind in KINDS])


def plant(home: Home, plan: Plan) -> None:
    s = plan.secrets
    text = plan.first
    rows = [
        make_row("aaaaaa", label="primary", priority=0, token=s["key"],
                 base_url=f"https://bob:{s['url']}@proxy.test/v1"),
        make_row("bbbbbb", label="oauth", priority=1, token=s["plain"], auth_type="oauth",
                 refresh_token=s["refresh"], source="manual:oauth"),
        make_row("cccccc", label=text("label", "third")[:200], priority=2, source="env:MY_TOKEN",
                 last_status="exhausted", last_status_at=None, last_error_code=429,
                 last_error_reason=text("last_error_reason", "rate_limit_exceeded"),
                 last_error_message=text("last_error_message", "slow down"),
                 failure_reason=text("failure_reason", "rate_limit"),
                 base_url="https://" + text("base_url_user", "svc") + "@api.test/" + text("base_url_path", "v1"),
                 note={"unknown": plan.texts("unknown")}),
    ]
    write_store(home, make_store({"openrouter": rows}, extra=plan.texts("unknown")))
    home.config.write_text(
        "model:\n  provider: openrouter\n"
        "fallback_providers:\n"
        f"  - provider: custom\n    model: {json.dumps(text('config_model', 'local-model'))}\n"
        f"    base_url: https://carol:{s['config_url']}@local.test/v1\n"
        f"    api_key: {s['config']}\n"
        f"notes: {json.dumps(plan.texts('config_note'))}\n")
    home.env.write_text(f"MY_TOKEN={s['env']}\n" + "".join(
        f"NOTE_{i}={json.dumps(t)}\n" for i, t in enumerate(plan.texts("env_note"))))


def leaks(text: str, plan: Plan) -> list[str]:
    found = []
    for kind, secret in plan.secrets.items():
        body = secret.split("CANARY", 1)[1][1:]
        if secret in text or any(body[i:i + 10] in text for i in range(0, len(body) - 9, 7)):
            found.append(kind)
    return found


STORED_AT = ("auth.json", "config.yaml", ".env")


def file_leaks(home: Home, plan: Plan) -> dict[str, list[str]]:
    """Secrets found in a file under the home other than where they are stored."""
    out: dict[str, list[str]] = {}
    for p in home.root.rglob("*"):
        if not p.is_file() or p.is_symlink():
            continue
        # The store and its copies (backups, kept-aside files) and the operator history, whose
        # folder keeps whole copies of auth.json and config.yaml as they were (0700/0600, a copy
        # holds what the store held: store.ops.history).
        if p.name.startswith(STORED_AT) or p.parent.name == history.HISTORY_DIR:
            continue
        got = leaks(p.read_bytes().decode("utf-8", "replace"), plan)
        if got:
            out[str(p.relative_to(home.root))] = got
    return out


def everything_in(home: Home) -> str:
    """The text of every file under the home (for a quick look when a test fails)."""
    return "\n".join(f"{p}: {p.read_bytes()[:2000]!r}" for p in home.root.rglob("*") if p.is_file())

