"""The console's heap: what lives as long as the console leaves the cyclic GC's walk."""

from __future__ import annotations

import gc


def settle_heap() -> None:
    """Take what lives as long as the console (Textual, the modules, the first home shown)
    out of the cyclic GC's walk: at 10,000 keys a full collection over it paused a reload
    by 50-90 ms, now and then, on the event loop and in the watcher alike. Acyclic objects
    are still freed when unreferenced. Only the young generations are collected first: a
    full collection here holds the GIL for 100 ms or more at 10,000 keys."""
    gc.collect(1)
    gc.freeze()
