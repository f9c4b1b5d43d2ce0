"""What each key costs (#29): the usage every answer reports, priced, kept in a ledger.

- :mod:`store.usage.record`: the one value an answer's usage becomes (:class:`Spent`), and
  the ledger's file name and table, shared by every reader and writer of the ledger.
- :mod:`store.usage.tally`: known cost per row and per pool, today and this month, in
  memory (a listener of the usage feed, seeded from the ledger): what budgets are checked against.

The ledger is hermes-admin's own SQLite database beside the home
(``hermes-admin-usage.sqlite``), written behind and never under ``auth.lock``; it holds no
secret, only fingerprints.
"""
