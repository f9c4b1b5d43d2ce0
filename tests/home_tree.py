"""The whole of a home (and any folder beside it) as data, to prove a refused verb wrote nothing.

``tree(*roots)`` lists every entry under *roots* without following a link: its kind, mode,
size and bytes (a link: its target). Two equal trees are byte-identical homes, lock files,
backups and history copies included.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def tree(*roots: Path) -> dict[str, Any]:
    """Every entry under *roots*: kind and bytes (a link: its target), never following links."""
    out: dict[str, Any] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in sorted(dirnames + filenames):
                p = Path(dirpath) / name
                st = os.lstat(p)
                if os.path.islink(p):
                    out[str(p)] = ("link", os.readlink(p))
                elif p.is_dir():
                    out[str(p)] = ("dir", oct(st.st_mode))
                else:
                    out[str(p)] = ("file", oct(st.st_mode), st.st_size, p.read_bytes())
    return out
