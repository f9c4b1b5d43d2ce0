"""`hermes-admin demo`: the console on a generated home with live simulated agents.

- ``launch``: seeds the home, starts the children, opens the dashboard, cleans up.
- ``agent``: a simulated agent process using ``store.agent.runtime`` (``python -m tui.demo.agent``).
- ``fake_provider`` / ``fake_script``: the fake OpenAI-style provider the agents and probes call.

May import ``store`` and the app shell (``tui.app.console``, to open the dashboard). Nothing outside
``tui.cli`` and the tests imports this package.
"""
