"""Editing config.yaml: round-trip edits that keep comments, and the safe write-back.

Reads (PyYAML, as Hermes reads) and the round-trip parse live in
:mod:`store.config.yamlread`; this module changes the parsed tree and writes it back.

ruamel attaches the full-line comments that sit *above* an element to the end
of the element before it. Left alone, deleting or moving an entry would carry
its neighbour's comment along. The helpers below move those comment lines
with the element they describe (the block of comment lines directly above it),
and a final check re-parses every edited text before it may replace the file.
"""

from __future__ import annotations

import io
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarstring import SingleQuotedScalarString
from ruamel.yaml.tokens import CommentToken

from store import safeio
from store.authfile import atomic_write_bytes, sweep_orphans
from store.config.yamlcas import ConfigChanged, before_replace, unchanged_since
from store.config.yamlread import (
    SafeLoader,
    is_block,
    load_plain,
    load_tree,
    put_trailing,
    split_lead,
    take_trailing,
    top_level_problem,
)
from store.errors import ConfigUnreadable, HermesAdminError
from store.lock import DEFAULT_LOCK_TIMEOUT, locked
from store.paths import Home

# Hermes creates config.yaml through mkstemp and only restores a mode that
# existed before, so a config.yaml it creates is 0600. We create ours the same way.
NEW_FILE_MODE = 0o600

# Test hook: called inside the lock right after the fresh read. Tests use it to
# widen the read-modify-write window and prove the lock is what prevents loss.
after_read_hook: Callable[[], None] | None = None
# Tests: runs just before the same-file check (where a lock-free writer would strike).
before_replace_hook: Callable[[], None] | None = None


def dump_tree(rt: YAML, tree: CommentedMap) -> bytes:
    """The edited tree as UTF-8 text, in the style *rt* was set up with."""
    out = io.StringIO()
    rt.dump(tree, out)
    return out.getvalue().encode("utf-8")


def plain_scalar(value: str) -> Any:
    """*value* as a node that PyYAML (YAML 1.1, like Hermes) reads back as this string.

    ruamel writes YAML 1.2, where `yes`, `on` or `0777` are plain strings; Hermes's
    PyYAML would read them as a bool or a number. Quote whenever that would happen.
    """
    try:
        back = yaml.load(value, Loader=SafeLoader)
    except yaml.YAMLError:
        back = None
    return value if back == value and isinstance(back, str) else SingleQuotedScalarString(value)


# --- comments that belong to an element -----------------------------------------------

@dataclass
class SeqItem:
    """A sequence element lifted out with the comment lines printed above it."""

    value: Any
    seq_comment: Any = None
    lead: str = ""


def _header_take(parent: CommentedMap, key: Any) -> str:
    """Remove and return the comment lines between ``key:`` and its first item."""
    entry = parent.ca.items.get(key)
    if not entry:
        return ""
    eol = entry[2] if len(entry) > 2 else None
    if eol is not None:
        first, _, rest = eol.value.partition("\n")
        eol.value = first + "\n"
        return rest
    pre = entry[3] if len(entry) > 3 else None
    if pre:
        entry[3] = None
        return "".join((" " * t.column if t.value.lstrip().startswith("#") else "") + t.value
                       for t in pre)
    return ""


def _header_put(parent: CommentedMap, key: Any, text: str) -> None:
    if not text:
        return
    entry = parent.ca.items.setdefault(key, [None, None, None, None])
    while len(entry) < 4:
        entry.append(None)
    if entry[2] is not None:
        value = entry[2].value
        entry[2].value = (value if value.endswith("\n") else value + "\n") + text
    else:
        entry[3] = [CommentToken(text, CommentMark(0), None)]


def _take_after(seq: CommentedSeq, i: int) -> str:
    if is_block(seq[i]):
        return take_trailing(seq[i])
    entry = seq.ca.items.get(i)
    token = entry[0] if entry else None
    if token is None or "\n" not in token.value:
        return ""
    eol, rest = token.value.split("\n", 1)
    token.value = eol + "\n"
    return rest


def _put_after(seq: CommentedSeq, i: int, text: str) -> None:
    if not text:
        return
    if is_block(seq[i]):
        put_trailing(seq[i], text)
        return
    entry = seq.ca.items.setdefault(i, [None, None, None, None])
    if entry[0] is None:
        entry[0] = CommentToken("\n" + text, CommentMark(0), None)
    else:
        entry[0].value = (entry[0].value if entry[0].value.endswith("\n")
                          else entry[0].value + "\n") + text


@dataclass
class SeqParts:
    """A block sequence taken apart so elements can move with their own comments."""

    parent: CommentedMap
    key: Any
    items: list[SeqItem]
    header: str            # lines under ``key:`` that describe the list, not its first item
    tail: str              # lines after the last item (they belong to what follows)

    def drop(self, index: int) -> SeqItem:
        """Remove an element; its own comment block goes, spacing above it stays."""
        item = self.items.pop(index)
        detached, _own = split_lead(item.lead)
        if index < len(self.items):
            self.items[index].lead = detached + self.items[index].lead
        else:
            self.tail = detached + self.tail
        return item


def seq_parts(parent: CommentedMap, key: Any) -> SeqParts:
    """Lift the elements of ``parent[key]`` (a sequence) out with their comment blocks."""
    seq = parent[key]
    header, lead0 = split_lead(_header_take(parent, key)) if len(seq) else ("", "")
    leads = [lead0] + [_take_after(seq, i) for i in range(len(seq))]
    items = [SeqItem(seq[i], seq.ca.items.get(i), leads[i]) for i in range(len(seq))]
    return SeqParts(parent, key, items, header, leads[-1] if len(seq) else "")


def rebuild_seq(parts: SeqParts) -> None:
    """Put the elements back in their new order, each with its comment block above it."""
    seq = parts.parent[parts.key]
    seq.clear()
    seq.ca.items.clear()
    for i, item in enumerate(parts.items):
        seq.append(item.value)
        if item.seq_comment is not None:
            seq.ca.items[i] = item.seq_comment
    if not parts.items:
        seq.fa.set_flow_style()  # an empty block sequence with comments dumps broken YAML
        _put_trailing_of_entry(parts.parent, parts.key, parts.header + parts.tail)
        return
    seq.fa.set_block_style()
    _header_put(parts.parent, parts.key, parts.header + parts.items[0].lead)
    for i in range(len(parts.items)):
        _put_after(seq, i, parts.items[i + 1].lead if i + 1 < len(parts.items) else parts.tail)


def delete_key(parent: CommentedMap, key: Any) -> None:
    """Delete *key*; its own comment block goes with it, a neighbour's stays."""
    keys = list(parent.keys())
    j = keys.index(key)
    following = _trailing_of_entry(parent, key)
    kept_lead = ""
    if j > 0:
        prev_key = keys[j - 1]
        kept_lead, _own = split_lead(_trailing_of_entry(parent, prev_key))
    del parent[key]
    parent.ca.items.pop(key, None)
    text = kept_lead + following
    if not text:
        return
    if j > 0:
        _put_trailing_of_entry(parent, keys[j - 1], text)
    elif len(parent):
        # No entry above it in this mapping: the lines become the mapping's own
        # leading comment, printed just above its (new) first entry.
        if not parent.ca.comment:
            parent.ca.comment = [None, []]
        if parent.ca.comment[1] is None:
            parent.ca.comment[1] = []
        parent.ca.comment[1].append(CommentToken(text, CommentMark(0), None))
    if not len(parent):
        parent.fa.set_flow_style()


def _trailing_of_entry(parent: CommentedMap, key: Any) -> str:
    value = parent[key]
    if is_block(value):
        return take_trailing(value)
    entry = parent.ca.items.get(key)
    token = entry[2] if entry and len(entry) > 2 else None
    if token is None or "\n" not in token.value:
        return ""
    eol, rest = token.value.split("\n", 1)
    token.value = eol + "\n"
    return rest


def _put_trailing_of_entry(parent: CommentedMap, key: Any, text: str) -> None:
    value = parent[key]
    if is_block(value):
        put_trailing(value, text)
        return
    entry = parent.ca.items.setdefault(key, [None, None, None, None])
    if entry[2] is None:
        entry[2] = CommentToken("\n" + text, CommentMark(0), None)
    else:
        entry[2].value = (entry[2].value if entry[2].value.endswith("\n")
                          else entry[2].value + "\n") + text


def set_key(parent: CommentedMap, key: Any, value: Any) -> None:
    """Set *key* (appending a new key at the end), keeping the lines after the old last entry.

    A new key lands after the mapping's trailing comment lines would otherwise
    be printed, so the lines that belonged below the mapping stay below it.
    """
    if key in parent or not len(parent):
        parent[key] = value
        return
    last = list(parent.keys())[-1]
    tail = _trailing_of_entry(parent, last)
    parent[key] = value
    if tail and not _put_trailing_of_entry_safe(parent, key, tail):
        _put_trailing_of_entry(parent, last, tail)


def replace_value(parent: CommentedMap, key: Any, value: Any) -> None:
    """Replace *key*'s value in place, keeping its end-of-line comment and the lines after it."""
    if key not in parent:
        set_key(parent, key, value)
        return
    tail = _trailing_of_entry(parent, key)
    parent[key] = value
    if tail:
        _put_trailing_of_entry(parent, key, tail)


def _put_trailing_of_entry_safe(parent: CommentedMap, key: Any, text: str) -> bool:
    try:
        _put_trailing_of_entry(parent, key, text)
    except Exception:
        return False
    return True


def block(node: Any) -> Any:
    """Make an (empty, flow-style) container block style before adding to it."""
    # A loaded `[]`/`{}` reports flow style None; either way it must not stay flow.
    if isinstance(node, (CommentedMap, CommentedSeq)) and not len(node) \
            and node.fa.flow_style() is not False:
        node.fa.set_block_style()
    return node


# --- writing -----------------------------------------------------------------------

def write_keeping_mode(path: Path, data: bytes) -> None:
    """Atomically replace *path* with *data*, keeping its permission mode and owner.

    auth.json is forced to 0600; config.yaml keeps the mode operators gave it (they
    may have made it group-readable on purpose). A new file is 0600, as Hermes makes it.
    """
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    mode = stat.S_IMODE(st.st_mode) if st else NEW_FILE_MODE
    # Root editing a user's home must not leave the file owned by root.
    owner = (st.st_uid, st.st_gid) if st is not None and os.geteuid() == 0 else None
    atomic_write_bytes(path, data, mode=mode, owner=owner)


@dataclass
class EditSession:
    """One locked edit: the round-trip tree to change and what Hermes reads today."""

    path: Path
    raw: bytes | None
    tree: CommentedMap
    plain: dict[str, Any]
    touched: frozenset[str]
    dirty: bool = False
    written: bytes | None = field(default=None, repr=False)


@contextmanager
def locked_edit(path: Path, lock_path: Path, *, touched: frozenset[str],
                lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[EditSession]:
    """Lock, read fresh, yield the tree; write it back atomically if the body set ``dirty``.

    Only the top-level keys in *touched* may change meaning: the edited text is
    re-parsed with PyYAML and every other key must read exactly as before, or
    nothing is written. Raising inside the block writes nothing.
    """
    with locked(lock_path, lock_timeout):
        got = safeio.read_checked(path, safeio.CONFIG_CAP, ConfigUnreadable)
        raw = None if got is None else got[0]
        plain_before: Any = None
        if raw is not None:
            plain_before, _ = load_plain(raw, path)
            problem = top_level_problem(plain_before)
            if problem:
                raise ConfigUnreadable(path, problem)
        tree, rt = load_tree(raw, path)
        if after_read_hook is not None:
            after_read_hook()
        session = EditSession(path, raw, tree, plain_before or {}, touched)
        yield session
        if not session.dirty:
            return
        data = dump_tree(rt, tree)
        written = _verify(path, rt, tree, data, session)
        if before_replace_hook is not None:
            before_replace_hook()
        # Hermes writes config.yaml by temp + rename and takes no lock: our lock cannot
        # keep it out. Replacing a file that changed since we read it would drop its edit.
        if not unchanged_since(path, got):
            raise ConfigChanged(path)
        # A config writer SIGKILLed mid-write left its temp; only stale ones of ours go.
        sweep_orphans(Home(path.parent))
        before_replace(path, raw is not None, written, touched)   # an operator's edit keeps the file
        write_keeping_mode(path, data)
        session.written = data


def _verify(path: Path, rt: YAML, tree: CommentedMap, data: bytes, session: EditSession) -> dict[str, Any]:
    """Refuse to write text that does not read back as the intended document; the document
    as PyYAML reads it."""
    try:
        after, _ = load_plain(data, path)
        reloaded = rt.load(data.decode("utf-8"))
    except Exception as exc:
        raise HermesAdminError(f"{path}: the edited YAML did not re-parse ({exc}); nothing "
                               "was written") from None
    if not isinstance(after, dict) or (reloaded or {}) != tree:
        raise HermesAdminError(f"{path}: the edited YAML did not read back as intended; "
                               "nothing was written")
    for key in set(session.plain) | set(after):
        if key in session.touched:
            continue
        if session.plain.get(key) != after.get(key):
            raise HermesAdminError(f"{path}: the edit would have changed {key!r}, which it "
                                   "must not touch; nothing was written")
    return after
