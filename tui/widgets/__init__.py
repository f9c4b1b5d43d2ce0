"""Reusable widgets of the console: the credential table, status lines, events log."""

from .credential_table import CredentialTable
from .events_log import EventsLog
from .status import Banner, EmptyState, StatusBar

__all__ = ["Banner", "CredentialTable", "EmptyState", "EventsLog", "StatusBar"]
