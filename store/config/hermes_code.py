"""Which generation of Hermes a home runs, told by the Hermes code the installer leaves there.

Hermes's installer clones its code into ``<home>/hermes-agent`` (a profile
``<root>/profiles/<name>`` runs the root's). Its pool code names what it has: the admin era's
``clear_billing_benches`` / ``any_model``, the newer ``status_cleared_at`` /
``model_cooldowns``; code with neither is the 0.19 era. Reads at most two files (opened
non-blocking, regular files only, capped); writes nothing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from store.pools.generations import ADMIN, NEWER, OLDEST, UNTOLD, Told

CHECKOUT = "hermes-agent"
POOL_CODE = ("agent", "credential_pool.py")
ADMIN_CODE = ("agent", "credential_pool_admin.py")
_CODE_CAP = 4 * 1024 * 1024
# What the pool code of each generation names (the newest first).
_MARKERS = ((ADMIN, (b"clear_billing_benches", b"any_model")), (NEWER, (b"status_cleared_at", b"model_cooldowns")))


def checkouts(root: Path) -> list[Path]:
    """Where Hermes's installer leaves its code for a home: the home's ``hermes-agent``,
    then the root's (a profile ``<root>/profiles/<name>`` runs the root's Hermes)."""
    out = [root / CHECKOUT]
    if root.parent.name == "profiles":
        out.append(root.parent.parent / CHECKOUT)
    return out


def _read_code(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _CODE_CAP:
            return None
        return os.read(fd, _CODE_CAP)
    except OSError:
        return None
    finally:
        os.close(fd)


def detect(root: Path) -> Told:
    """The generation the Hermes checkout for *root* writes, read from its pool code
    (UNTOLD when there is none). Reads two small files; writes nothing."""
    for checkout in checkouts(root):
        code = _read_code(checkout.joinpath(*POOL_CODE))
        if code is None:
            continue
        admin = _read_code(checkout.joinpath(*ADMIN_CODE)) or b""
        where = f"the Hermes code in {checkout}"
        for generation, markers in _MARKERS:
            if any(m in code or m in admin for m in markers):
                return Told(generation, where)
        return Told(OLDEST, where)
    return UNTOLD
