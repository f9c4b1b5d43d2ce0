"""The console's screens and modals, one module per screen, and their one registry.

May import ``store``, Textual and the ``tui`` helpers (``tui.widgets``, ``tui.format``,
``tui.texts``, ``tui.timeparse``, ``tui.writer``, ``tui.keymap``, ``tui.clock``,
``tui.host``). Never ``tui.app``, ``tui.cli`` or ``tui.demo``: only the app shell
(``tui.app``) imports this package, and screens reach the app through the typed
``tui.host.Host`` protocol.
"""

from __future__ import annotations

from tui.widgets import CredentialTable

from .add_key import AddKeyScreen
from .audit_view import AuditScreen
from .config_view import ConfigScreen
from .confirm import ConfirmScreen
from .cooldown import CooldownScreen
from .dashboard import DashboardScreen
from .detail import DetailScreen
from .fallback_edit import FallbackAddScreen
from .findings_view import FindingsScreen
from .fleet_view import FleetScreen
from .help import HelpScreen
from .probe_result import ProbeResultScreen
from .profile_config_view import ProfileConfigScreen
from .profile_picker import CommandLine, ProfilePicker
from .profiles_view import ProfilesDashboard
from .proxy_view import ProxyScreen
from .routing_edit import RoutingEditScreen
from .strategy import StrategyScreen

# The registry: every scope with keys, under the name `?` help lists it by, in help's order.
SCOPES: tuple[tuple[str, type], ...] = (
    ("dashboard", DashboardScreen), ("table", CredentialTable), ("detail", DetailScreen),
    ("config", ConfigScreen), ("confirm", ConfirmScreen), ("add key", AddKeyScreen),
    ("cooldown", CooldownScreen), ("strategy", StrategyScreen), ("fallback", FallbackAddScreen),
    ("routing", RoutingEditScreen), ("probe", ProbeResultScreen), ("audit", AuditScreen),
    ("proxy", ProxyScreen), ("fleet", FleetScreen), ("help", HelpScreen),
    ("profiles", ProfilesDashboard), ("profile picker", ProfilePicker),
    ("command line", CommandLine), ("findings", FindingsScreen), ("profile config", ProfileConfigScreen),
)


def all_screens() -> list[type]:
    """Every screen class of the registry (keymap validation)."""
    return [cls for _name, cls in SCOPES if cls is not CredentialTable]
