"""Reusable widgets of the console: the credential table, status lines, events log.

May import ``store``, Textual and the ``tui`` text helpers (``tui.format``, ``tui.texts``);
never ``screens``, ``tui.app``, ``tui.cli`` or ``tui.demo``. The credential table is a Line API
``ScrollView`` on Textual's public API only (tests/test_private_api.py fails on a private import).
"""

from .credential_table import CredentialTable
from .events_log import EventsLog
from .status import Banner, EmptyState, StatusBar

__all__ = ["Banner", "CredentialTable", "EmptyState", "EventsLog", "StatusBar"]
