"""The docs say what the code does: the keys tables match the bindings, and every relative
link in README.md and docs/*.md leads to a file (and a heading) that exists.

A keys table is a Markdown table whose header is ``| key | does | id |``. Each row names one or
more binding ids; the check (:func:`table_problems`) reads the bindings themselves, from the App
shell and every class of the screen registry (``screens.SCOPES``), and asks of each row:

- every id is a binding's id;
- every key written in the row is a key of one of those bindings (as Textual names it, or with
  the usual symbol: ``↑`` for ``up``, ``esc`` for ``escape``, ``shift+↑``...), and every id has at
  least one of its keys in the row;
- the row's text says what the binding says: every word of each binding's description (the
  word ``?`` help and the footer show) appears in the ``does`` cell.

And of the README's tables together: every dashboard binding the footer shows (``show=True`` on
the App, the dashboard and the root console's dashboard) has a row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.binding import Binding

from screens import SCOPES
from screens.dashboard import DashboardScreen
from screens.profiles_view import ProfilesDashboard
from tui.app.console import HermesAdminApp
from tui.app.root_console import RootApp
from tui.demo.launch import KEYS
from tui.demo.profiles import PROFILE_KEYS

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]

KEYS_HEADER = ("key", "does", "id")
# Textual's key names -> how the docs write them (either form is accepted).
SYMBOLS = {
    "up": "↑", "down": "↓", "left": "←", "right": "→", "pageup": "PgUp", "pagedown": "PgDn",
    "home": "Home", "end": "End", "escape": "esc", "question_mark": "?", "slash": "/",
    "colon": ":", "exclamation_mark": "!", "left_square_bracket": "[", "right_square_bracket": "]",
}
FOOTER_CLASSES = (HermesAdminApp, DashboardScreen, ProfilesDashboard)


@dataclass(frozen=True)
class Bound:
    """One binding id: the keys it answers to (both spellings), its description, whether the
    footer shows it."""

    keys: frozenset[str]
    description: str
    show: bool


def _spellings(key: str) -> set[str]:
    *mods, name = key.split("+")
    return {key, "+".join([*mods, SYMBOLS.get(name, name)])}


def _bindings_of(cls: type) -> list[Binding]:
    """A class's bindings, inherited ones included, as a live instance would have them."""
    out: list[Binding] = []
    for base in reversed(cls.__mro__):
        if "BINDINGS" not in base.__dict__:
            continue
        if not base.__dict__.get("_inherit_bindings", True):
            out = []
        out.extend(Binding.make_bindings(base.__dict__["BINDINGS"] or []))
    return out


def bindings(classes: tuple[type, ...]) -> dict[str, Bound]:
    """Binding id -> what the code binds under it, across *classes*."""
    found: dict[str, Bound] = {}
    for cls in classes:
        for b in _bindings_of(cls):
            if not b.id:
                continue   # one of Textual's own (focus next, copy...): not ours to document
            old = found.get(b.id)
            keys = _spellings(b.key) | (set(old.keys) if old else set())
            found[b.id] = Bound(frozenset(keys), b.description, b.show or bool(old and old.show))
    return found


ALL_CLASSES = (HermesAdminApp, RootApp, *(cls for _where, cls in SCOPES))


# ------------------------------------------------------------------ reading the docs

@dataclass(frozen=True)
class Row:
    where: str
    keys: tuple[str, ...]
    does: str
    ids: tuple[str, ...]


def _ticks(cell: str) -> tuple[str, ...]:
    return tuple(re.findall(r"`([^`]+)`", cell))


def key_rows(text: str, where: str) -> list[Row]:
    """Every row of every ``| key | does | id |`` table in *text*."""
    rows: list[Row] = []
    in_table = False
    for n, line in enumerate(text.splitlines(), 1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            in_table = False
        elif tuple(cells) == KEYS_HEADER:
            in_table = True
        elif in_table and not set(line) <= set("|-: "):
            assert len(cells) == 3, f"{where}:{n}: a keys row has 3 cells: {line}"
            rows.append(Row(f"{where}:{n}", _ticks(cells[0]), cells[1], _ticks(cells[2])))
    return rows


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def table_problems(rows: list[Row], bound: dict[str, Bound]) -> list[str]:
    """What in *rows* the bindings do not bear out (empty: the tables are true)."""
    problems: list[str] = []
    for row in rows:
        if not row.ids:
            problems.append(f"{row.where}: names no binding id")
        known = [bound[i] for i in row.ids if i in bound]
        for i in row.ids:
            if i not in bound:
                problems.append(f"{row.where}: no binding has the id {i!r}")
        bound_keys = set().union(*(b.keys for b in known)) if known else set()
        for k in row.keys:
            if k not in bound_keys:
                problems.append(f"{row.where}: key {k!r} is not bound to {', '.join(row.ids)}")
        for i in row.ids:
            if i in bound and not bound[i].keys & set(row.keys):
                problems.append(f"{row.where}: {i} is listed without any of its keys "
                                f"({', '.join(sorted(bound[i].keys))})")
            if i in bound and not _words(bound[i].description) <= _words(row.does):
                problems.append(f"{row.where}: {i} is {bound[i].description!r}, which the row does not say")
    return problems


def footer_missing(rows: list[Row], bound: dict[str, Bound]) -> list[str]:
    """The ids the dashboard's footer shows that no row names."""
    listed = {i for r in rows for i in r.ids}
    shown = {i for i, b in bindings(FOOTER_CLASSES).items() if b.show}
    return sorted(shown - listed)


def readme_rows() -> list[Row]:
    return key_rows(README.read_text(encoding="utf-8"), "README.md")


# ------------------------------------------------------------------ the keys tables

def test_the_readme_keys_tables_match_the_bindings() -> None:
    rows = readme_rows()
    assert len(rows) >= 30, "the README's keys tables were not found (header `| key | does | id |`)"
    assert table_problems(rows, bindings(ALL_CLASSES)) == []


def test_every_binding_the_dashboard_footer_shows_is_in_the_readme() -> None:
    assert footer_missing(readme_rows(), bindings(ALL_CLASSES)) == []


@pytest.mark.parametrize("page", [p for p in DOCS if p != README], ids=lambda p: p.name)
def test_the_keys_tables_of_docs_match_the_bindings(page: Path) -> None:
    rows = key_rows(page.read_text(encoding="utf-8"), f"docs/{page.name}")
    assert table_problems(rows, bindings(ALL_CLASSES)) == []


def test_the_docs_have_keys_tables_for_the_other_screens() -> None:
    ids = {i for p in DOCS for r in key_rows(p.read_text(encoding="utf-8"), p.name) for i in r.ids}
    assert {"config.edit", "fleet.bench", "proxy.close"} <= ids


@pytest.mark.parametrize("bad_row, says", [
    ("| `Y` | reset: clear the cooldown | `dashboard.reset` |", "key 'Y' is not bound"),
    ("| `r` | remove the selected row | `dashboard.reset` |", "which the row does not say"),
    ("| `r` | reset: clear the cooldown | `dashboard.rest` |", "no binding has the id"),
    ("| `d` | reset: clear the cooldown | `dashboard.reset` |", "not bound to dashboard.reset"),
    ("| `r` | reset: clear the cooldown | |", "names no binding id"),
])
def test_negative_control_a_wrong_row_fails_the_check(bad_row: str, says: str) -> None:
    text = README.read_text(encoding="utf-8").replace(
        "| `r` | reset: clear the cooldown of the selected or tagged rows", bad_row + "\n| `r` | reset: clear the "
        "cooldown of the selected or tagged rows", 1)
    assert bad_row in text
    problems = table_problems(key_rows(text, "README.md"), bindings(ALL_CLASSES))
    assert any(says in p for p in problems), problems


def test_negative_control_a_footer_key_left_out_is_found() -> None:
    rows = [r for r in readme_rows() if "dashboard.probe" not in r.ids]
    assert footer_missing(rows, bindings(ALL_CLASSES)) == ["dashboard.probe"]


# ------------------------------------------------------------------ links

CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(text: str) -> set[str]:
    """GitHub's anchors for the headings of *text*: lower case, punctuation dropped, spaces to
    dashes; a repeated heading gets -1, -2..."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", CODE.sub(_keep_inline, text), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _keep_inline(m: re.Match[str]) -> str:
    # Fenced blocks go (a `# comment` in one is no heading); inline code keeps its text,
    # since GitHub's anchor for "## `--all-profiles`" is built from it.
    return "" if m.group(0).startswith("```") else m.group(0).strip("`")


def link_problems(page: Path, text: str) -> list[str]:
    """Each relative link of *text* (as if it were *page*) whose file or heading is missing."""
    problems: list[str] = []
    for target in LINK.findall(CODE.sub("", text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue   # https:, mailto:: not ours to check
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            problems.append(f"{page.name}: {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text(encoding="utf-8")):
            problems.append(f"{page.name}: {target}: no such heading in {dest.name}")
    return problems


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    assert link_problems(page, page.read_text(encoding="utf-8")) == []


def test_the_readme_links_every_page_of_docs() -> None:
    text = README.read_text(encoding="utf-8")
    assert [p.name for p in DOCS[1:] if f"(docs/{p.name}" not in text] == []


def test_negative_control_broken_links_are_found() -> None:
    text = ("see [cli](docs/cli.md#exit-codes), [gone](docs/nowhere.md), [bad](docs/cli.md#no-such-heading), "
            "[web](https://example.org/x.md) and `[code](docs/nowhere.md)`")
    assert link_problems(README, text) == [
        "README.md: docs/nowhere.md: no such file",
        "README.md: docs/cli.md#no-such-heading: no such heading in cli.md",
    ]


def test_the_screenshot_shows_no_key_in_clear() -> None:
    svg = (ROOT / "docs" / "screenshot.svg").read_text(encoding="utf-8")
    assert "hermes-admin" in svg and "sk-or-" in svg            # the console, with fingerprints
    assert [name for name, key in {**KEYS, **PROFILE_KEYS}.items() if key in svg] == []
