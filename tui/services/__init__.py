"""What screens use of the app, below the screens and above the store.

``host`` (the typed protocol a screen asks of the app), ``writer`` (the write worker),
``write_feedback`` (what a write says it did), ``proxy_feed``, ``fleet_feed`` and
``root_feed`` (state from the proxy's status files, Redis and a root's watcher),
``messages`` (what a watcher thread posts to the app) and ``clock``. Imports ``store``,
Textual and ``tui.text``; never ``screens`` or the entry points.
"""
