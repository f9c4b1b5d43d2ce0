"""How the console's dashboard was last left, kept in hermes-admin's own settings
(``<home>/hermes-admin.yaml``, the ``console:`` section; never Hermes's config.yaml)::

    console:
      sort: status          # the sort order (o), and whether it is turned round (O)
      reverse: false
      columns: auto         # auto, wide (w), or the column chooser's list (W)
      folded: [anthropic]   # pools folded under their headers

Only the console reads and writes this section: agents read the rest of the file and never
look at it (:func:`store.config.settings.parse` lets it be). Read strictly: a field that cannot
be used raises ConfigUnreadable naming the file and the field, and the console says so and starts
with its defaults. A save keeps the operator's comments and every other section (ruamel round
trip, re-read before it may replace the file), replaces it only if it is still the file read,
and writes it 0600 through ``atomic_write_bytes(follow_link=False)``: a symlink at the name is
refused, never written through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from store import safeio, yamlguard
from store.authfile import atomic_write_bytes
from store.config.own_file import SETTINGS_CAP, SETTINGS_FILE
from store.config.yamlcas import ConfigChanged, retry_on_change, unchanged_since
from store.config.yamlread import load_tree
from store.errors import ConfigUnreadable, StoreUnreadable
from store.paths import Home

SECTION = "console"
AUTO, WIDE = "auto", "wide"
MAX_NAMES = 1000          # folded pools, chosen columns
MAX_NAME = 200            # one pool or column name
_FIELDS = ("sort", "reverse", "columns", "folded")


@dataclass(frozen=True)
class ConsoleView:
    """The dashboard's view: None for a field never saved (the console's default)."""

    sort: str | None = None
    reverse: bool = False
    columns: str | tuple[str, ...] = AUTO      # AUTO, WIDE or the chosen column keys
    folded: tuple[str, ...] = ()


def _name(value: Any, where: str, path: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_NAME or not value.isprintable():
        raise ConfigUnreadable(path, f"{where}: must be a name of 1 to {MAX_NAME} printable characters")
    return value


def _names(value: Any, where: str, path: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_NAMES:
        raise ConfigUnreadable(path, f"{where}: must be a list of at most {MAX_NAMES} names")
    return tuple(_name(v, f"{where}[{i}]", path) for i, v in enumerate(value))


def parse_view(section: Any, path: Any) -> ConsoleView:
    """The ``console:`` section; ConfigUnreadable naming the field for anything else."""
    if section is None:
        return ConsoleView()
    if not isinstance(section, dict):
        raise ConfigUnreadable(path, f"{SECTION}: must be a mapping ({', '.join(_FIELDS)})")
    for key in section:
        if key not in _FIELDS:
            raise ConfigUnreadable(path, f"{SECTION}.{key!s:.40}: not a setting (known: {', '.join(_FIELDS)})")
    sort = section.get("sort")
    reverse = section.get("reverse", False)
    if not isinstance(reverse, bool):
        raise ConfigUnreadable(path, f"{SECTION}.reverse: must be true or false")
    columns: Any = section.get("columns", AUTO)
    if columns not in (AUTO, WIDE):
        columns = _names(columns, f"{SECTION}.columns", path)
        if not columns:
            raise ConfigUnreadable(path, f"{SECTION}.columns: auto, wide or a list of at least one column")
    return ConsoleView(
        sort=None if sort is None else _name(sort, f"{SECTION}.sort", path), reverse=reverse,
        columns=columns, folded=_names(section.get("folded", []), f"{SECTION}.folded", path))


def _path(home: Home) -> Any:
    return home.root / SETTINGS_FILE


def _read(home: Home) -> tuple[bytes, Any] | None:
    path = _path(home)
    try:
        return safeio.read_checked(path, SETTINGS_CAP, ConfigUnreadable)
    except StoreUnreadable as exc:
        raise ConfigUnreadable(path, exc.reason) from None


def _read_raw(home: Home) -> bytes | None:
    got = _read(home)
    return None if got is None else got[0]


def _plain(raw: bytes, path: Any) -> Any:
    yamlguard.check(raw, path)
    try:
        return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except yaml.YAMLError:
        raise ConfigUnreadable(path, "not valid YAML") from None
    except RecursionError:
        raise ConfigUnreadable(path, "nested too deeply") from None


def read_view(home: Home) -> ConsoleView:
    """The view the console was last left in (defaults when never saved)."""
    raw = _read_raw(home)
    if raw is None:
        return ConsoleView()
    data = _plain(raw, _path(home))
    if data is not None and not isinstance(data, dict):
        raise ConfigUnreadable(_path(home), "must be a mapping")
    return parse_view((data or {}).get(SECTION), _path(home))


def as_section(view: ConsoleView) -> dict[str, Any]:
    """*view* as the ``console:`` section is written."""
    out: dict[str, Any] = {}
    if view.sort is not None:
        out["sort"] = view.sort
    out["reverse"] = view.reverse
    out["columns"] = view.columns if isinstance(view.columns, str) else list(view.columns)
    out["folded"] = list(view.folded)
    return out


@retry_on_change
def save_view(home: Home, view: ConsoleView) -> bool:
    """Write *view* as the ``console:`` section, every other line of the file kept. False when
    the file already says so (nothing written). ConfigUnreadable when the file cannot be used,
    WriteFailed for a symlink at its name (the file is left alone either way). No lock file:
    as config.yaml's edits do, the file is replaced only if it is still the one read (another
    console's save in between is read again, up to three times)."""
    path = _path(home)
    section = as_section(view)
    parse_view(section, path)                                  # never write what we would refuse
    got = _read(home)
    raw = None if got is None else got[0]
    before = _plain(raw, path) if raw is not None else None
    if before is not None and not isinstance(before, dict):
        raise ConfigUnreadable(path, "must be a mapping")
    if (before or {}).get(SECTION) == section:
        return False
    from store.config.yamledit import dump_tree, set_key  # ruamel's editor, on a save only

    tree, rt = load_tree(raw, path)
    set_key(tree, SECTION, section)
    data = dump_tree(rt, tree)
    after = _plain(data, path)
    others = {k: v for k, v in (before or {}).items() if k != SECTION}
    if not isinstance(after, dict) or after.get(SECTION) != section or \
            {k: v for k, v in after.items() if k != SECTION} != others:
        raise ConfigUnreadable(path, "the edited file did not read back as intended; nothing was written")
    if not unchanged_since(path, got):
        raise ConfigChanged(path)
    atomic_write_bytes(path, data, mode=0o600, follow_link=False)
    return True
