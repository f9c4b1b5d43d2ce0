"""Operator-facing sentences shared by the CLI and the dashboard, so both say the same thing."""

from __future__ import annotations

STRATEGY_HELP = {
    "fill_first": "use the first available key until it is benched (default)",
    "round_robin": "rotate: each pick moves the key to the back of the order",
    "random": "pick any available key at random",
    "least_used": "pick the available key with the fewest requests",
}

READ_ONLY = "read-only: started with --read-only"
READ_ONLY_WEB = "read-only: hermes-admin web was started without --allow-writes"

RESET_WARNING = (
    "A reset is local: it does not give the provider's quota back. The next request may be "
    "benched again at once."
)
RESET_LIVE_HERMES = (
    "It stamps status_cleared_at so a newer Hermes respects it; a live Hermes 0.19.0 process "
    "that still remembers the cooldown may write it back until it reloads."
)
SHORTEN_WARNING = (
    "These keys are benched until later than the cooldown you chose (often the provider's own "
    "reset). Shortening replaces that bench: the key may be picked again before the provider "
    "reopens it. The previous code and reason stay in the audit line."
)
REMOVE_WARNING = (
    "A running agent that still holds this row in memory may write it back until it reloads."
)
REMOVE_SEEDED = (
    "Its source {source} is seeded by Hermes: it will be added to suppressed_sources so seeding "
    "does not recreate it (adding a key to the pool later clears that)."
)
POOL_KEY_GUIDE = (
    "A provider id in lower case (openrouter, anthropic, openai-codex, nous, xai...), or "
    "custom:<name> for an OpenAI-compatible endpoint (lower case, dashes for spaces: "
    "custom:my-local-server)."
)
