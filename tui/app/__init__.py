"""The console's shell: the App classes and what only they touch.

``console`` (``HermesAdminApp``: one home), ``root_console`` (``RootApp``: every profile of a
root), ``registry`` (which screen opens for which action), ``command_runner`` (the ``:``
command line's commands and their running), ``session_end`` (hang-up, EOF and a stuck event
loop all end the session), ``keymap`` (the operator's key remapping) and ``app.tcss``. The
only package of ``tui`` that may import ``screens``.
"""
