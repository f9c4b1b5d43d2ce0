"""Reading config.yaml: strict reads, the round-trip parse edits start from, comment locations.

Two parsers on purpose. Strict reads use PyYAML (what Hermes itself reads
config.yaml with, so hermes-admin sees the values Hermes sees). Edits start
from ruamel.yaml's round-trip parse, because an operator's comments, key order
and quoting are their work and an edit must not lose them.

ruamel attaches the full-line comments that sit *above* an element to the end
of the element before it. :func:`tail_slot` finds where those lines are kept,
:func:`take_trailing`/:func:`put_trailing` lift them out of a parsed tree and put
them back, and :func:`split_lead` tells an element's own comment block from the
lines above it. The edits built on them live in :mod:`store.config.yamledit`. Nothing
here writes a file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from store import safeio, yamlguard
from store.errors import ConfigUnreadable, unreadable_value

if TYPE_CHECKING:  # ruamel is imported by the round-trip functions, when an edit runs
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _DupCheckingLoader(SafeLoader):  # type: ignore[misc, valid-type]
    """Safe loader that notes duplicate keys (PyYAML keeps the last one silently)."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.duplicates: list[str] = []

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            try:
                key = self.construct_object(key_node, deep=True)
                hash(key)
            except Exception:  # unhashable keys are PyYAML's to report
                continue
            if key in seen:
                self.duplicates.append(
                    f"line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                    "(the last one wins, as Hermes reads it)"
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _yaml_error(path: Path, exc: Exception) -> ConfigUnreadable:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    if isinstance(exc, yaml.reader.ReaderError):
        return ConfigUnreadable(path, f"not valid UTF-8 text (byte {exc.position})")
    if mark is not None:
        return ConfigUnreadable(
            path, f"YAML error at line {mark.line + 1} column {mark.column + 1}: {problem}"
        )
    return ConfigUnreadable(path, f"YAML error: {problem}")


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, None when missing; ConfigUnreadable for anything else
    (a FIFO, device or directory, or a file over the config size cap)."""
    got = safeio.read_checked(path, safeio.CONFIG_CAP, ConfigUnreadable)
    if got is None:
        safeio.refuse_dangling(path, ConfigUnreadable)   # a linked config not there: said, not defaulted
        return None
    return got[0]


def load_plain(raw: bytes, path: Path) -> tuple[Any, list[str]]:
    """Parse *raw* the way Hermes does (safe_load); return (data, duplicate-key notes).

    Raises ConfigUnreadable naming the 1-based line and column of a syntax error.
    """
    yamlguard.check(raw, path)
    loader = _DupCheckingLoader(raw)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None
    except ValueError as exc:      # an integer past Python's 4,300 digits
        raise ConfigUnreadable(path, unreadable_value(exc)) from None
    finally:
        loader.dispose()
    return data, loader.duplicates


def top_level_problem(data: Any) -> str | None:
    """Why *data* cannot be a config (None when it can)."""
    if data is None or isinstance(data, dict):
        return None
    kind = "list" if isinstance(data, list) else type(data).__name__
    return f"top level is a {kind}, not a mapping of settings"


# --- round-trip loading for edits ---------------------------------------------------

_KEY_LINE = re.compile(r"^(\s*)[^\s#-][^:#]*:\s*(#.*)?$")
_ITEM_LINE = re.compile(r"^(\s*)- ")


def guess_indent(text: str) -> tuple[int, int, int]:
    """(mapping, sequence, offset) indents the file already uses; Hermes's 2/4/2 by default.

    ruamel applies one indentation to the whole document, so matching the
    operator's style keeps untouched sections byte-identical.
    """
    mapping: int | None = None
    offset: int | None = None
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    for prev, line in zip(lines, lines[1:], strict=False):
        m = _KEY_LINE.match(prev)
        if not m:
            continue
        base = len(m.group(1))
        item = _ITEM_LINE.match(line)
        indent = len(line) - len(line.lstrip(" "))
        if item and offset is None and indent >= base:
            offset = indent - base
        elif not item and mapping is None and indent > base:
            mapping = indent - base
        if mapping is not None and offset is not None:
            break
    mapping = mapping or 2
    offset = 2 if offset is None else offset
    return mapping, offset + 2, offset


def make_yaml(text: str = "") -> YAML:
    """A round-trip YAML configured to reproduce *text*'s style."""
    from ruamel.yaml import YAML

    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.allow_unicode = True
    rt.width = 4096  # never re-wrap an operator's long lines
    mapping, sequence, offset = guess_indent(text)
    rt.indent(mapping=mapping, sequence=sequence, offset=offset)
    return rt


def load_tree(raw: bytes | None, path: Path) -> tuple[CommentedMap, YAML]:
    """Round-trip parse for editing; ConfigUnreadable when it does not parse or is not a mapping."""
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.error import MarkedYAMLError as RtMarkedError
    from ruamel.yaml.tokens import CommentToken

    if raw is None:
        return CommentedMap(), make_yaml()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigUnreadable(path, f"not valid UTF-8 text (byte {exc.start})") from None
    yamlguard.check(text, path)
    rt = make_yaml(text)
    try:
        tree = rt.load(text)
    except RtMarkedError as exc:
        raise _yaml_error(path, exc) from None
    except ValueError as exc:      # an integer past Python's 4,300 digits
        raise ConfigUnreadable(path, unreadable_value(exc)) from None
    except Exception as exc:  # ruamel raises a few non-marked errors too
        raise ConfigUnreadable(path, f"YAML error: {exc}") from None
    if tree is None:
        # Only comments (or nothing): keep them as the new document's leading lines.
        tree = CommentedMap()
        if text.strip():
            tree.ca.comment = [None, [CommentToken(text if text.endswith("\n") else text + "\n",
                                                   CommentMark(0), None)]]
        return tree, rt
    problem = top_level_problem(tree)
    if problem:
        raise ConfigUnreadable(path, problem)
    return tree, rt


# --- where an element's comments live in the tree -------------------------------

def is_block(node: Any) -> bool:
    """A non-empty block-style mapping or sequence (its last line can carry comments)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    return isinstance(node, (CommentedMap, CommentedSeq)) and len(node) > 0 \
        and not node.fa.flow_style()


def tail_slot(node: Any) -> tuple[dict, Any, int] | None:
    """The comment slot printed right after *node*'s last line (deepest last element)."""
    from ruamel.yaml.comments import CommentedMap

    if not is_block(node):
        return None
    if isinstance(node, CommentedMap):
        key: Any = list(node.keys())[-1]
        pos = 2
    else:
        key = len(node) - 1
        pos = 0
    child = node[key]
    if is_block(child):
        return tail_slot(child)
    return node.ca.items, key, pos


def take_trailing(node: Any) -> str:
    """Remove and return the full comment/blank lines printed after *node*'s last line."""
    slot = tail_slot(node)
    if slot is None:
        return ""
    items, key, pos = slot
    entry = items.get(key)
    token = entry[pos] if entry and len(entry) > pos else None
    if token is None or "\n" not in token.value:
        return ""
    eol, rest = token.value.split("\n", 1)
    token.value = eol + "\n"
    return rest


def put_trailing(node: Any, text: str) -> bool:
    """Print *text* (whole lines) after *node*'s last line; False if it has no place for it."""
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.tokens import CommentToken

    if not text:
        return True
    slot = tail_slot(node)
    if slot is None:
        return False
    items, key, pos = slot
    entry = items.setdefault(key, [None, None, None, None])
    while len(entry) <= pos:
        entry.append(None)
    token = entry[pos]
    if token is None:
        entry[pos] = CommentToken("\n" + text, CommentMark(0), None)
    else:
        value = token.value if token.value.endswith("\n") else token.value + "\n"
        token.value = value + text
    return True


def split_lead(text: str) -> tuple[str, str]:
    """(detached, attached): the comment block directly above an element is its own."""
    lines = text.splitlines(keepends=True)
    cut = len(lines)
    while cut > 0 and lines[cut - 1].strip().startswith("#"):
        cut -= 1
    return "".join(lines[:cut]), "".join(lines[cut:])
