"""store.frozen.quick_init: the request path's frozen dataclasses (Verdict, Usage, Selection,
Credential) built by filling ``__dict__`` at once are the objects the dataclass's own
``__init__`` builds, for any arguments, and stay frozen; what it cannot build the same way
is refused when the class is defined. Negative control: an init that loses a default is
caught by the comparison."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.agent.outcomes import Selection, Verdict
from store.dialects.dialect import Credential
from store.dialects.readings import Usage
from store.frozen import quick_init
from store.usage.record import Spent

CLASSES = [Verdict, Usage, Selection, Credential, Spent]
VALUE = st.none() | st.booleans() | st.integers(-5, 10**9) | st.floats(allow_nan=False) | st.text(max_size=8) \
    | st.tuples()


def plain_twin(cls: type) -> type:
    """The same fields, made a frozen dataclass the ordinary way (its own __init__)."""
    spec = [(f.name, f.type, dataclasses.field(default=f.default, repr=f.repr)
             if f.default is not dataclasses.MISSING else dataclasses.field(repr=f.repr))
            for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass("Plain" + cls.__name__, spec, frozen=True)


def _same(cls: type, twin: type, args: tuple, kwargs: dict) -> None:
    ours, plain = cls(*args, **kwargs), twin(*args, **kwargs)
    assert dataclasses.astuple(ours) == dataclasses.astuple(plain)
    assert ours.__dict__ == plain.__dict__


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@given(data=st.data())
@settings(max_examples=150, deadline=None)
def test_quick_init_builds_what_the_dataclass_init_builds(cls: type, data: st.DataObject) -> None:
    fields = dataclasses.fields(cls)
    required = [f for f in fields if f.default is dataclasses.MISSING]   # first, as dataclasses orders them
    npos = data.draw(st.integers(len(required), len(fields)))
    args = tuple(data.draw(VALUE) for _ in range(npos))
    rest = [f.name for f in fields[npos:]]
    kwargs = {name: data.draw(VALUE) for name in data.draw(st.lists(st.sampled_from(rest), unique=True))} \
        if rest else {}
    _same(cls, plain_twin(cls), args, kwargs)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_quick_built_objects_stay_frozen_equal_hashable_and_picklable(cls: type) -> None:
    required = [f for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
    obj = cls(*["x"] * len(required))
    first = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, first, "y")
    assert obj == cls(*["x"] * len(required)) and hash(obj) == hash(cls(*["x"] * len(required)))
    assert pickle.loads(pickle.dumps(obj)) == obj
    assert dataclasses.replace(obj, **{first: "z"}).__dict__[first] == "z"
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"


def test_what_quick_init_cannot_build_the_same_way_is_refused() -> None:
    @dataclasses.dataclass
    class Mutable:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Factory:
        a: list = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True)
    class Post:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True)
    class KwOnly:
        a: int = dataclasses.field(kw_only=True)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    for cls in (Mutable, Factory, Post, KwOnly, Slotted, int):
        with pytest.raises(TypeError, match="quick_init"):
            quick_init(cls)


def test_control_an_init_that_loses_a_default_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    twin = plain_twin(Verdict)
    _same(Verdict, twin, (None, "ok"), {})

    def lossy(self, fault, kind, **kw):
        self.__dict__.update({f.name: None for f in dataclasses.fields(Verdict)}, fault=fault, kind=kind, **kw)

    monkeypatch.setattr(Verdict, "__init__", lossy)
    with pytest.raises(AssertionError):
        _same(Verdict, twin, (None, "ok"), {})
