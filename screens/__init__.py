"""One module per screen or modal. `all_screens()` lists them for keymap validation."""


def all_screens() -> list[type]:
    """Every screen class (imported lazily: the package itself stays import-light)."""
    from .add_key import AddKeyScreen
    from .audit_view import AuditScreen
    from .config_view import ConfigScreen
    from .confirm import ConfirmScreen
    from .cooldown import CooldownScreen
    from .dashboard import DashboardScreen
    from .detail import DetailScreen
    from .fallback_edit import FallbackAddScreen
    from .help import HelpScreen
    from .probe_result import ProbeResultScreen
    from .routing_edit import RoutingEditScreen
    from .strategy import StrategyScreen

    return [AddKeyScreen, AuditScreen, ConfigScreen, ConfirmScreen, CooldownScreen, DashboardScreen,
            DetailScreen, FallbackAddScreen, HelpScreen, ProbeResultScreen, RoutingEditScreen, StrategyScreen]
