"""Where a Hermes home keeps its files, and where a home sits in its root of profiles."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

AUTH_FILE = "auth.json"
CONFIG_FILE = "config.yaml"
ENV_FILE = ".env"
AUDIT_FILE = "hermes-admin-audit.jsonl"
BACKUP_SUFFIX = ".bak"
# Our own lock for config.yaml edits between hermes-admin processes. Hermes has no
# config lock (it writes config.yaml by temp + rename), so this only serializes us.
CONFIG_LOCK_FILE = ".config.yaml.hermes-admin.lock"
# Prefix of our temp files; the orphan sweeper only ever touches names with it.
TEMP_PREFIX = ".hermes-admin-"
# How Hermes 0.19.0 names profiles (``hermes_cli/profiles.py``): the root is the profile
# ``default``; a named profile is ``<root>/profiles/<name>``, its name matching the pattern.
DEFAULT_PROFILE = "default"
PROFILES_DIR = "profiles"
PROFILE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class Home:
    """A Hermes home directory and the paths of the files in it."""

    root: Path

    @property
    def auth(self) -> Path:
        return self.root / AUTH_FILE

    @property
    def lock(self) -> Path:
        # Hermes derives the lock from the store path by swapping the suffix:
        # auth.json -> auth.lock (never auth.json.lock).
        return self.auth.with_suffix(".lock")

    @property
    def backup(self) -> Path:
        return self.root / (AUTH_FILE + BACKUP_SUFFIX)

    @property
    def config(self) -> Path:
        return self.root / CONFIG_FILE

    @property
    def config_lock(self) -> Path:
        return self.root / CONFIG_LOCK_FILE

    @property
    def env(self) -> Path:
        return self.root / ENV_FILE

    @property
    def audit(self) -> Path:
        return self.root / AUDIT_FILE


def resolve_home(arg: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None) -> Home:
    """`--home`, then `$HERMES_HOME`, then `~/.hermes`."""
    env = os.environ if environ is None else environ
    if arg:
        root = Path(arg)
    elif env.get("HERMES_HOME"):
        root = Path(env["HERMES_HOME"])
    else:
        root = Path(env.get("HOME") or Path.home()) / ".hermes"
    return Home(root.expanduser().absolute())


def is_profile_name(name: str) -> bool:
    """True for a directory name Hermes lists as a named profile."""
    return name != DEFAULT_PROFILE and bool(PROFILE_NAME_RE.match(name))


def root_of_home(home: Path) -> Path:
    """``<X>`` when *home* is ``<X>/profiles/<name>``, else *home* itself (as Hermes does)."""
    home = Path(home)
    if home.parent.name == PROFILES_DIR:
        return home.parent.parent
    return home


def profile_name(home: Path) -> str:
    """Which profile of its root the home at *home* is: ``<name>`` for
    ``<root>/profiles/<name>``, else ``default`` (the root itself)."""
    home = Path(home)
    return home.name if root_of_home(home) != home and is_profile_name(home.name) else DEFAULT_PROFILE
