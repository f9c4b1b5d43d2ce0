"""Negative controls written as the mistake itself: a copy of a guard module with one edit.

A guard test checks a decision through a module object it is handed. It passes on the real
module and must fail on :func:`mutant`, a fresh copy of the same module's source with exactly
one plausible mistake in it (a dropped check, ``or`` made ``and``, an off-by-one). The copy is
built from the installed source at test time, so when the guarded line changes the control
fails loudly ("the mistake is not in the source any more") instead of passing silently.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import types

import pytest


def mutant(module_name: str, old: str, new: str) -> types.ModuleType:
    """*module_name* loaded afresh with its one occurrence of *old* replaced by *new*."""
    if "MUTANT_UNDER_TEST" in os.environ:      # mutmut's copy holds every mutant at once
        pytest.skip("a hand-made mistake is built from the real source, not from mutmut's copy")
    real = importlib.import_module(module_name)
    source = inspect.getsource(real)
    count = source.count(old)
    if count != 1:     # not an AssertionError: a control must never pass because its mistake is gone
        raise LookupError(f"the mistake is not in {module_name} exactly once (found {count}): {old!r}")
    copy = types.ModuleType(f"{module_name}__mutant", real.__doc__)
    copy.__file__ = real.__file__
    copy.__package__ = real.__package__
    sys.modules[copy.__name__] = copy          # dataclasses look their module up by name
    try:
        exec(compile(source.replace(old, new), f"{real.__file__} (mutant)", "exec"), copy.__dict__)
    finally:
        sys.modules.pop(copy.__name__, None)
    return copy
