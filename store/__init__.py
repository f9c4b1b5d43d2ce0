"""hermes-admin's store layer: the Hermes credential store, its lock and its rules.

The auth.json core is flat here: ``errors``, ``paths`` (a home's files, a profile's place
in its root), ``model`` (row and document shapes), ``shape`` (what we refuse to write over),
``safeio`` (opening files without trusting their names), ``envelope`` (Hermes's encrypted
store, recognised and refused), ``authfile`` (strict reads, atomic writes; a symlinked auth.json
is read, never written), ``store_index`` (re-reading only the values whose bytes moved), ``lock`` (the Hermes
flock), ``transaction`` (lock, fresh read, apply, atomic write, release), ``outside`` (values
from outside, checked once), ``envfile`` (a home's ``.env``, read strictly), ``yamlguard``
(YAML alias and depth bombs, refused before a parser builds a node), ``durations`` (the one
reader of ``90s``/``1h30m``/``6m0s``) and ``pids`` (whether the process a file names is
there). The rest is grouped by
role, in layers that import only downwards (pyproject's ``store-layers`` contract):
``monitor`` > ``fleet | proxy`` > ``profiles`` > ``ops | watch`` > ``agent`` > ``config`` >
``pools`` > ``redaction`` > ``dialects`` > the core (``a | b``: neither imports the other).

Shared by the CLI, the console, the proxy, the fleet daemon and the agents' runtime. May
import the standard library, filelock, PyYAML, ruamel.yaml, watchfiles, aiohttp (proxy),
redis-py (fleet), prometheus_client and Apprise (monitor); never Textual, ``tui`` or
``screens`` (pyproject's import-linter contract, checked by tests/project/test_layers.py).
Import each name from the module that defines it: no package re-exports.
"""
