"""hermes-admin's store layer: the Hermes credential store, its lock and its rules.

auth.json (``authfile``, ``lock``, ``transaction``), config.yaml (``config``: ``config_read``
and ``config_edit``), ``.env``, the operator actions and their audit log, the one
write-and-audit path (``write``), the views and the probe report every surface shows, the
watcher, and what an agent does with a pool (``runtime``, ``probe``, ``refresh``).

Shared by the CLI, the console and the agents' runtime. May import the standard library,
filelock, PyYAML, ruamel.yaml and watchfiles; never Textual, ``tui`` or ``screens``
(pyproject's import-linter contract, checked by tests/test_layers.py).
"""

from .errors import BadInput, ConfigUnreadable, HermesAdminError, LockTimeout, StoreUnreadable
from .paths import Home, resolve_home
from .transaction import apply, skip_write, transaction

__all__ = [
    "BadInput", "ConfigUnreadable", "HermesAdminError", "Home", "LockTimeout",
    "StoreUnreadable", "apply", "resolve_home", "skip_write", "transaction",
]
