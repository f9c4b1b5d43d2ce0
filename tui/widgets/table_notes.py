"""The notes before a row's reason, from each source that notes rows.

Two sources note the credential table's rows: the findings of a root of profiles
(``⚑ shared``, set again on every refresh of the view) and a running proxy's budget
(``$ over budget``, set when its status file changes). Each sets its own kind; the others'
stay as they were, so a refresh never drops the proxy's note and the proxy's note never
hides a finding. A row noted by both says both, in :data:`ORDER`.
"""

from __future__ import annotations

from typing import Mapping

Key = tuple[str, str]                 # (view pool key, row id)
BUDGET, FINDINGS = "budget", "findings"
ORDER = (BUDGET, FINDINGS)            # a row noted by both: "$ over budget ⚑ shared"


class RowNotes:
    """Each kind's notes, and every row's notes joined."""

    def __init__(self) -> None:
        self.kinds: dict[str, dict[Key, str]] = {}

    def set(self, kind: str, notes: Mapping[Key, str]) -> dict[Key, str]:
        """Take *kind*'s notes (that kind's alone is replaced); every row's notes, joined."""
        self.kinds[kind] = {k: v for k, v in notes.items() if v}
        joined: dict[Key, str] = {}
        for name in sorted(self.kinds, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n)):
            for key, note in self.kinds[name].items():
                joined[key] = f"{joined[key]} {note}" if key in joined else note
        return joined
