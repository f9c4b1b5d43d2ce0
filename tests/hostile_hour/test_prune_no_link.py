"""Hostile hour: pruning the operator history never reaches through a link.

RELIABILITY 53 and 17. Writes refuse a history folder that is a symlink, but the pruning
that follows a write listed and unlinked by the folder's *name*: a folder swapped for a link
(or one there when a write runs with history kept elsewhere) had files named like history
records deleted in the folder it points to. Pruning now opens the folder itself
(``O_NOFOLLOW``) and unlinks relative to it.
"""

from __future__ import annotations

import os

from store.ops import history
from store.paths import Home

T = 2_000_000_000.0
IDS = [history.new_id(T - 50 + i) for i in range(4)]


def _elsewhere(home: Home):
    other = home.root.parent / "someone-elses"
    other.mkdir()
    for i in IDS:
        (other / f"{i}.json").write_text("{}")
        (other / f"auth.json.{i}").write_text("theirs")
    d = history.folder(home)
    if d.exists():
        d.rmdir()
    d.symlink_to(other, target_is_directory=True)
    return other


def test_prune_through_a_linked_folder_drops_nothing(tmp_home: Home) -> None:
    other = _elsewhere(tmp_home)
    before = sorted(os.listdir(other))
    assert history.prune(tmp_home, T, keep=0) == 0
    assert sorted(os.listdir(other)) == before


def test_negative_control_without_o_nofollow_the_prune_deletes_through_the_link(tmp_home: Home,
                                                                              monkeypatch) -> None:
    other = _elsewhere(tmp_home)
    monkeypatch.setattr(history.os, "O_NOFOLLOW", 0)     # the protection taken out
    assert history.prune(tmp_home, T, keep=0) == 4
    assert os.listdir(other) == []


def test_prune_of_a_real_folder_still_drops_the_oldest(tmp_home: Home) -> None:
    d = history.folder(tmp_home)
    d.mkdir(exist_ok=True)
    for i in IDS:
        (d / f"{i}.json").write_text("{}")
    assert history.prune(tmp_home, T, keep=1) == 3
    assert os.listdir(d) == [f"{IDS[-1]}.json"]
