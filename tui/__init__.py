"""hermes-admin's front ends over ``store``.

- ``app`` (+ ``app.tcss``, ``messages``): the Textual app shell; the only importer of ``screens``.
- ``cli/``: the headless CLI and the console script; ``demo/``: ``hermes-admin demo``.
- helpers the screens may use: ``widgets/``, ``writer`` (the console's write worker),
  ``host`` (what screens may ask of the app), ``keymap``, ``clock``, ``format``, ``texts``,
  ``timeparse``. These import ``store`` and Textual, never ``screens``, ``app``, ``cli`` or ``demo``.
"""
