"""hermes-admin's front ends over ``store``, in layers (pyproject's import-linter contract).

- ``app/``, ``cli/``, ``demo/``: entry points. The App shell (the console, the root console,
  the screen registry, session end, the keymap, ``app.tcss``), the headless CLI with its
  long-running verbs, and ``hermes-admin demo``. Only ``app`` imports ``screens``.
- ``screens`` (a top-level package): one module per screen or modal.
- ``widgets/`` and ``services/``: what screens use. Reusable widgets; the host protocol,
  the writer, write feedback, the proxy/fleet/root feeds, messages and the clock.
- ``text/``: words and forms shared by the CLI and the console.
"""
