"""What each key costs (#29): the usage every answer reports, priced, kept in a ledger.

- :mod:`store.usage.record`: the one value an answer's usage becomes (:class:`Spent`), and
  the ledger's file name and table, shared by every reader and writer of the ledger.

The ledger is hermes-admin's own SQLite database beside the home
(``hermes-admin-usage.sqlite``), written behind and never under ``auth.lock``; it holds no
secret, only fingerprints.
"""
