"""hermes-admin's own settings file: its name beside the home and its size bound.

Apart from :mod:`store.config.settings` (the whole schema: budgets, the proxy's, the
ledger's) so that a reader of one section, such as the console's remembered view
(:mod:`store.config.console_view`, read before the console's first paint), loads none of it.
"""

SETTINGS_FILE = "hermes-admin.yaml"
SETTINGS_CAP = 256 * 1024
