"""Bounds on a YAML document's aliases and nesting, checked before it is built.

A "billion laughs" config.yaml is a few hundred bytes whose aliases expand to billions
of nodes; every walk over the parsed data (our checks, ruamel's round-trip dump) then
takes minutes. So before either parser builds anything, the event stream (libyaml's C
parser when present: fast and flat, no recursion) is scanned once and the document is
refused when its *expanded* size or its depth passes a bound. Ordinary anchors and
aliases (a shared fallback entry) stay well inside the bounds.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from store.errors import ConfigUnreadable

MAX_DEPTH = 100
# Nodes after expanding every alias; a large hand-written config has a few thousand.
MAX_EXPANDED_NODES = 200_000

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_START = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_END = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def check(raw: bytes | str, path: Path) -> None:
    """Raise ConfigUnreadable when *raw* nests deeper than MAX_DEPTH or expands (through
    aliases) past MAX_EXPANDED_NODES. Syntax errors are left for the real parser to name."""
    # Stack of [expanded node count, anchor] for each open collection.
    stack: list[list] = [[0, None]]
    anchors: dict[str, int] = {}
    total = 0
    try:
        for event in yaml.parse(raw, Loader=_Loader):
            if isinstance(event, _START):
                stack.append([1, event.anchor])
                total += 1
                if len(stack) - 1 > MAX_DEPTH:
                    raise ConfigUnreadable(path, f"YAML nested deeper than {MAX_DEPTH} levels")
            elif isinstance(event, _END):
                size, anchor = stack.pop()
                if anchor:
                    anchors[anchor] = size
                stack[-1][0] += size
            elif isinstance(event, yaml.ScalarEvent):
                if event.anchor:
                    anchors[event.anchor] = 1
                stack[-1][0] += 1
                total += 1
            elif isinstance(event, yaml.AliasEvent):
                size = anchors.get(event.anchor, 1)
                stack[-1][0] += size
                total += size
            else:
                continue
            if total > MAX_EXPANDED_NODES:
                raise ConfigUnreadable(
                    path, f"YAML aliases expand past {MAX_EXPANDED_NODES} nodes (an alias bomb?)")
    except yaml.YAMLError:
        return
