"""Following a home or a root of homes: each change becomes a parsed snapshot.

``loop`` (the one watch loop: wait on a tree, keep what a classifier reads, hand bursts
on; its inotify and watchfiles backends and the stop flag), ``home`` (one home: its
classifier, the loader, ``HomeState``), ``root`` (every profile of a root under one
watch), ``inotify`` (a Linux watch that costs nothing while idle), ``read_ahead``
(reading a lone write while its burst is waited out) and ``pool_cache`` (pool views
rebuilt only for the pools that changed). Imports the store core, ``pools``,
``redaction``, ``config`` and ``profiles``; never writes.
"""
