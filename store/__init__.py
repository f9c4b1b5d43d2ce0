"""hermes-admin's store layer: the Hermes credential store, its lock and its rules.

The auth.json core is flat here: ``errors``, ``paths``, ``model`` (row and document shapes),
``shape`` (what we refuse to write over), ``safeio`` (opening files without trusting their
names), ``authfile`` (strict reads, atomic writes), ``store_index`` (re-reading only the
values whose bytes moved), ``lock`` (the Hermes flock) and ``transaction`` (lock, fresh read,
apply, atomic write, release). The rest is grouped by role: ``ops``, ``pools``,
``redaction``, ``config``, ``watch``, ``profiles``, ``dialects``, ``agent``, ``proxy``, ``fleet``
and ``monitor``.

Shared by the CLI, the console, the proxy, the fleet daemon and the agents' runtime. May
import the standard library, filelock, PyYAML, ruamel.yaml, watchfiles, aiohttp (proxy),
redis-py (fleet), prometheus_client and Apprise (monitor); never Textual, ``tui`` or
``screens`` (pyproject's import-linter contract, checked by tests/project/test_layers.py).
Import each name from the module that defines it: no package re-exports.
"""
