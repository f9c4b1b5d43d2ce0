"""The headless CLI, `hermes-admin VERB`: one module per verb family.

- ``entry``: the parser and :func:`main` (the console script); no verb opens the dashboard.
- ``common``: home resolution, argument helpers, confirmation, the secrets seen on this
  command line, and the one way a verb writes (``store.write.perform``).
- ``store_verbs`` (auth.json), ``config_verbs`` (config.yaml), ``probe``.

May import ``store`` and the ``tui`` text helpers (``tui.format``, ``tui.texts``,
``tui.timeparse``); the dashboard (``tui.app``) and the demo (``tui.demo``) only when
their verb runs. Never ``screens`` or Textual.
"""

from .entry import main as main
