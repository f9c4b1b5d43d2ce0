"""A root of Hermes homes: the default profile (the root itself) plus ``<root>/profiles/*``.

Each profile is a home of its own (own ``auth.json``, ``auth.lock``, ``config.yaml``,
``.env``) and is read and written exactly as a home is: through
:func:`store.transaction.transaction` on its :class:`~store.paths.Home`.

How Hermes 0.19.0 names them (``hermes_cli/profiles.py``): the root is the profile
``default``; a named profile is a directory under ``<root>/profiles/`` whose name
matches ``[a-z0-9][a-z0-9_-]{0,63}``. ``list_profiles`` skips anything else there
(files, other names, a directory called ``default``), and so do we. The root is derived
as ``get_default_hermes_root`` does: ``<X>`` when the home is ``<X>/profiles/<name>``,
else the home itself.

Discovery only lists directories: nothing here writes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from store.errors import BadInput
from store.paths import (
    DEFAULT_PROFILE,
    PROFILE_NAME_RE,
    PROFILES_DIR,
    Home,
    is_profile_name,
    resolve_home,
    root_of_home,
)


@dataclass(frozen=True)
class Profile:
    """One profile of a root: its name (``default`` for the root) and its home."""

    name: str
    home: Home

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT_PROFILE


@dataclass(frozen=True)
class Root:
    """A directory holding the default profile and ``profiles/<name>`` homes."""

    path: Path

    @property
    def profiles_dir(self) -> Path:
        return self.path / PROFILES_DIR

    def profile(self, name: str) -> Profile:
        """The profile called *name* (``default`` = the root); BadInput for a bad name.

        The profile need not exist yet; :func:`discover` says which do.
        """
        n = str(name or "").strip()
        if n.casefold() == DEFAULT_PROFILE:
            return Profile(DEFAULT_PROFILE, Home(self.path))
        if not PROFILE_NAME_RE.match(n):
            raise BadInput("--profile", f"{name!r} is not a profile name "
                           "(Hermes allows [a-z0-9][a-z0-9_-]{0,63})")
        return Profile(n, Home(self.profiles_dir / n))

    def profile_of(self, path: Path) -> str | None:
        """The name of the profile a file under this root belongs to, or None.

        ``<root>/auth.json`` -> ``default``; ``<root>/profiles/<n>/cron/jobs.json`` -> ``<n>``.
        """
        try:
            rel = Path(path).relative_to(self.path).parts
        except ValueError:
            return None
        if len(rel) >= 2 and rel[0] == PROFILES_DIR:
            return rel[1] if is_profile_name(rel[1]) else None
        if rel and rel[0] == PROFILES_DIR:
            return None
        return DEFAULT_PROFILE


def resolve_root(root_arg: str | os.PathLike[str] | None = None,
                 home_arg: str | os.PathLike[str] | None = None,
                 environ: Mapping[str, str] | None = None) -> Root:
    """``--root``; else derived from ``--home``/``$HERMES_HOME``/``~/.hermes``."""
    if root_arg:
        return Root(Path(root_arg).expanduser().absolute())
    return Root(root_of_home(resolve_home(home_arg, environ).root))


def discover(root: Root) -> list[Profile]:
    """The profiles under *root*: ``default`` first (when the root exists), then by name."""
    out: list[Profile] = []
    if root.path.is_dir():
        out.append(Profile(DEFAULT_PROFILE, Home(root.path)))
    try:
        entries = sorted(os.scandir(root.profiles_dir), key=lambda e: e.name)
    except OSError:
        return out
    for entry in entries:
        try:
            # A symlinked profile directory is followed, as Hermes's is_dir() does.
            is_dir = entry.is_dir()
        except OSError:
            continue
        if is_dir and is_profile_name(entry.name):
            out.append(Profile(entry.name, Home(Path(entry.path))))
    return out


def home_profile(root: Root, home: Home) -> str | None:
    """The profile name of *home* within *root* (None when it is not one of them)."""
    if home.root == root.path:
        return DEFAULT_PROFILE
    if home.root.parent == root.profiles_dir and is_profile_name(home.root.name):
        return home.root.name
    return None
