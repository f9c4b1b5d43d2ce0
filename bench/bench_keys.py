"""What the key order (tui/app/key_order.py) costs: a burst of keys, on and off, in ONE run.

    .venv/bin/python bench/bench_keys.py        # about 30 s; prints, never asserts

The console runs headless (Pilot) on the sample home at 80x24. A burst of 40 cursor moves
(``down``, as a held-down key or a paste delivers them) is posted in one go on a pool of 80 keys;
the figure is the time until the last one has moved the cursor, median of 7 bursts, with the key order on and then off
in the same process. The ratio on/off is what one key waiting for the previous one to settle
costs a burst; each key still moves the cursor at once when typed at human speed.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from textual import events  # noqa: E402

from store.paths import Home  # noqa: E402
from tests.conftest import make_row, make_store, write_store  # noqa: E402
from tests.tui_sample import app_for, table_of  # noqa: E402

KEYS = 40
ROUNDS = 7


async def burst_seconds(enabled: bool) -> list[float]:
    home = Home(Path(tempfile.mkdtemp()) / "home")
    home.root.mkdir(mode=0o700)
    write_store(home, make_store({"openrouter": [
        make_row(f"r{i:05d}", label=f"key-{i}", token=f"sk-or-v1-bench{i:040d}", priority=i)
        for i in range(KEYS * 2)]}))
    app = app_for(home)
    out = []
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.key_order.enabled = enabled
        table = table_of(app)
        for _ in range(ROUNDS):
            table.move_cursor(row=1)
            await pilot.pause()
            start_row = table.cursor_row
            t0 = time.perf_counter()
            for _ in range(KEYS):
                app.post_message(events.Key("down", None))
            deadline = t0 + 30
            while time.perf_counter() < deadline:
                await asyncio.sleep(0.001)
                if table.cursor_row >= start_row + KEYS:
                    break
            out.append(time.perf_counter() - t0)
            for _ in range(3000):            # bounded: the last key's settling
                await asyncio.sleep(0.001)
                if not (app.key_order.token or app.key_order.waiting):
                    break
            await pilot.pause()
    return out


def main() -> None:
    on = statistics.median(asyncio.run(burst_seconds(True)))
    off = statistics.median(asyncio.run(burst_seconds(False)))
    print(f"burst of {KEYS} keys, median of {ROUNDS}: key order on {on * 1000:.0f} ms, "
          f"off {off * 1000:.0f} ms, ratio {on / off:.2f}x ({on / KEYS * 1000:.1f} ms a key on)")


if __name__ == "__main__":
    main()
