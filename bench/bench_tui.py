"""Dashboard figures at 6, 1,000 and 10,000 credentials, side by side in ONE run.

    .venv/bin/python bench/bench_tui.py        # about 3 minutes; prints, never asserts
    .venv/bin/python bench/bench_tui.py profiles   # only the root-of-profiles case
    .venv/bin/python bench/bench_tui.py startup    # only the first-paint-against-bare-Textual case
    .venv/bin/python bench/bench_tui.py startup --against DIR   # and an older tree (git archive) beside it

Start-up case (issue 28): the console's first paint of a home of 6 credentials against
bench/baseline_app.py showing a static 6-row table, both spawned the same way in the same
tmux (the project's python, modules compiled), interleaved, the median of 15 spawns each,
with the CPU each process used until that paint beside the wall time (the steadier figure on a
shared machine); goal: console / bare Textual <= 1.5x. Then the start-up alone, without a
terminal: the CPU ms of importing the console's entry and building its app (as
``hermes-admin --home DIR`` does) against importing Textual and building the bare app, in
fresh interpreters, interleaved (the figure least moved by the machine's load).

Profiles case (issue 12): a root of 50 profiles x 10 credentials (``--root``) against one
home of 500 credentials in 50 pools; goals: first paint <= 1.3x, write->screen p95 <= 1.2x,
idle CPU <= 1.2x the single home.

The installed hermes-admin runs in tmux at 140x45 on homes of 6, 1,000 and 10,000
credentials (half of them cooling, 20 pools). For each size:
- first paint: spawn -> a credential row on screen (``tmux capture-pane``);
- idle CPU: every thread's run time from /proc/<pid>/task/*/schedstat (ns) over a 12 s window,
  nothing written;
- RSS after that window;
- write -> on screen: another process renames a visible row under the Hermes lock
  (store.transaction: flock on auth.lock, atomic replace) and the new label is
  polled for with capture-pane; p50/p95 over 20 writes.
The baseline for idle CPU is bench/baseline_app.py (a bare Textual app, one static
1,000-row DataTable, no timers, no watcher) in the same terminal, same run.
Goals (issue 10): p95(1000)/p95(6) and p95(10000)/p95(6) <= 1.25; idle CPU(1000) <=
2x baseline; idle CPU(10000) <= 1.2x idle CPU(1000); first paint(10000) <= 1.5 s;
RSS(10000) <= 250 MB.
"""

from __future__ import annotations

import compileall
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from store import authfile  # noqa: E402
from store.paths import Home  # noqa: E402
from store.transaction import transaction  # noqa: E402
from tests import tmux  # noqa: E402

SIZE = (140, 45)
IDLE_S = 12.0
WRITES = 20


def make_home(root: Path, n: int, *, pools: int = 5, cooling_every: int = 2, salt: str = "",
              short: bool = False) -> Home:
    """n credentials over *pools* pools; every *cooling_every*-th one benched by a 429
    (*short*: every cooldown under ten minutes, so every countdown shows seconds)."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    now = time.time()
    per = max(1, n // pools)
    cp: dict[str, list[dict]] = {}
    for i in range(n):
        p = f"pool{i // per:02d}"
        rows = cp.setdefault(p, [])
        cooling = i % cooling_every == 0
        rows.append({
            "id": f"{i:06x}", "label": f"key-{i:05d}", "auth_type": "api_key",
            "priority": len(rows), "source": "manual",
            # Distinct tails, as real keys have (a shared tail is the fingerprint test's job).
            "access_token": "sk-or-v1-" + hashlib.sha256(f"{salt}{i}".encode()).hexdigest()[:40],
            "last_status": "exhausted" if cooling else None,
            # 10 min .. 1 h left (short: 60 s .. 10 min): nothing flips to ready while measuring.
            "last_status_at": (now - (3010 + i % 530 if short else i % 3000)) if cooling else None,
            "last_error_code": 429 if cooling else None,
            "last_error_reason": "rate_limit_exceeded" if cooling else None,
            "last_error_message": None, "last_error_reset_at": None,
            "request_count": i % 97,
        })
    doc = {"version": 1, "providers": {}, "credential_pool": cp}
    path = root / "auth.json"
    # As Hermes writes it (updated_at stamped, its layout): the writes measured then each
    # change one row's bytes, as a live agent's do. (A file without updated_at made the
    # first measured write add a key, a whole re-read, off the path being measured.)
    path.write_bytes(authfile.serialize(doc))
    os.chmod(path, 0o600)
    return Home(root)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def start(home: Home, size=SIZE, args: tuple[str, ...] | None = None) -> tmux.Tmux:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        raise SystemExit("hermes-admin is not installed (pip install -e .)")
    env = {k: v for k, v in os.environ.items() if not k.endswith(("API_KEY", "_TOKEN"))}
    return tmux.Tmux.start([exe, *(args or ("--home", str(home.root)))], size=size, env=env)


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of *pid*, in seconds, to the nanosecond.

    /proc/<pid>/task/<tid>/schedstat's first field is the time the thread ran (ns). The
    utime+stime of /proc/<pid>/stat count 10 ms clock ticks: over a 12 s window one tick is
    0.08 % of a core, as much as a whole idle Textual app, so a 2x ratio was two or three
    ticks either way. Threads that ended during the window are lost from both readings alike.
    """
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def idle_cpu(pid: int, seconds: float = IDLE_S) -> float:
    """Share of one core used by *pid* over *seconds* (percent)."""
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - c0) / (time.monotonic() - t0) * 100


def latencies(home: Home, term: tmux.Tmux, writes: int = WRITES) -> list[float]:
    """ms from a locked write's release to its text on screen, per write."""
    lat = []
    for i in range(writes):
        # Same length as the label it replaces ("key-00000"): no column re-measures.
        label = f"w{i:03d}-{os.getpid() % 10000:04d}"
        with transaction(home) as doc:
            doc["credential_pool"]["pool00"][0]["label"] = label
        # The clock starts when the write has landed (lock released, file replaced): the
        # writer's own read-modify-write of a 10,000-row file is not the dashboard's cost.
        t0 = time.perf_counter()
        while label not in term.capture():
            if time.perf_counter() - t0 > 10:
                raise SystemExit(f"write {i} never showed")
        lat.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.15)
    return lat


def measure(tmp: Path, n: int, *, home: Home | None = None,
            args: tuple[str, ...] | None = None, short: bool = False) -> dict[str, float]:
    home = home or make_home(tmp / f"h{n}{'s' if short else ''}", n, pools=min(20, n), short=short)
    t0 = time.perf_counter()
    with start(home, args=args) as term:
        term.wait_for("key-00000", timeout=60, interval=0.005)
        paint = time.perf_counter() - t0
        pid = term.pane_pid()
        time.sleep(3.0)  # first-paint work and the first ticks settle
        cpu = idle_cpu(pid)
        rss = rss_mb(pid)
        lat = latencies(home, term)
    return {"paint": paint, "cpu": cpu, "rss": rss, "p50": pct(lat, .5), "p95": pct(lat, .95)}


def baseline_cpu() -> float:
    cmd = [sys.executable, str(ROOT / "bench" / "baseline_app.py")]
    with tmux.Tmux.start(cmd, size=SIZE, env=dict(os.environ)) as term:
        term.wait_for("key-00000", timeout=30)
        time.sleep(3.0)
        return idle_cpu(term.pane_pid())


def make_root(path: Path, profiles: int = 50, per: int = 10) -> Home:
    """The default profile and profiles-1 named ones, *per* credentials each (own keys)."""
    make_home(path, per, pools=1, salt="default")
    for k in range(1, profiles):
        make_home(path / "profiles" / f"team-{k:02d}", per, pools=1, salt=f"team-{k:02d}")
    return Home(path)


def paint_once(home: Home, args: tuple[str, ...] | None = None) -> float:
    t0 = time.perf_counter()
    with start(home, args=args) as term:
        term.wait_for("key-00000", timeout=60, interval=0.005)
        return time.perf_counter() - t0


def paints(cases: dict[str, tuple[Home, tuple[str, ...] | None]], runs: int = 5) -> dict[str, float]:
    """Median first paint per case over *runs* spawns, the cases interleaved: one spawn's
    start-up varies by a few hundred ms on a shared machine."""
    got: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, (home, args) in cases.items():
            got[name].append(paint_once(home, args))
    return {name: statistics.median(v) for name, v in got.items()}


def profiles_case(tmp: Path) -> None:
    """A root of 50 profiles x 10 credentials against one home of 500, same run."""
    home = make_home(tmp / "single500", 500, pools=50)
    single = measure(tmp, 500, home=home)
    root = make_root(tmp / "root50")
    multi = measure(tmp, 500, home=root, args=("--root", str(root.root)))
    # Fresh copies: measure() renamed the first row of the ones above.
    home2, root2 = make_home(tmp / "single500p", 500, pools=50), make_root(tmp / "root50p")
    med = paints({"single": (home2, None), "root": (root2, ("--root", str(root2.root)))})
    single["paint"], multi["paint"] = med["single"], med["root"]
    print("(paint: the median of 5 spawns per case, interleaved)")
    print(f"{'case':>22} {'paint s':>8} {'idle CPU %':>10} {'RSS MB':>7} {'p50 ms':>7} {'p95 ms':>7}")
    for name, m in (("one home, 500", single), ("root, 50 x 10", multi)):
        print(f"{name:>22} {m['paint']:>8.2f} {m['cpu']:>10.2f} {m['rss']:>7.0f} "
              f"{m['p50']:>7.1f} {m['p95']:>7.1f}")
    print(f"first paint root/home = {multi['paint'] / single['paint']:.2f}x (goal <= 1.3)")
    print(f"write->screen p95 root/home = {multi['p95'] / single['p95']:.2f}x (goal <= 1.2)")
    print(f"idle CPU root/home = {multi['cpu'] / max(single['cpu'], 1e-9):.2f}x (goal <= 1.2)")


def process_cpu(pid: int | None) -> float:
    """CPU seconds *pid* has used since it started, every thread counted, ended ones too
    (utime + stime of /proc/<pid>/stat, 10 ms ticks)."""
    if pid is None:
        return float("nan")
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spawn_paint(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) from spawn to the first row on screen."""
    t0 = time.perf_counter()
    with tmux.Tmux.start(argv, size=SIZE, env=env, cwd=cwd) as term:
        term.wait_for("key-00000", timeout=60, interval=0.005)
        wall = time.perf_counter() - t0
        return wall, process_cpu(term.pane_pid())


def startup_case(tmp: Path, runs: int = 15, against: Path | None = None) -> None:
    """First paint of the console on a small home against a bare Textual app with a static
    table: spawn -> the first row on screen, interleaved spawns, medians.

    Wall time on a shared 2-core machine follows the load more than the code; the CPU the
    process used until that paint (every thread) is printed beside it, the figure that
    compares the two programs' own work (issue 28: first paint within 1.5x, both figures).

    *against*: another source tree of hermes-admin (an older commit, ``git archive``d) run as
    ``python -m tui.cli`` from it, interleaved too, this tree then spawned the same way: before
    and after in one run."""
    home = make_home(tmp / "startup6", 6, pools=2)
    exe = tmux.installed_hermes_admin()
    if exe is None:
        raise SystemExit("hermes-admin is not installed (pip install -e .)")
    console_env = {k: v for k, v in os.environ.items() if not k.endswith(("API_KEY", "_TOKEN"))}
    bare = [sys.executable, str(ROOT / "bench" / "baseline_app.py"), "6"]
    got: dict[str, list[tuple[float, float]]] = {"console": [], "bare": []}
    other = None
    if against is not None:
        compileall.compile_dir(str(against), quiet=1)
        other = ([sys.executable, "-m", "tui.cli", "--home", str(home.root)],
                 {**console_env, "PYTHONPATH": str(against)})
        got["against"] = []
    this = ([exe, "--home", str(home.root)], console_env, None)
    if other is not None:     # both trees spawned alike: python -m tui.cli from each
        this = ([sys.executable, "-m", "tui.cli", "--home", str(home.root)], console_env, ROOT)
    for _ in range(runs):
        got["console"].append(spawn_paint(*this))
        got["bare"].append(spawn_paint(bare, dict(os.environ)))
        if other is not None:
            got["against"].append(spawn_paint(other[0], other[1], cwd=against))   # -m puts the cwd first
    wall = {k: statistics.median(w for w, _c in v) for k, v in got.items()}
    cpu = {k: statistics.median(c for _w, c in v) for k, v in got.items()}
    print(f"first paint, 6 credentials (medians of {runs} interleaved spawns; load average "
          f"{os.getloadavg()[0]:.2f}):")
    print(f"  wall: console {wall['console']:.2f} s, bare Textual + static table {wall['bare']:.2f} s"
          f" = {wall['console'] / wall['bare']:.2f}x (goal <= 1.5)")
    print(f"  CPU to first paint: console {cpu['console']:.2f} s, bare {cpu['bare']:.2f} s"
          f" = {cpu['console'] / cpu['bare']:.2f}x")
    if against is not None:
        print(f"  the tree at {against}: wall {wall['against']:.2f} s = {wall['against'] / wall['bare']:.2f}x, "
              f"CPU {cpu['against']:.2f} s = {cpu['against'] / cpu['bare']:.2f}x")
    builds = {"console": [], "bare": []}
    for _ in range(runs):
        for name, code in (("console", _BUILD_CONSOLE), ("bare", _BUILD_BARE)):
            out = subprocess.run([sys.executable, "-c", code, str(home.root)], cwd=ROOT, capture_output=True,
                                 text=True, check=True, env=console_env)
            builds[name].append(float(out.stdout))
    ms = {k: statistics.median(v) for k, v in builds.items()}
    print(f"  imports + app built, CPU: console {ms['console']:.0f} ms, bare {ms['bare']:.0f} ms"
          f" = {ms['console'] / ms['bare']:.2f}x (medians of {runs}, fresh interpreters)")


# What `hermes-admin --home DIR` does before its app runs, and the bare app's equivalent: each
# prints the CPU ms its process spent on it.
_BUILD_CONSOLE = """import sys, time
c = time.process_time()
from store.paths import Home
from tui.cli import entry
entry.build_parser(["--home", sys.argv[1]]).parse_args(["--home", sys.argv[1]])
from tui.app.console import HermesAdminApp
from tui.app.keymap import keymap_path
HermesAdminApp(Home(sys.argv[1]), keymap_file=keymap_path())
print((time.process_time() - c) * 1000)"""
_BUILD_BARE = """import sys, time
c = time.process_time()
sys.argv[1:] = ["6"]
sys.path.insert(0, "bench")
import baseline_app
baseline_app.Baseline()
print((time.process_time() - c) * 1000)"""


def compile_project() -> None:
    """First paint includes start-up: measure it with the modules compiled, as an installed
    wheel has them (`make bytecode`), not compiled again on every spawn."""
    for package in ("store", "tui", "screens"):
        compileall.compile_dir(str(ROOT / package), quiet=1)


def main() -> None:
    if not tmux.available():
        raise SystemExit("tmux is needed (apt-get install tmux)")
    tmp = Path(tempfile.mkdtemp(prefix="hermes-admin-bench-"))
    compile_project()
    try:
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, tmux {SIZE[0]}x{SIZE[1]}")
        polls = []
        with start(make_home(tmp / "probe", 6, pools=2)) as term:
            term.wait_for("key-00000", timeout=20)
            for _ in range(30):
                t = time.perf_counter()
                term.capture()
                polls.append((time.perf_counter() - t) * 1000)
        print(f"poll granularity (one capture-pane): median {statistics.median(polls):.1f} ms")
        base = baseline_cpu()
        print(f"baseline (bench/baseline_app.py, static 1,000-row DataTable): idle CPU {base:.2f}%")
        r = {n: measure(tmp, n) for n in (6, 1000, 10_000)}
        # First paint again as the median of 3 interleaved spawns per size (one spawn varies).
        med = paints({n: (make_home(tmp / f"paint{n}", n, pools=min(20, n)), None) for n in (6, 10_000)}, 3)
        r[6]["paint"], r[10_000]["paint"] = med[6], med[10_000]
        print(f"{'credentials':>12} {'paint s':>8} {'idle CPU %':>10} {'RSS MB':>7} "
              f"{'p50 ms':>7} {'p95 ms':>7}")
        for n, m in r.items():
            print(f"{n:>12,} {m['paint']:>8.2f} {m['cpu']:>10.2f} {m['rss']:>7.0f} "
                  f"{m['p50']:>7.1f} {m['p95']:>7.1f}")
        p95_6 = r[6]["p95"]
        print(f"p95(1000)/p95(6)   = {r[1000]['p95'] / p95_6:.2f}x (goal <= 1.25)")
        print(f"p95(10000)/p95(6)  = {r[10_000]['p95'] / p95_6:.2f}x (goal <= 1.25)")
        print(f"idle CPU(1000)/baseline = {r[1000]['cpu'] / max(base, 1e-9):.2f}x (goal <= 2)")
        print(f"idle CPU(10000)/idle CPU(1000) = "
              f"{r[10_000]['cpu'] / max(r[1000]['cpu'], 1e-9):.2f}x (goal <= 1.2)")
        print(f"first paint(10000) = {r[10_000]['paint']:.2f} s, median of 3 (goal <= 1.5; "
              f"6 credentials: {r[6]['paint']:.2f} s)")
        print(f"RSS(10000) = {r[10_000]['rss']:.0f} MB (goal <= 250)")
        # The worst case for idle CPU: countdowns show seconds only under ten minutes, so
        # here every visible cooling row (about 21 at 140x45) is redrawn every second.
        worst = measure(tmp, 1000, short=True)
        print(f"idle CPU(1000, every cooldown < 10 min) = {worst['cpu']:.2f}% = "
              f"{worst['cpu'] / max(base, 1e-9):.2f}x baseline (the worst case; no goal of its own)")
        profiles_case(tmp)
        startup_case(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    _against = sys.argv[3:4] if sys.argv[2:3] == ["--against"] else []
    if sys.argv[1:] in (["profiles"], ["startup"]) or (sys.argv[1:2] == ["startup"] and _against):
        # one case alone (still one run, own baseline); startup --against TREE adds an older tree
        _tmp = Path(tempfile.mkdtemp(prefix="hermes-admin-bench-"))
        compile_project()
        try:
            if sys.argv[1] == "profiles":
                profiles_case(_tmp)
            else:
                startup_case(_tmp, against=Path(_against[0]).resolve() if _against else None)
        finally:
            shutil.rmtree(_tmp, ignore_errors=True)
    else:
        main()
