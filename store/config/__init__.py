"""config.yaml: strict reads, comment-keeping edits, and the views built on them.

Reading: ``read`` (what Hermes reads, no lock, never writes), ``sections`` (routing,
auxiliary chains, TTLs...), ``yamlread`` (on the core's ``yamlguard``: alias and depth
bombs; ``.env`` is read by the core's ``envfile``), ``hermes_code`` (which Hermes
generation the home's checkout is), ``providers`` (Hermes's provider registry as data),
``agent_view`` (what an agent process needs, re-read when the file changes) and
``profile_view`` (delegation, cron, gateways). Editing: ``edit``, ``yamledit`` and
``yamlcas`` (never replace a file that changed under us; an operator write in progress keeps
the file as it was through the hook ``yamlcas.keeping`` that ``store.ops.history``
installs). A read-only caller imports only the reading modules and never loads ruamel.yaml.
Imports the store core, ``redaction`` and ``pools``; never ``ops`` (the layers of store/).
"""
