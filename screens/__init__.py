"""The console's screens and modals, one module per screen, and their one registry.

May import ``store``, Textual, ``tui.widgets``, ``tui.services`` and ``tui.text``. Never
``tui.app``, ``tui.cli`` or ``tui.demo``: only the app shell imports this package, and
screens reach the app through the typed ``tui.services.host.Host`` protocol.
"""

from __future__ import annotations

from screens.add_key import AddKeyScreen
from screens.audit_view import AuditScreen
from screens.column_chooser import ColumnChooser
from screens.command_line import CommandLine
from screens.config_view import ConfigScreen
from screens.confirm import ConfirmScreen
from screens.cooldown import CooldownScreen
from screens.dashboard import DashboardScreen
from screens.detail import DetailScreen
from screens.fallback_edit import FallbackAddScreen
from screens.findings_view import FindingsScreen
from screens.fleet_view import FleetScreen
from screens.help import HelpScreen
from screens.message_log import MessagesScreen
from screens.monitor_view import MonitorScreen
from screens.probe_result import ProbeResultScreen
from screens.profile_config_view import ProfileConfigScreen
from screens.profile_picker import ProfilePicker
from screens.profiles_view import ProfilesDashboard
from screens.proxy_view import ProxyScreen, RouteScreen
from screens.request_log import RequestLogScreen
from screens.routing_edit import RoutingEditScreen
from screens.strategy import StrategyScreen
from tui.widgets import CredentialTable

# The registry: every scope with keys, under the name `?` help lists it by, in help's order.
SCOPES: tuple[tuple[str, type], ...] = (
    ("dashboard", DashboardScreen), ("table", CredentialTable), ("detail", DetailScreen),
    ("config", ConfigScreen), ("confirm", ConfirmScreen), ("add key", AddKeyScreen),
    ("cooldown", CooldownScreen), ("strategy", StrategyScreen), ("fallback", FallbackAddScreen),
    ("routing", RoutingEditScreen), ("probe", ProbeResultScreen), ("audit", AuditScreen),
    ("proxy", ProxyScreen), ("proxy pin", RouteScreen), ("monitor", MonitorScreen), ("fleet", FleetScreen),
    ("help", HelpScreen),
    ("profiles", ProfilesDashboard), ("profile picker", ProfilePicker),
    ("command line", CommandLine), ("findings", FindingsScreen), ("profile config", ProfileConfigScreen),
    ("columns", ColumnChooser),
    ("messages", MessagesScreen), ("requests", RequestLogScreen),
)


def all_screens() -> list[type]:
    """Every screen class of the registry (keymap validation)."""
    return [cls for _name, cls in SCOPES if cls is not CredentialTable]
