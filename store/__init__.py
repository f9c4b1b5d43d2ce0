"""hermes-admin's store layer: the Hermes credential store, its lock and its rules.

Shared by the CLI, the TUI and the agent runtime. Never imports the UI.
"""

from .errors import BadInput, ConfigUnreadable, HermesAdminError, LockTimeout, StoreUnreadable
from .paths import Home, resolve_home
from .transaction import apply, skip_write, transaction

__all__ = [
    "BadInput", "ConfigUnreadable", "HermesAdminError", "Home", "LockTimeout",
    "StoreUnreadable", "apply", "resolve_home", "skip_write", "transaction",
]
