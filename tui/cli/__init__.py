"""The headless CLI, `hermes-admin VERB`: one module per verb family.

- ``entry``: the parser and :func:`main` (the console script); no verb opens the dashboard.
- ``common``: home resolution, argument helpers, confirmation, the secrets seen on this
  command line, and the one way a verb writes (``store.ops.write.perform``).
- ``store_verbs`` (auth.json), ``config_verbs`` (config.yaml), ``probe``.

May import ``store`` and the ``tui`` text helpers (``tui.text.format``, ``tui.text.sentences``,
``tui.text.durations``); the dashboard (``tui.app.console``) and the demo (``tui.demo``) only when
their verb runs. Never ``screens`` or Textual.
"""

from tui.cli.entry import main as main
