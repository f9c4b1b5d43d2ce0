"""The monitor's text exposition: prometheus_client's own bytes, kept per series.

prometheus_client formats about 30,000 samples a second here, and 10,000 credentials are
70,000 samples: 2.5 s a scrape. So :class:`Exposition` serves the same bytes from a cache:
every line is still formatted by prometheus_client (``generate_latest``), once per series
and value, and a scrape only joins cached lines, formatting afresh only what changed (a
cooling credential's seconds left: the series' cached prefix plus prometheus_client's own
``floatToGoString``). tests/monitor/test_metrics.py checks that both give the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.utils import floatToGoString

from store.monitor.metrics import (
    CRED_FAMILIES,
    OTHER_FAMILIES,
    Family,
    MonitorCollector,
    Samples,
    credential_labels,
    credential_samples,
    filled,
    other_samples,
)
from store.monitor.sample import state_at
from store.pools.policy import COOLING
from store.pools.view import CredentialView


class _Fixed:
    """A collector of families already built (what generate_latest takes)."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


def render_lines(families: Sequence[Family], samples: Samples) -> list[str]:
    """One exposition line per sample (a histogram's lines together; newline included), in order, each
    formatted by prometheus_client."""
    order: list[list[int]] = [[] for _ in families]
    for i, (fi, _labels, _value) in enumerate(samples):
        order[fi].append(i)
    text = generate_latest(_Fixed(filled(families, samples))).decode("utf-8")
    out = [""] * len(samples)
    fi, got = -1, 0
    part: list[str] = []
    for line in text.split("\n")[:-1]:
        if line.startswith("# HELP "):
            fi, got = fi + 1, 0
        elif not line.startswith("# TYPE "):
            i = order[fi][got]
            part.append(line + "\n")
            if len(part) == families[fi].lines(samples[i][2]):     # a histogram is several lines
                out[i] = "".join(part)
                part = []
                got += 1
    if any(not line for line in out):
        raise RuntimeError("prometheus_client wrote a different number of lines than samples")
    return out


def headers(families: Sequence[Family]) -> list[str]:
    """Each family's ``# HELP`` and ``# TYPE`` lines, as prometheus_client writes them."""
    return [generate_latest(_Fixed([f.make()])).decode("utf-8") for f in families]


# A credential's cached block: its lines per credential family; for a cooling credential the
# seconds-left family holds the series' prefix only (its value changes every scrape).
Block = tuple[str, str, str, str, str]


class Exposition:
    """The collector's text exposition, from per-series caches (see the module docstring).

    Two levels: by credential view (the watcher's views are reused for rows a write did not
    touch, so most credentials cost one look-up and an identity check) and by content (a
    round_robin pool renumbers every row at each request: new views, same lines).
    """

    def __init__(self, collector: MonitorCollector) -> None:
        self.collector = collector
        self._blocks: dict[tuple[Any, ...], Block] = {}
        self._views: dict[int, tuple[CredentialView, Any, str, tuple[Any, ...], Block]] = {}
        self._lines: dict[tuple[int, tuple[str, ...], float], str] = {}
        self._cred_heads = headers(CRED_FAMILIES)
        self._other_heads = headers(OTHER_FAMILIES)

    def render(self) -> bytes:
        """The same bytes as ``generate_latest`` over :attr:`collector`, at a fraction of the cost."""
        sample, now, stats = self.collector.latest()
        inert = self.collector.inert
        old_views, old_blocks = self._views, self._blocks
        views: dict[int, tuple[CredentialView, Any, str, tuple[Any, ...], Block]] = {}
        missing: list[tuple[tuple[Any, ...], tuple[str, ...], CredentialView]] = []
        order: list[tuple[CredentialView, float | None]] = []
        for p in sample.profiles:
            red = p.redactor
            for pv in p.pools:
                for cv in pv.credentials:
                    status, at, left = state_at(cv, now)
                    hit = old_views.get(id(cv))
                    if hit is None or hit[0] is not cv or hit[1] is not red or hit[2] != status:
                        labels = credential_labels(p, cv, inert)
                        key = (labels, status, at, cv.row.get("request_count"), cv.row.get("last_error_code"))
                        block = old_blocks.get(key)
                        if block is None:
                            missing.append((key, labels, cv))
                            hit = (cv, red, status, key, ("", "", "", "", ""))
                        else:
                            hit = (cv, red, status, key, block)
                    views[id(cv)] = hit
                    order.append((cv, left if status == COOLING else None))
        if missing:
            filled = self._fill(missing, now)
            for i, entry in views.items():
                if not entry[4][0]:
                    views[i] = entry[:4] + (filled[entry[3]],)
        self._views = views
        self._blocks = {entry[3]: entry[4] for entry in views.values()}
        per: list[list[str]] = [[] for _ in CRED_FAMILIES]
        state, lefts, ats, reqs, errs = per
        for cv, left in order:
            block = views[id(cv)][4]
            state.append(block[0])
            lefts.append(block[1] if left is None else f"{block[1]}{floatToGoString(left)}\n")
            if block[2]:
                ats.append(block[2])
            reqs.append(block[3])
            errs.append(block[4])
        out = []
        for head, lines in zip(self._cred_heads, per, strict=True):
            out.append(head)
            out.extend(lines)
        out.extend(self._others(other_samples(sample, now, stats, self.collector.counters, inert)))
        return "".join(out).encode("utf-8")

    def _fill(self, missing: list[tuple[tuple[Any, ...], tuple[str, ...], CredentialView]],
              now: float) -> dict[tuple[Any, ...], Block]:
        blocks: dict[tuple[Any, ...], Block] = {}
        samples: Samples = []
        spans = []
        for _key, labels, cv in missing:
            got = credential_samples(labels, cv, now)
            status = state_at(cv, now)[0]
            if status == COOLING:
                got = [(fi, lb, 0.0 if fi == 1 else v) for fi, lb, v in got]   # rendered for its prefix
            spans.append((len(samples), len(got), status))
            samples.extend(got)
        lines = render_lines(CRED_FAMILIES, samples)
        for (key, _labels, _cv), (start, n, status) in zip(missing, spans, strict=True):
            mine = lines[start:start + n]
            state, left, rest = "".join(mine[:4]), mine[4], mine[5:]
            if status == COOLING:
                left = left[:left.rindex(" ") + 1]
            at = rest[0] if len(rest) == 3 else ""
            blocks[key] = (state, left, at, rest[-2], rest[-1])
        return blocks

    def _others(self, samples: Samples) -> list[str]:
        old = self._lines
        lines: dict[tuple[int, tuple[str, ...], float], str] = {}
        miss = [s for s in samples if s not in old]
        if miss:
            for s, line in zip(miss, render_lines(OTHER_FAMILIES, miss), strict=True):
                lines[s] = line
        per: list[list[str]] = [[] for _ in OTHER_FAMILIES]
        for s in samples:
            line = lines.get(s) or old[s]
            lines[s] = line
            per[s[0]].append(line)
        self._lines = lines
        out = []
        for head, got in zip(self._other_heads, per, strict=True):
            out.append(head)
            out.extend(got)
        return out
