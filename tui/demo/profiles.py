"""The demo's profiles: three teams under the demo home, so the console opens on a root.

- ``team-cheap``: cheap OpenRouter models;
- ``team-premium``: a premium Anthropic primary;
- ``team-local``: a local custom endpoint (``custom:lab-gpu``).

One OpenRouter key is shared by team-cheap and team-premium, and one Anthropic OAuth
grant (its single-use refresh token) was copied into team-premium and team-local: the
two findings an operator of such a host looks for. No agent runs in these profiles.
"""

from __future__ import annotations

from typing import Any

from store.authfile import atomic_write_bytes, ensure_home, serialize
from store.paths import Home

# Demo secrets: obviously fake.
PROFILE_KEYS = {
    "shared_or": "sk-or-v1-demo000000000000000000000SHARED1",
    "cheap_or": "sk-or-v1-demo0000000000000000000000CHEAP2",
    "oauth_at": "sk-ant-oat01-demo00000000000000000COPIED1",
    "oauth_rt": "sk-ant-ort01-demo00000000000000000COPIED1",
    "lab": "lab-demo-key-0000000000000000000000LAB01",
}


def demo_row(rid: str, label: str, priority: int, token: str, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"id": rid, "label": label, "auth_type": "api_key", "priority": priority,
                           "source": "manual", "access_token": token, "last_status": None,
                           "last_status_at": None, "last_error_code": None, "last_error_reason": None,
                           "last_error_message": None, "last_error_reset_at": None, "request_count": 0}
    row.update(fields)
    return row


def _oauth(rid: str) -> dict[str, Any]:
    return demo_row(rid, "claude-team-grant", 0, PROFILE_KEYS["oauth_at"], auth_type="oauth",
                source="claude_code", refresh_token=PROFILE_KEYS["oauth_rt"])


def profiles(now: float) -> dict[str, tuple[dict[str, Any], str]]:
    """name -> (auth.json document, config.yaml text)."""
    shared = demo_row("sh0001", "shared-or", 0, PROFILE_KEYS["shared_or"])
    return {
        "team-cheap": ({"version": 1, "providers": {}, "credential_pool": {
            "openrouter": [dict(shared), demo_row("ch0002", "cheap-or", 1, PROFILE_KEYS["cheap_or"])]}},
            "model:\n  provider: openrouter\n  default: deepseek/deepseek-chat-v3\n"
            "fallback_providers:\n  - provider: openrouter\n    model: qwen/qwen3-32b\n"),
        "team-premium": ({"version": 1, "providers": {}, "credential_pool": {
            "anthropic": [_oauth("op0001")],
            "openrouter": [dict(shared, id="sh0001")]}},
            "model:\n  provider: anthropic\n  default: claude-opus-4-1\n"
            "fallback_providers:\n  - provider: openrouter\n    model: anthropic/claude-sonnet-4\n"
            "delegation:\n  provider: openrouter\n  model: anthropic/claude-sonnet-4\n"),
        "team-local": ({"version": 1, "providers": {}, "credential_pool": {
            "custom:lab-gpu": [demo_row("lab001", "lab-gpu", 0, PROFILE_KEYS["lab"])],
            "anthropic": [_oauth("lo0001")]}},
            "model:\n  provider: custom:lab-gpu\n  default: llama-3.3-70b\n"
            "  base_url: http://127.0.0.1:8080/v1\n"
            "custom_providers:\n  - name: lab-gpu\n    base_url: http://127.0.0.1:8080/v1\n"
            "fallback_providers:\n  - provider: anthropic\n    model: claude-sonnet-4\n"),
    }


def seed_profiles(home: Home, now: float) -> list[str]:
    """Write the three demo profiles under ``<home>/profiles``; return their names."""
    out = []
    for name, (doc, config) in profiles(now).items():
        h = Home(home.root / "profiles" / name)
        ensure_home(h)
        atomic_write_bytes(h.auth, serialize(doc))
        atomic_write_bytes(h.config, config.encode())
        out.append(name)
    return out
