"""The operator's own key remapping: binding id -> keys, from a small YAML file.

    # ~/.config/hermes-admin/keymap.yaml   (or $HERMES_ADMIN_KEYMAP)
    dashboard.reset: R
    dashboard.remove: D
    app.quit: "q,ctrl+c"

Every Binding in the app has an id, so any key can be moved; the help screen and the
footer show the remapped keys. The file is the operator's, not the Hermes home's: it
never goes in config.yaml, which agents share.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable, Mapping

import yaml
from textual.app import App
from textual.binding import Binding

from store import safeio, yamlguard
from store.errors import ConfigUnreadable

ENV_VAR = "HERMES_ADMIN_KEYMAP"
KEYMAP_CAP = 64 * 1024


def keymap_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get(ENV_VAR):
        return Path(env[ENV_VAR]).expanduser()
    base = Path(env.get("XDG_CONFIG_HOME") or Path(env.get("HOME") or Path.home()) / ".config")
    return base / "hermes-admin" / "keymap.yaml"


def binding_ids(classes: Iterable[type]) -> set[str]:
    """Every binding id declared by *classes* (and their bases)."""
    ids: set[str] = set()
    for cls in classes:
        for base in cls.__mro__:
            for b in Binding.make_bindings(base.__dict__.get("BINDINGS") or []):
                if b.id:
                    ids.add(b.id)
    return ids


def load_keymap(path: Path, known_ids: Callable[[], set[str]]) -> tuple[dict[str, str], list[str]]:
    """(keymap, problems). A missing file is no keymap and no problem; a bad file or entry
    is a problem naming the file and the entry, and that entry is ignored. *known_ids* is
    asked only when the file holds entries (it imports every screen: not at every start)."""
    try:
        # Checked and capped: a FIFO here hung the console before its first frame.
        got = safeio.read_checked(path, KEYMAP_CAP, ConfigUnreadable)
        if got is None:
            return {}, []
        text = got[0].decode("utf-8")
        yamlguard.check(text, path)
    except ConfigUnreadable as exc:
        return {}, [str(exc)]
    except UnicodeDecodeError as exc:
        return {}, [f"{path}: not UTF-8 (byte {exc.start})"]
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = exc.problem_mark if isinstance(exc, yaml.MarkedYAMLError) else None
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return {}, [f"{path}: not valid YAML{where}"]
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        return {}, [f"{path}: expected a mapping of binding id to keys"]
    keymap: dict[str, str] = {}
    problems: list[str] = []
    known = known_ids() if data else set()
    for bid, keys in data.items():
        if bid not in known:
            problems.append(f"{path}: {bid!r} is not a binding id (see ? help for the ids)")
        elif not isinstance(keys, str) or not keys.strip():
            problems.append(f"{path}: {bid}: keys must be a string like 'R' or 'ctrl+d,D'")
        else:
            keymap[str(bid)] = keys.strip()
    return keymap, problems


def long_keys(keys: str) -> str:
    """*keys* as Textual's bindings name them ("?" -> "question_mark"), as ``App.set_keymap``
    keeps them: `?` help applies the same keymap to the bindings it lists."""
    return ",".join(k and next(iter(Binding.make_bindings([(k, "")]))).key
                    for k in (key.strip() for key in keys.split(",")))


def long_keymap(keymap: Mapping[str, str]) -> dict[str, str]:
    """*keymap* (binding id -> keys) with :func:`long_keys`."""
    return {bid: long_keys(keys) for bid, keys in keymap.items()}


def apply_keymap(app: App, path: Path, classes: Callable[[], Iterable[type]]) -> None:
    """Load *path* against the binding ids of *classes()* into *app*; say what was ignored.
    *classes* is called only when the file holds entries."""
    keymap, problems = load_keymap(path, lambda: binding_ids(classes()))
    if keymap:
        app.set_keymap(keymap)
    for problem in problems:
        app.notify(f"keymap ignored: {problem}", severity="warning", timeout=10)
