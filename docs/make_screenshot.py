"""Make docs/screenshot.svg: the console of `make demo`, frozen, through Textual's own export.

    make screenshot     # or: .venv/bin/python docs/make_screenshot.py [--out FILE] [--size 140x36]

It seeds what `hermes-admin demo` seeds (the demo home's four pools, its config.yaml and
.env, the three team profiles beside it) in a temporary folder, with a few minutes of the
demo agents' traffic written in, and opens the root console on it as `make demo` does,
with a frozen clock and no watcher, as the snapshot tests do. No process is started, and
nothing outside the temporary folder is written but the SVG. The console shows keys only
as fingerprints; the script checks that no demo key is in the SVG in clear before writing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from store.authfile import atomic_write_bytes, ensure_home, serialize
from store.paths import Home
from store.profiles.root import Root
from tui.app.root_console import RootApp
from tui.demo.launch import KEYS, config_yaml, seed_store
from tui.demo.profiles import PROFILE_KEYS, seed_profiles
from tui.services.clock import FakeClock

NOW = 1_767_277_923.0              # 2026-01-01 14:32:03 UTC: the picture never moves
PROVIDER = "http://127.0.0.1:8700"  # where the demo's fake provider would listen
OUT = Path(__file__).resolve().parent / "screenshot.svg"


def seed(root: Path) -> Home:
    """The demo's home under *root*, as `hermes-admin demo` writes it, with agents' traffic."""
    home = Home(root)
    ensure_home(home)
    doc = seed_store(PROVIDER, NOW)
    # A few minutes of the demo's agents: request counts, and the first key of openrouter
    # benched by its scripted 429 quota.
    counts = {"a1b2c3": 41, "d4e5f6": 37, "0e0e0e": 12, "cdx001": 5, "t0g001": 8}
    for rows in doc["credential_pool"].values():
        for row in rows:
            row["request_count"] = counts.get(row["id"], row.get("request_count", 0))
    doc["credential_pool"]["openrouter"][0].update(
        last_status="exhausted", last_status_at=NOW - 4, last_error_code=429,
        last_error_reason="rate_limit_exceeded", last_error_message="Rate limit exceeded: 3 per 15s",
        last_error_reset_at=(NOW + 11) * 1000)
    atomic_write_bytes(home.auth, serialize(doc))
    atomic_write_bytes(home.config, config_yaml(PROVIDER).encode())
    atomic_write_bytes(home.env, f"OPENROUTER_API_KEY={KEYS['or_env']}\n".encode())
    seed_profiles(home, NOW)
    return home


async def shoot(root: Root, size: tuple[int, int]) -> str:
    app = RootApp(root, clock=FakeClock(NOW), watch=False, tick=False)
    app.animation_level = "none"
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        return app.export_screenshot(title="hermes-admin demo")


def workdir() -> tuple[Path, bool]:
    """The folder to seed: a fixed name when free, so the path on screen (and so the SVG)
    is the same on every run; a fresh random one otherwise. Created here, never reused."""
    fixed = Path(tempfile.gettempdir()) / "hermes-admin-demo"
    try:
        fixed.mkdir(mode=0o700)
        return fixed, True
    except FileExistsError:
        return Path(tempfile.mkdtemp(prefix="hermes-admin-demo-")), False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--size", default="140x36", help="COLUMNSxROWS (default 140x36)")
    args = parser.parse_args()
    cols, rows = (int(n) for n in args.size.lower().split("x"))
    os.environ["TZ"] = "UTC"     # the clock in the status bar: the same wherever it is made
    time.tzset()
    tmp, fixed = workdir()
    if not fixed:
        print(f"note: {tmp.parent / 'hermes-admin-demo'} exists; the SVG will show {tmp}")
    try:
        home = seed(tmp / "home")
        svg = asyncio.run(shoot(Root(home.root), (cols, rows)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    leaked = [name for name, key in {**KEYS, **PROFILE_KEYS}.items() if key in svg]
    if leaked:
        raise SystemExit(f"refusing to write {args.out}: keys in clear: {', '.join(leaked)}")
    args.out.write_text(svg, encoding="utf-8")
    print(f"wrote {args.out} ({cols}x{rows})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
