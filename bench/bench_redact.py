"""Benchmark: the output redactor over a large text, the former searches against the present.

    .venv/bin/python bench/bench_redact.py [--keys 1000] [--rounds 9]

The text is ``usage --json``'s shape over ``--keys`` credentials (about 420 kB at 1,000), its
redactor knowing each key's secret (each with a tail of its own, as real keys have), as
``bench/bench_usage.py`` makes them. Three pairs, measured in interleaved rounds (each first in
turn) and printed as median times and the median of the per-round ratios former/present:

- the key-shape test ("any key here?"): the former single alternation, each pattern starting
  with its ``(?<![A-Za-z0-9])`` boundary, against each pattern searched for its literal start;
- the known-secret scan: the former look-up of every window of 8 characters against every
  8th window of a long text;
- the whole redaction (a fresh redactor, as a process redacts its one output), and the same
  with ten key-shaped strings in the text (the substitutions run).

The former searches are the reference implementation of tests/store/test_redact_search_equal.py,
which holds them equal to the present ones. Prints the machine's load; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from store.redaction.redact import KEY_PATTERNS, Redactor  # noqa: E402
from tests.store.test_redact_search_equal import OLD_ANY_KEY, old_present, old_redact  # noqa: E402


def usage_json(keys: int) -> str:
    creds = [{"id": f"k{k:04d}", "label": f"bench key {k}", "requests": 1000 + k, "input_tokens": 2_500_000 + k,
              "output_tokens": 999_000 + k, "cache_read_tokens": 500_000, "cache_write_tokens": 0,
              "reasoning_tokens": 0, "cost_usd": 5.123456789 + k, "cost_status": "estimated",
              "cost_known_usd": 5.123456789 + k, "partial": 0} for k in range(keys)]
    return json.dumps({"since": "30d", "by": "key", "pools": {f"pool{p}": {"credentials": creds[p::7]}
                                                                for p in range(7)}}, indent=2)


def secrets_of(keys: int) -> list[str]:
    return [f"sk-or-v1-{'0123456789abcdef' * 4}{k:04d}" for k in range(keys)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args(argv)
    text, secrets = usage_json(args.keys), secrets_of(args.keys)
    known = set(secrets)
    keyed = text.replace('"partial": 0', '"partial": 0, "note": "sk-proj-' + "Ab1" * 8 + '"', 10)
    warm = Redactor(secrets)
    warm.redact("x" * 8)             # its tail index made
    assert warm.redact(text) == old_redact(known, text) and Redactor(secrets).redact(keyed) == old_redact(known, keyed)
    pairs: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
        "key-shape test": (lambda: OLD_ANY_KEY.search(text), lambda: any(p.search(text) for p in KEY_PATTERNS)),
        "known-secret scan": (lambda: old_present(known, text), lambda: warm._present(text)),
        "redact (fresh redactor)": (lambda: old_redact(known, text), lambda: Redactor(secrets).redact(text)),
        "redact, 10 keys in it": (lambda: old_redact(known, keyed), lambda: Redactor(secrets).redact(keyed)),
    }
    runs = [(name, side, f) for name, fs in pairs.items() for side, f in zip(("former", "present"), fs, strict=True)]
    times: dict[tuple[str, str], list[float]] = {(n, s): [] for n, s, _ in runs}
    for r in range(args.rounds):
        for name, side, f in runs[r % len(runs):] + runs[:r % len(runs)]:
            t = time.perf_counter()
            f()
            times[(name, side)].append(time.perf_counter() - t)
    print(f"redactor over usage --json of {args.keys:,} keys ({len(text) / 1000:.0f} kB, {len(known):,} secrets), "
          f"{args.rounds} interleaved rounds (load {os.getloadavg()[0]:.2f}); medians:")
    for name in pairs:
        old, new = times[(name, "former")], times[(name, "present")]
        ratio = statistics.median(o / n for o, n in zip(old, new, strict=True))
        print(f"  {name:26} former {statistics.median(old) * 1000:7.1f} ms   present "
              f"{statistics.median(new) * 1000:7.1f} ms   former/present {ratio:5.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
