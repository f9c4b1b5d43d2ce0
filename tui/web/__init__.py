"""``hermes-admin web``: the same console in a browser, one console process per session.

An entry point (the layer of ``tui.app``, ``tui.cli`` and ``tui.demo``): it may import
``tui.app`` (the console it serves) and ``tui.cli`` (argument helpers), never ``screens``
directly.

- ``access``: one-time tokens, session cookies, and the gate (Host, Origin, fetch site,
  cookie) every request and WebSocket upgrade passes;
- ``server``: textual-serve's Server, extended through its public API with the gate,
  idle and session limits, and a socket handler that keeps the console's focus;
- ``page``: the console's page and the short message pages;
- ``child``: the console process of one session (writes audited ``via: web`` with the
  browser's address).
"""
