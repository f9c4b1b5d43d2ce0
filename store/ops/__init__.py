"""Operator writes: the actions, the one write-and-audit path, and what they check.

``actions`` (pure changes of a document a transaction yielded), ``write`` (run a change,
stamp it, audit it), ``audit`` (the JSON-lines record), ``bounds`` and ``textcheck`` (the
numbers and words an operator types), ``probe_report`` (one reopen probe, worded and
audited once for the CLI and the console). Imports the store core, ``pools``,
``redaction``, ``config`` and ``agent``.
"""
