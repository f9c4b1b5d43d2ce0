"""Following a home: each change becomes a parsed snapshot.

``loop`` (the one watch loop: wait on a tree, keep what a classifier reads, hand bursts
on; its inotify and watchfiles backends and the stop flag), ``home`` (one home: its
classifier, the loader, ``HomeState``), ``inotify`` (a Linux watch that costs nothing while
idle), ``read_ahead`` (reading a lone write while its burst is waited out) and
``pool_cache`` (pool views rebuilt only for the pools that changed). A root of homes is
followed by :mod:`store.profiles.live`, on this loop. Imports the store core, ``agent``,
``pools``, ``redaction`` and ``config``; never ``profiles`` or ``ops``, and never writes.
"""
