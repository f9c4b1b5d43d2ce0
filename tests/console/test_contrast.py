"""Readable without colour: every state's style has a WCAG contrast ratio of at least 4.5:1
against the table's background, in 16 colours, in 256 colours and under NO_COLOR.

The colours are the ones Textual would draw, computed with its own public pieces: the
table's background from a running app, ANSI names mapped through the app's ANSI theme
(``ANSIToTruecolor``), NO_COLOR through ``Monochrome`` (what Textual applies), then Rich's
downgrade to the terminal's colour system; the 16 colours read as Rich's default
terminal palette, the 256 as the xterm palette.
"""

from __future__ import annotations

import pytest
from rich.color import Color, ColorSystem
from rich.segment import Segment
from rich.style import Style
from rich.terminal_theme import DEFAULT_TERMINAL_THEME
from textual.color import Color as TColor
from textual.filter import ANSIToTruecolor, Monochrome

from store.paths import Home
from tests.tui_sample import app_for, table_of, write_sample
from tui.text.format import STATUS_STYLE, status_word

MINIMUM = 4.5
SYSTEMS = {"16 colours": ColorSystem.STANDARD, "256 colours": ColorSystem.EIGHT_BIT,
           "truecolor": ColorSystem.TRUECOLOR}


def luminance(rgb: tuple[int, int, int]) -> float:
    """WCAG 2 relative luminance."""
    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = rgb
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def ratio(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def on_terminal(color: Color, system: ColorSystem) -> tuple[int, int, int]:
    """The RGB a terminal of *system* shows for *color*."""
    return tuple(color.downgrade(system).get_truecolor(DEFAULT_TERMINAL_THEME))  # type: ignore[return-value]


def drawn(style: str, fg: Color, bg: Color, ansi_theme, no_color: bool) -> tuple[Color, Color]:
    """(foreground, background) of a cell in *style* as Textual's filters leave it."""
    seg = [Segment("x", Style(color=fg, bgcolor=bg) + Style.parse(style))]
    back = TColor.from_rich_color(bg)
    seg = ANSIToTruecolor(ansi_theme).apply(seg, back)
    if no_color:
        seg = Monochrome().apply(seg, back)
    out = seg[0].style
    assert out is not None and out.color is not None and out.bgcolor is not None
    if out.reverse:
        return out.bgcolor, out.color
    return out.color, out.bgcolor


def contrast(style: str, fg: Color, bg: Color, ansi_theme, no_color: bool, system: ColorSystem) -> float:
    f, b = drawn(style, fg, bg, ansi_theme, no_color)
    return ratio(on_terminal(f, system), on_terminal(b, system))


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
async def test_every_state_has_enough_contrast(tmp_home: Home, monkeypatch, no_color: bool) -> None:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.no_color is no_color
        table = table_of(app)
        _, _, bg, fg = table.colors       # (parent bg, parent fg, own bg, own fg)
        theme = app.ansi_theme
    bg_rich, fg_rich = bg.rich_color, fg.rich_color
    low = []
    for state, style in STATUS_STYLE.items():
        for name, system in SYSTEMS.items():
            r = contrast(style, fg_rich, bg_rich, theme, no_color, system)
            if r < MINIMUM:
                low.append(f"{status_word(state)} ({style}) in {name}: {r:.2f}")
    assert low == []
    # Negative control: the style the issue found (red, 237 on 235 under NO_COLOR) fails here.
    old = contrast("bold red", fg_rich, bg_rich, theme, True, ColorSystem.EIGHT_BIT)
    assert old < MINIMUM


def test_the_ratio_itself() -> None:
    assert ratio((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert ratio((1, 2, 3), (1, 2, 3)) == pytest.approx(1.0)
    grey237 = on_terminal(Color.from_ansi(237), ColorSystem.EIGHT_BIT)
    grey235 = on_terminal(Color.from_ansi(235), ColorSystem.EIGHT_BIT)
    assert ratio(grey237, grey235) < 1.5          # the "✖ dead" under NO_COLOR
