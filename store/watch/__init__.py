"""Following a home or a root of homes: each change becomes a parsed snapshot.

``home`` (one home: the loader, the watch loop, ``HomeState``), ``root`` (every profile of
a root under one recursive watch), ``inotify`` (a Linux watch that costs nothing while
idle), ``read_ahead`` (reading a lone write while its burst is waited out) and
``pool_cache`` (pool views rebuilt only for the pools that changed). Imports the store
core, ``pools``, ``redaction`` and ``config``; never writes.
"""
