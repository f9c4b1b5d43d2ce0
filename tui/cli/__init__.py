"""The headless CLI, `hermes-admin VERB`: one module per verb family.

- ``entry``: the parser and :func:`main` (the console script); no verb opens the dashboard.
- ``verbs``: the verb index (which module registers each verb; a verb's module is imported
  only when its verb is on the command line), the parser class and the common options.
- ``common``: home resolution, argument helpers, confirmation, the secrets seen on this
  command line, and the one way a verb writes (``store.ops.write.perform``).
- ``store_verbs`` (auth.json), ``history_verbs``, ``config_verbs`` (config.yaml), ``probe``,
  ``profiles``, ``fleet``, ``proxy``, ``monitor``; ``boundary`` and ``guard``.

Every field from outside (store, config, status files, providers) is printed through
``tui.text.shown.shown``, the console's funnel: one line stays one line.

May import ``store`` and the ``tui`` text helpers (``tui.text``); the dashboard
(``tui.app.console``) and the demo (``tui.demo``) only when their verb runs. Never ``screens``
or Textual.
"""

from tui.cli.entry import main as main
