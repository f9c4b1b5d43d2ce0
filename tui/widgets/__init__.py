"""Reusable widgets of the console: the credential table, status lines, events log, the flash
line and its message log (``tui.widgets.flash``).

May import ``store``, Textual and the ``tui`` text helpers (``tui.text.format``, ``tui.text.sentences``);
never ``screens``, ``tui.app.console``, ``tui.cli`` or ``tui.demo``. The credential table is a Line API
``ScrollView`` on Textual's public API only (tests/project/test_private_api.py fails on a private import),
one class that owns its parts (``table_rows``, ``table_cells``, ``table_clock``, ``table_paint``,
``table_layout``, ``table_cursor``), each holding its own state. The events log
(``tui.widgets.events_log``) is imported from its module when first shown, not from here: its
``RichLog`` pulls ``rich.pretty`` in, which the first paint does not need.
"""

from tui.widgets.credential_table import CredentialTable
from tui.widgets.status import Banner, EmptyState, StatusBar

__all__ = ["Banner", "CredentialTable", "EmptyState", "StatusBar"]
