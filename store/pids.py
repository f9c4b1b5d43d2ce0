"""Whether the process a file names is still there: the one liveness check.

A status file (the proxy's, the monitor's) or one of our temp names (``<prefix>auth.json.<pid>...``)
carries the pid of the process that wrote it; a reader asks :func:`process_exists` before it
believes the file. The pid is outside data: anything that is not a plausible pid (a bool, a
float, text, zero, a negative number, a number past any kernel's pid range) names no process,
and the check never raises for it (``os.kill`` itself raises OverflowError on ``2**63``).
"""

from __future__ import annotations

import os

# Linux caps pid_max at 2**22; no system hands out pids past a signed 32-bit int.
MAX_PID = 2**31 - 1


def process_exists(pid: object) -> bool:
    """True when *pid* is a process on this host (another user's counts: it exists).

    Signal 0 checks without signalling. A pid reused by an unrelated process after the writer
    died reads as alive: callers that can also check freshness (``updated_at``) do.
    """
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid <= MAX_PID:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
