"""The console's screens and modals, one module per screen, and their one registry.

May import ``store``, Textual, ``tui.widgets``, ``tui.services`` and ``tui.text``. Never
``tui.app``, ``tui.cli`` or ``tui.demo``: only the app shell imports this package, and
screens reach the app through the typed ``tui.services.host.Host`` protocol.

The registry names each screen by where its class lives, and :func:`screen` imports a
screen's module the first time it is opened: the console's first paint imports the
dashboard and nothing it does not show (issue 28). :func:`scopes` imports them all, for
`?` help and keymap validation.
"""

from __future__ import annotations

import importlib
from functools import cache

# The registry: every scope with keys, under the name `?` help lists it by, in help's order,
# and where its class lives ("module:Class"), imported when first asked for.
WHERE: tuple[tuple[str, str], ...] = (
    ("dashboard", "screens.dashboard:DashboardScreen"), ("table", "tui.widgets.credential_table:CredentialTable"),
    ("detail", "screens.detail:DetailScreen"), ("config", "screens.config_view:ConfigScreen"),
    ("confirm", "screens.confirm:ConfirmScreen"), ("add key", "screens.add_key:AddKeyScreen"),
    ("cooldown", "screens.cooldown:CooldownScreen"), ("strategy", "screens.strategy:StrategyScreen"),
    ("fallback", "screens.fallback_edit:FallbackAddScreen"),
    ("routing", "screens.routing_edit:RoutingEditScreen"),
    ("probe", "screens.probe_result:ProbeResultScreen"), ("audit", "screens.audit_view:AuditScreen"),
    ("proxy", "screens.proxy_view:ProxyScreen"), ("proxy pin", "screens.proxy_view:RouteScreen"),
    ("monitor", "screens.monitor_view:MonitorScreen"), ("fleet", "screens.fleet_view:FleetScreen"),
    ("help", "screens.help:HelpScreen"),
    ("profiles", "screens.profiles_view:ProfilesDashboard"),
    ("profile picker", "screens.profile_picker:ProfilePicker"),
    ("command line", "screens.command_line:CommandLine"),
    ("findings", "screens.findings_view:FindingsScreen"),
    ("profile config", "screens.profile_config_view:ProfileConfigScreen"),
    ("columns", "screens.column_chooser:ColumnChooser"),
    ("messages", "screens.message_log:MessagesScreen"), ("requests", "screens.request_log:RequestLogScreen"),
)
_BY_NAME = dict(WHERE)


@cache
def screen(name: str) -> type:
    """The class registered under *name* (``"config"``, ``"confirm"``...), its module imported
    on first use. An unknown name is a KeyError: the registry is the list of screens."""
    module, _, attr = _BY_NAME[name].partition(":")
    return vars(importlib.import_module(module))[attr]


def scopes() -> tuple[tuple[str, type], ...]:
    """Every (name, class) of the registry in help's order, every module imported."""
    return tuple((name, screen(name)) for name, _where in WHERE)


def all_screens() -> list[type]:
    """Every screen class of the registry (keymap validation); not the table widget."""
    return [cls for name, cls in scopes() if name != "table"]


def __getattr__(name: str) -> object:
    # ``screens.SCOPES``: the whole registry, imported only when someone asks for it.
    if name == "SCOPES":
        return scopes()
    raise AttributeError(f"module 'screens' has no attribute {name!r}")
