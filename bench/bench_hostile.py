"""How fast hostile files are refused, against reading an ordinary file of the same kind.

    .venv/bin/python bench/bench_hostile.py [--n 50]

Each figure is the median of N runs of the real entry point (no CLI start-up):
- a YAML alias bomb (9 levels x 10 aliases = 10**9 leaves) refused by
  ``yamlread.load_plain`` and by the round-trip ``yamlread.load_tree``, against
  parsing an ordinary 40-line config.yaml the same two ways;
- 100,000-deep JSON refused by ``authfile.parse_store``, against parsing a 50-row store;
- a FIFO at auth.json refused by ``authfile.read_store``, against reading the real store;
- the redactor over a 4 KB error message with no key, and the shape check of a 50-row store.
The issue's bound is 100 ms for a refusal (plus read time). Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from store import authfile, shape
from store.config import yamlread  # noqa: E402
from store.errors import StoreUnreadable  # noqa: E402
from store.paths import Home  # noqa: E402
from store.redaction import redact

BOMB = ("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n"
                  for i in range(8)))
CONFIG = "".join(f"# note {i}\nkey_{i}:\n  provider: openrouter\n  model: m/{i}\n" for i in range(10))


def _median_ms(fn: Callable[[], object], n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        try:
            fn()
        except StoreUnreadable:
            pass
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    n = ap.parse_args().n
    tmp = Path(tempfile.mkdtemp())
    home = Home(tmp / "home")
    home.root.mkdir(mode=0o700)
    rows = [{"id": f"{i:06x}", "label": f"k{i}", "priority": i, "source": "manual",
             "access_token": f"sk-or-v1-{i:040d}", "request_count": i} for i in range(50)]
    store = json.dumps({"version": 1, "providers": {}, "credential_pool": {"openrouter": rows}}).encode()
    deep = b'{"credential_pool": {"p": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}}"
    p = home.config
    pairs = [
        ("alias bomb, PyYAML read", lambda: yamlread.load_plain(BOMB.encode(), p),
         "ordinary config, PyYAML read", lambda: yamlread.load_plain(CONFIG.encode(), p)),
        ("alias bomb, ruamel round-trip", lambda: yamlread.load_tree(BOMB.encode(), p),
         "ordinary config, ruamel round-trip", lambda: yamlread.load_tree(CONFIG.encode(), p)),
        ("100,000-deep JSON", lambda: authfile.parse_store(deep, home.auth),
         "50-row store parse", lambda: authfile.parse_store(store, home.auth)),
    ]
    home.auth.write_bytes(store)
    read_real = _median_ms(lambda: authfile.read_store(home), n)
    home.auth.rename(tmp / "real.json")
    os.mkfifo(home.auth)
    fifo = _median_ms(lambda: authfile.read_store(home), n)
    doc = json.loads(store)
    text = "provider said: " + "rate limit exceeded, try again later. " * 100
    r = redact.Redactor([row["access_token"] for row in rows])

    print(f"{'case':40} {'ms':>9}   {'baseline':40} {'ms':>9}  ratio")
    for name, fn, base_name, base in pairs:
        a, b = _median_ms(fn, n), _median_ms(base, n)
        print(f"{name:40} {a:9.3f}   {base_name:40} {b:9.3f}  {a / b:5.1f}x")
    print(f"{'FIFO at auth.json refused':40} {fifo:9.3f}   {'read_store of the 50-row store':40} "
          f"{read_real:9.3f}  {fifo / read_real:5.1f}x")
    sc = _median_ms(lambda: shape.check(doc, home.auth), n)
    parse = _median_ms(lambda: json.loads(store), n)
    print(f"{'shape check, 50 rows':40} {sc:9.3f}   {'json.loads of the same store':40} {parse:9.3f}  "
          f"{sc / parse:5.1f}x")
    red = _median_ms(lambda: r(text), n)
    print(f"{'redact 3.8 KB message, 50 secrets':40} {red:9.3f}")


if __name__ == "__main__":
    main()
