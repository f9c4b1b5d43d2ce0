"""Make docs/web-1280x800.png and docs/web-800x500.png: `hermes-admin web` in a real Chromium.

    make screenshot     # or: .venv/bin/python docs/make_web_screenshots.py

It seeds the demo's home and profiles (as docs/make_screenshot.py does, stamped now, so
the cooldowns count down) in a temporary folder, starts the installed
``hermes-admin web --root`` on a free loopback port, opens its link in Debian's chromium
(headless, through playwright's ``executable_path``; nothing is downloaded), and takes the
page at two window sizes: the first link in one, the next link the server prints in the
other. Every wait is bounded. Refuses to write a picture of a page, or of what its socket
brought, that holds a demo key.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import make_screenshot as demo_shot

from tui.demo.launch import KEYS
from tui.demo.profiles import PROFILE_KEYS

DOCS = Path(__file__).resolve().parent
SIZES = ((1280, 800), (800, 500))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LINK = re.compile(r"(http://\S+\?token=[A-Za-z0-9_-]+)")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _links(out: Path, n: int, timeout: float = 20.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = LINK.findall(out.read_text(errors="replace"))
        if len(found) >= n:
            return found
        time.sleep(0.05)   # polling a file another process writes (bounded)
    raise SystemExit(f"hermes-admin web printed no link: {out.read_text(errors='replace')[-400:]}")


def _settled(page, quiet_ms: int = 700, timeout_ms: int = 20_000) -> None:
    """Wait until the console has drawn and the page got no new frame for *quiet_ms*."""
    page.wait_for_selector("body.-first-byte", timeout=timeout_ms)
    page.wait_for_function(f"() => performance.now() - (window.lastFrame || 0) > {quiet_ms}",
                           timeout=timeout_ms)


QUIET = """(() => { const N = window.WebSocket; window.WebSocket = class extends N {
  constructor(u, p) { super(u, p); this.addEventListener("message", () => { window.lastFrame = performance.now(); }); }
}; })();"""


def main() -> int:
    from playwright.sync_api import sync_playwright

    exe = Path(sys.executable).parent / "hermes-admin"
    tmp, _ = demo_shot.workdir()
    demo_shot.NOW = time.time()        # the real clock: the console's countdowns run
    shots: list[Path] = []
    proc = None
    try:
        home = demo_shot.seed(tmp / "home")
        out = tmp / "web.out"
        env = dict(os.environ, TZ="UTC")
        with open(out, "wb") as fh:
            proc = subprocess.Popen([str(exe), "web", "--root", str(home.root), "--port", str(_port())],
                                    stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                for i, (w, h) in enumerate(SIZES):
                    link = _links(out, i + 1)[i]
                    context = browser.new_context(viewport={"width": w, "height": h})
                    context.add_init_script(QUIET)
                    page = context.new_page()
                    frames: list[str] = []
                    page.on("websocket", lambda ws, into=frames: ws.on("framereceived", lambda f: into.append(
                        f if isinstance(f, str) else bytes(f).decode("utf-8", "replace"))))
                    page.goto(link)
                    _settled(page)
                    seen = page.content() + "".join(frames)
                    leaked = [n for n, k in {**KEYS, **PROFILE_KEYS}.items() if k in seen]
                    if leaked:
                        raise SystemExit(f"refusing to write a picture: keys in the page: {', '.join(leaked)}")
                    target = DOCS / f"web-{w}x{h}.png"
                    page.screenshot(path=str(target))
                    shots.append(target)
                    context.close()
            finally:
                browser.close()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
    for s in shots:
        print(f"wrote {s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
