"""The one watch loop (store.watch.loop.watch_tree), driven by a scripted backend.

The script says what each wait of the backend returns (a burst, a timeout, the watched
directory gone, the end) and may change the real directory in between; the loop's arms,
tracks, yields and disarms are logged in order. No thread and no timing: every wait the
loop makes on its own is bounded by the stop flag and a missing-tree poll of 10 ms.
Then each real backend's adapter (InotifyTree, WatchfilesTree) is checked on scripted
events, and the two classifiers on paths.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.profiles.live import RootChange, RootClassifier
from store.profiles.root import Root
from store.watch import inotify, loop
from store.watch.home import HOME, SETTLES
from store.watch.loop import Burst, InotifyTree, WatchfilesTree, watch_tree

Step = Burst[str] | Callable[[], Burst[str]]


class Tags:
    """A classifier whose changes are plain words; one that starts "mkdir" may add dirs."""

    recursive = False
    settles: frozenset[str] = frozenset()

    def everything(self) -> str:
        return "everything"

    def classify(self, paths: Iterable[str]) -> str | None:
        return ",".join(sorted(paths)) or None

    def dirs(self) -> Iterable[str]:
        return ()

    def new_dirs(self, change: str) -> bool:
        return change.startswith("mkdir")


class Script:
    """A backend that plays *steps*, one per wait; when they run out it sets the stop."""

    def __init__(self, steps: Iterable[Step], stop: threading.Event, fail_arms: int = 0) -> None:
        self.steps = list(steps)
        self.stop = stop
        self.fail_arms = fail_arms
        self.log: list[Any] = []

    def arm(self, path: Path, classifier: Any) -> Script:
        if self.fail_arms:
            self.fail_arms -= 1
            self.log.append("arm failed")
            raise OSError("gone between the stat and the watch")
        self.log.append("arm")
        return self

    def __enter__(self) -> Script:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.log.append("disarm")

    def track(self) -> None:
        self.log.append("track")

    def burst(self, stop: threading.Event, debounce_ms: int, step_ms: int,
              ahead: Callable[[str], None] | None = None) -> Burst[str]:
        if not self.steps:
            self.stop.set()
            return Burst()
        step = self.steps.pop(0)
        return step() if callable(step) else step


def run(path: Path, steps: Iterable[Step], **kw: Any) -> list[Any]:
    """The loop's log for *steps* on *path*: arms, tracks, ("yield", change), disarms."""
    stop = threading.Event()
    script = Script(steps, stop, **kw)
    for change in watch_tree(path, Tags(), stop, arm=script.arm, missing_poll=0.01):
        script.log.append(("yield", change))
    return script.log


ARMED = ["arm", "track", ("yield", "everything")]


def test_armed_first_then_each_burst_and_nothing_for_noise(tmp_path: Path) -> None:
    log = run(tmp_path, [Burst("a"), Burst(), Burst(None), Burst("b")])
    assert log == ARMED + [("yield", "a"), ("yield", "b"), "disarm"]


def test_a_burst_that_may_add_directories_is_tracked_before_it_is_handed_on(tmp_path: Path) -> None:
    log = run(tmp_path, [Burst("plain"), Burst("mkdir p")])
    assert log == ARMED + [("yield", "plain"), "track", ("yield", "mkdir p"), "disarm"]


def test_the_directory_going_re_arms_and_reports_everything_again(tmp_path: Path) -> None:
    log = run(tmp_path, [Burst("a", gone=True), Burst("b")])
    assert log == ARMED + [("yield", "a"), "disarm"] + ARMED + [("yield", "b"), "disarm"]


def replace_dir(path: Path) -> Callable[[], Burst[str]]:
    """A step: *path* swapped for a new directory (a new inode), and no event for it."""
    def step() -> Burst[str]:
        fresh = path.with_name(path.name + ".new")
        fresh.mkdir()
        shutil.rmtree(path)
        os.rename(fresh, path)
        return Burst()
    return step


def test_a_replaced_directory_is_re_armed_without_an_event(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    log = run(home, [replace_dir(home), Burst("b")])
    assert log == ARMED + ["disarm"] + ARMED + [("yield", "b"), "disarm"]


def test_negative_control_without_the_identity_check_the_replaced_directory_is_not_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above can fail: a loop that only looks for the path (not its inode) stays
    armed on the dead directory."""
    monkeypatch.setattr(loop, "dir_identity", lambda p: (0, 0) if os.path.isdir(p) else None)
    home = tmp_path / "home"
    home.mkdir()
    log = run(home, [replace_dir(home), Burst("b")])
    assert log.count("arm") == 1
    assert log == ARMED + [("yield", "b"), "disarm"]


def test_a_missing_tree_is_reported_waited_for_then_followed(tmp_path: Path) -> None:
    home = tmp_path / "later"
    stop = threading.Event()
    script = Script([], stop)
    watch = watch_tree(home, Tags(), stop, arm=script.arm, missing_poll=0.01)
    assert next(watch) == "everything"      # "nothing there" is shown too
    assert script.log == []                 # ...with no watch armed
    home.mkdir()
    script.steps = [lambda: (shutil.rmtree(home), Burst())[1]]
    assert next(watch) == "everything"      # it came: armed, then everything again
    assert script.log == ["arm", "track"]
    assert next(watch) == "everything"      # removed with no event: missing again
    assert script.log == ["arm", "track", "disarm"]
    stop.set()
    assert list(watch) == []


def test_the_end_of_the_backend_ends_the_watch_at_once(tmp_path: Path) -> None:
    log = run(tmp_path, [Burst(ended=True), Burst("never")])
    assert log == ARMED + ["disarm"]


def test_the_stop_flag_ends_the_watch_before_another_wait(tmp_path: Path) -> None:
    stop = threading.Event()
    script = Script([lambda: (stop.set(), Burst())[1], Burst("never")], stop)
    got = list(watch_tree(tmp_path, Tags(), stop, arm=script.arm))
    assert got == ["everything"] and script.steps == [Burst("never")]


def test_an_arm_that_fails_is_tried_again(tmp_path: Path) -> None:
    log = run(tmp_path, [Burst("a")], fail_arms=2)
    assert log == ["arm failed", "arm failed"] + ARMED + [("yield", "a"), "disarm"]


STEPS = st.lists(st.one_of(
    st.builds(Burst, change=st.none() | st.sampled_from(["a", "b", "mkdir c"]), gone=st.booleans()),
    st.just(Burst()),
), max_size=12)


@settings(max_examples=60, deadline=None)
@given(STEPS)
def test_the_loop_hands_on_every_kept_change_and_re_arms_after_every_loss(steps: list[Burst[str]]) -> None:
    """Model: everything once armed; each kept change, tracked first when it may add
    directories; after the directory went, a new watch and everything again."""
    want: list[Any] = list(ARMED)
    for b in steps:
        if b.change is not None:
            want += (["track"] if b.change.startswith("mkdir") else []) + [("yield", b.change)]
        if b.gone:
            want += ["disarm"] + ARMED
    want.append("disarm")
    with tempfile.TemporaryDirectory() as d:
        assert run(Path(d), steps) == want


# --- the backends' adapters ---------------------------------------------------------------

class FakeNotify:
    """watchfiles' notifier, answering each watch() from a script."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers

    def __enter__(self) -> FakeNotify:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def watch(self, debounce_ms: int, step_ms: int, timeout_ms: int, stop: Any) -> Any:
        return self.answers.pop(0)


def test_watchfiles_answers_become_bursts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path)
    made: list[tuple[Path, bool]] = []
    answers = ["timeout", {(2, f"{root}/auth.json"), (1, f"{root}/auth.json.tmp.1")},
               {(1, f"{root}/notes.txt")}, {(3, root), (2, f"{root}/.env")}, "stop", "signal"]

    def notifier(path: Path, *, recursive: bool = False) -> FakeNotify:
        made.append((path, recursive))
        return FakeNotify(answers)

    monkeypatch.setattr(loop, "rust_notify", notifier)
    stop = threading.Event()
    with WatchfilesTree(tmp_path, HOME) as tree:
        got = [tree.burst(stop, 20, 10) for _ in range(6)]
    assert made == [(tmp_path, False)]
    assert got == [Burst(), Burst({"auth.json"}), Burst(), Burst({".env"}, gone=True),
                   Burst(ended=True), Burst(ended=True)]
    WatchfilesTree(tmp_path, RootClassifier(tmp_path))
    assert made[-1] == (tmp_path, True)     # a root is watched recursively


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The burst's clock stands still: only the scripted waits end a burst."""
    monkeypatch.setattr(inotify.time, "monotonic", lambda: 0.0)


class Events(inotify.TreeWatch):
    """A TreeWatch that reads scripted batches of (mask, path); each wait says whether
    another batch is there."""

    def __init__(self, root: str, batches: list[list[tuple[int, str]]]) -> None:
        self.fd = -1
        self.root = root
        self.batches = batches
        self.waits = 0

    def wait(self, timeout_ms: int, wake_fd: int | None = None) -> bool:
        self.waits += 1
        return bool(self.batches)

    def read_paths(self):
        yield from (self.batches.pop(0) if self.batches else [])


def test_inotify_reads_a_burst_and_tells_the_read_ahead_of_it(tmp_path: Path, frozen: None) -> None:
    root = str(tmp_path)
    told: list[set[str]] = []
    watch = Events(root, [[(inotify.IN_MOVED_TO, f"{root}/auth.json")],
                          [(inotify.IN_CLOSE_WRITE, f"{root}/auth.lock")],
                          [(inotify.IN_MOVED_TO, f"{root}/config.yaml")]])
    got = InotifyTree(tmp_path, HOME, watch=watch).burst(threading.Event(), 1000, 1000, told.append)
    assert got == Burst({"auth.json", "config.yaml"})
    assert told == [{"auth.json"}, {"config.yaml"}]    # the lock's close is nobody's news


def test_inotify_the_root_going_ends_the_burst_and_is_not_read_ahead(tmp_path: Path, frozen: None) -> None:
    root = str(tmp_path)
    told: list[set[str]] = []
    watch = Events(root, [[(inotify.IN_DELETE, f"{root}/auth.json"), (inotify.IN_DELETE_SELF, root)],
                          [(inotify.IN_MOVED_TO, f"{root}/config.yaml")]])
    got = InotifyTree(tmp_path, HOME, watch=watch).burst(threading.Event(), 1000, 1000, told.append)
    assert got == Burst({"auth.json"}, gone=True)
    assert told == [] and watch.batches                # not waited out: the watch is dead


def test_inotify_a_stop_seen_on_waking_reads_nothing(tmp_path: Path, frozen: None) -> None:
    stop = loop.StopFlag()
    stop.set()
    watch = Events(str(tmp_path), [[(inotify.IN_MOVED_TO, f"{tmp_path}/auth.json")]])
    assert InotifyTree(tmp_path, HOME, watch=watch).burst(stop, 20, 10) == Burst()
    assert watch.batches and watch.waits == 1


@pytest.mark.skipif(not inotify.available(), reason="inotify is Linux-only")
def test_inotify_tracks_only_the_directories_it_does_not_watch_yet(tmp_path: Path) -> None:
    root = Root(tmp_path / "hermes")
    (root.profiles_dir / "alpha").mkdir(parents=True)
    tree = InotifyTree(root.path, RootClassifier(root.path))
    with tree:
        tree.track()
        first = tree.watch.watched()
        assert first == {str(root.path), str(root.profiles_dir), str(root.profiles_dir / "alpha")}
        (root.profiles_dir / "beta" / "cron").mkdir(parents=True)
        tree.track()
        assert tree.watch.watched() - first == {str(root.profiles_dir / "beta"),
                                                str(root.profiles_dir / "beta" / "cron")}


# --- the classifiers ----------------------------------------------------------------------

def test_a_home_keeps_its_three_files_by_name() -> None:
    assert HOME.classify(["/h/auth.json", "/h/auth.lock", "/h/.env", "/h/x.tmp"]) == {"auth.json", ".env"}
    assert HOME.classify(["/h/auth.lock", "/h/auth.json.bak", "/h/notes.txt"]) is None
    assert HOME.everything() == {"auth.json", "config.yaml", ".env"}
    assert HOME.settles == SETTLES and not HOME.new_dirs({"auth.json"})


def test_a_root_lists_its_profiles_again_only_when_one_may_have_come(tmp_path: Path) -> None:
    root = RootClassifier(tmp_path)
    write = root.classify([str(tmp_path / "profiles" / "t" / "auth.json"), str(tmp_path / "logs" / "x")])
    assert write == RootChange({"t": {"auth.json"}}) and not root.new_dirs(write)
    came = root.classify([str(tmp_path / "profiles" / "u")])
    assert came == RootChange({}, rescan=True) and root.new_dirs(came)
    cron = root.classify([str(tmp_path / "cron")])
    assert cron == RootChange({"default": {"cron/jobs.json"}}) and root.new_dirs(cron)
    assert root.classify([str(tmp_path / "profiles" / "t" / "sessions" / "s.json")]) is None
