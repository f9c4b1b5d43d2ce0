"""Text shared by the CLI and the console: one wording, one form, one funnel.

``format`` (countdowns, nulls as ``—``, times, status words), ``sentences`` (operator-facing
warnings and help), ``durations`` (``90s``, ``1h30m``, ISO-8601 as operators type them) and
``shown`` (every store, config and audit text passes the redactor and is made inert here) and
``ready`` (a server verb's ready line: stdout refusing it stops the server, exit 1).
Imports only ``store``.
"""
