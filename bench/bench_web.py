"""Keypress-to-paint: the console through `hermes-admin web` in Chromium against the same console in tmux.

    .venv/bin/python bench/bench_web.py [--keys 40]     # about a minute; prints, never asserts

One home (an ok key and a benched one), one run, the same keys on both sides: ``Down`` and
``Up``, alternately, each moving the table's cursor (a repaint of two rows).

- tmux: the installed ``hermes-admin`` in a 120x35 pane. From just before ``tmux send-keys``
  to the first ``capture-pane -e`` (colours included: the cursor row is a colour; polled
  every 2 ms) that differs from the screen before. Each probe is a tmux client process, so
  the median cost of one send-keys and one capture is measured too, and a second ratio
  takes it off the tmux side.
- browser: the installed ``hermes-admin web`` and Debian's chromium (headless, through
  playwright's ``executable_path``), the window sized to about 120x35 cells. Measured in
  the page: from the ``keydown`` event to the second animation frame after the first
  WebSocket message that follows it (xterm.js parses the bytes, then draws on the next
  frame: the second frame is when the change is on screen).

Goal (issue 31): browser p50 within 2x of tmux p50. Keys are spaced 150 ms apart so each
change has settled; a bench may wait, a test never does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from store.paths import Home  # noqa: E402
from tests import tmux  # noqa: E402
from tests.conftest import cli_env  # noqa: E402
from tests.terminal.seeds import primary_and_benched_backup  # noqa: E402
from tests.web.browser import CHROMIUM, CHROMIUM_ARGS, start_web, wait_until  # noqa: E402

SIZE = (120, 35)
GAP_S = 0.15
KEYS_TMUX = ("Down", "Up")
KEYS_PAGE = ("ArrowDown", "ArrowUp")

HOOK = """(() => {
  window.__lat = []; window.__t0 = null; window.__pending = false;
  document.addEventListener("keydown", () => { window.__t0 = performance.now(); window.__pending = true; }, true);
  const N = window.WebSocket;
  window.WebSocket = class extends N {
    constructor(u, p) { super(u, p);
      this.addEventListener("message", () => {
        if (!window.__pending) return;
        window.__pending = false;
        const t0 = window.__t0;
        requestAnimationFrame(() => requestAnimationFrame(() => window.__lat.push(performance.now() - t0)));
      });
    }
  };
})();"""


def seed(home: Home) -> None:
    home.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    primary_and_benched_backup(home, "sk-or-v1-0123456789abcdefBENCHweb01", "sk-or-v1-0123456789abcdefBENCHweb02")


def painted(term: tmux.Tmux) -> str:
    """The pane with its colours (the cursor row differs only in colour)."""
    return subprocess.run([tmux.TMUX or "tmux", "-L", term.socket, "capture-pane", "-e", "-p", "-t", term.session],
                          capture_output=True, text=True, timeout=10).stdout


def in_tmux(home: Home, n: int) -> tuple[list[float], float]:
    """The latencies, and the median cost of one send-keys plus one capture (the probe's own)."""
    exe = tmux.installed_hermes_admin()
    env = cli_env(home)
    env.pop("NO_COLOR", None)
    out = []
    probe = []
    with tmux.Tmux.start([exe, "--home", str(home.root), "--read-only"], size=SIZE, env=env) as term:
        term.wait_for("backup", timeout=20)
        time.sleep(1.0)
        for _ in range(10):
            t0 = time.perf_counter()
            term.send("F13")                 # a key the console ignores
            painted(term)
            probe.append((time.perf_counter() - t0) * 1000)
        for i in range(n):
            before = painted(term)
            t0 = time.perf_counter()
            term.send(KEYS_TMUX[i % 2])
            deadline = t0 + 5
            while painted(term) == before:
                if time.perf_counter() > deadline:
                    raise SystemExit(f"tmux: key {i} changed nothing in 5 s")
                time.sleep(0.002)
            out.append((time.perf_counter() - t0) * 1000)
            time.sleep(GAP_S)
    return out, statistics.median(probe)


def in_browser(home: Home, n: int, tmp: Path) -> list[float]:
    from playwright.sync_api import sync_playwright

    with start_web(home, tmp) as web, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            # Roboto Mono at 16 px: about 9.6 x 18 px a cell.
            context = browser.new_context(viewport={"width": int(SIZE[0] * 9.7), "height": SIZE[1] * 18 + 6})
            context.add_init_script(HOOK)
            page = context.new_page()
            page.goto(web.first_link())
            page.wait_for_selector("body.-first-byte", timeout=20_000)
            page.wait_for_timeout(1000)
            page.evaluate("window.__lat = []")
            for i in range(n):
                page.keyboard.press(KEYS_PAGE[i % 2])
                page.wait_for_function(f"window.__lat.length >= {i + 1}", timeout=5_000)
                page.wait_for_timeout(GAP_S * 1000)
            lat = page.evaluate("window.__lat")
        finally:
            browser.close()
        wait_until(lambda: not web.children(), 10, "the console process to end")
    return [float(x) for x in lat]


def summary(name: str, xs: list[float]) -> tuple[float, float]:
    xs = sorted(xs)
    p50 = statistics.median(xs)
    p95 = xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]
    print(f"  {name:8} n={len(xs):3}  p50 {p50:6.1f} ms   p95 {p95:6.1f} ms   min {xs[0]:6.1f} ms")
    return p50, p95


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=40)
    args = ap.parse_args()
    if not tmux.available():
        raise SystemExit("tmux is needed (apt-get install tmux)")
    if not os.path.exists(CHROMIUM):
        raise SystemExit("chromium is needed (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="bench-web-") as d:
        tmp = Path(d)
        home = Home(tmp / "home")
        seed(home)
        print(f"keypress-to-paint, {args.keys} keys each (Down and Up, alternately), {SIZE[0]}x{SIZE[1]}")
        lat, probe = in_tmux(home, args.keys)
        t = summary("tmux", lat)
        print(f"  (the tmux probe itself, one send-keys and one capture-pane: {probe:.1f} ms)")
        b = summary("browser", in_browser(home, args.keys, tmp))
    print(f"  ratio browser/tmux: p50 {b[0] / t[0]:.2f}x, p95 {b[1] / t[1]:.2f}x (goal: p50 within 2x)")
    print(f"  ratio with the probe's cost taken from tmux: p50 {b[0] / max(1e-3, t[0] - probe):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
