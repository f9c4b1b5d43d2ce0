"""Snapshots of the dashboard as a NO_COLOR terminal and a 16-colour terminal show it.

The cursor sits on an ok row so the dead row is drawn in its own style, not the cursor's.
Textual exports snapshots in truecolor; the 16-colour one adds a line filter that does what
a 16-colour terminal does: each colour becomes the nearest of the 16 (Rich's downgrade) and
is shown as Rich's default terminal palette draws it. Regenerate with
``pytest tests/console/test_snapshots_colour.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

import pytest
from rich.color import Color, ColorSystem
from rich.segment import Segment
from rich.style import Style
from rich.terminal_theme import DEFAULT_TERMINAL_THEME
from textual.color import Color as TColor
from textual.filter import LineFilter

from tests.tui_sample import make_app, write_sample
from tui.widgets import CredentialTable

pytestmark = pytest.mark.usefixtures("utc")


def _sixteen(color: Color | None) -> Color | None:
    if color is None or color.is_default:
        return color
    return Color.from_triplet(color.downgrade(ColorSystem.STANDARD).get_truecolor(DEFAULT_TERMINAL_THEME))


class SixteenColours(LineFilter):
    """Every colour as a 16-colour terminal shows it."""

    def apply(self, segments: list[Segment], background: TColor) -> list[Segment]:
        return [Segment(text, None if style is None else
                        style + Style.from_color(_sixteen(style.color), _sixteen(style.bgcolor)), control)
                for text, style, control in segments]


async def _cursor_on_ok(pilot) -> None:
    await pilot.pause()
    pilot.app.dashboard.query_one(CredentialTable).move_to_key("cred\x1fopenrouter\x1fa1b2c3")
    await pilot.pause()


def test_no_color_dead_reads(snap_compare, monkeypatch, home_at) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    home = home_at("nocolor-dead")
    write_sample(home)
    assert snap_compare(make_app(home), terminal_size=(100, 16), run_before=_cursor_on_ok)


def test_sixteen_colours(snap_compare, home_at) -> None:
    home = home_at("sixteen")
    write_sample(home)
    app = make_app(home)
    # Test only: App has no public hook for a line filter; the filter list is where Textual's
    # own NO_COLOR and ANSI filters live.
    app._filters.append(SixteenColours())
    assert snap_compare(app, terminal_size=(100, 16), run_before=_cursor_on_ok)
