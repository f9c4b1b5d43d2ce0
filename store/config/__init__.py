"""config.yaml and .env: strict reads, comment-keeping edits, and the views built on them.

Reading: ``read`` (what Hermes reads, no lock, never writes), ``sections`` (routing,
auxiliary chains, TTLs...), ``yamlread``, ``yamlguard`` (alias and depth bombs),
``envfile``, ``hermes_code`` (which Hermes generation the home's checkout is),
``providers`` (Hermes's provider registry as data), ``agent_view`` (what an
agent process needs, re-read when the file changes) and ``profile_view`` (delegation, cron,
gateways). Editing: ``edit``, ``yamledit`` and ``yamlcas`` (never replace a file that changed
under us). A read-only caller imports only the reading modules and never loads ruamel.yaml.
Imports the store core and ``pools``.
"""
