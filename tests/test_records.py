"""kfuse.records.record behaves as ``dataclasses.dataclass(frozen=True)``: equality, hashing,
printing, immutability, the dataclasses functions, and ``__init__`` (compiled at the first
instantiation on the lazy path: defaults, factories, ``__post_init__``, fields outside it)."""
import dataclasses
import pickle

import pytest

from kfuse.codegen import kernel_ir as K
from kfuse.records import record


def _pair(annotations: dict, doc=None, **body):
    ns = dict(body, __annotations__=annotations, __module__=__name__, __doc__=doc)
    return dataclasses.dataclass(frozen=True)(type("R", (), dict(ns))), record(type("R", (), dict(ns)))


BODIES = [
    ({"x": "int", "y": "object"}, {"y": 3}),
    ({"x": "int"}, {}),
    ({}, {}),
    ({"x": "int", "y": "object"}, {"y": dataclasses.field(default=1, compare=False)}),
    ({"x": "int", "y": "object"}, {"y": dataclasses.field(default=1, repr=False, hash=False)}),
]


@pytest.mark.parametrize("doc", [None, "A record (the lazy path)."])
@pytest.mark.parametrize("annotations, body", BODIES)
def test_record_is_a_frozen_dataclass(annotations, body, doc):
    D, R = _pair(annotations, doc, **body)
    args = (1, (2, "s"))[:len(annotations)]
    d, r = D(*args), R(*args)
    assert repr(r) == repr(d) and hash(r) == hash(d)
    assert r == R(*args) and not (r == d) and r != d
    assert R.__doc__ == D.__doc__ and R.__match_args__ == D.__match_args__
    assert dataclasses.is_dataclass(r) and dataclasses.replace(r) == r
    assert [f.name for f in dataclasses.fields(R)] == [f.name for f in dataclasses.fields(D)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.x = 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        del r.x
    if len(annotations) == 2:       # a field left out of the comparison (compare=False) stays out
        assert (D(1, 9) == D(1, 2)) == (R(1, 9) == R(1, 2))
        assert (hash(D(1, 9)) == hash(D(1, 2))) == (hash(R(1, 9)) == hash(R(1, 2)))


def test_own_methods_are_kept():
    @record
    class Named:
        name: str

        def __repr__(self):
            return f"<{self.name}>"

        def __eq__(self, other):
            return isinstance(other, Named) and other.name.lower() == self.name.lower()

        def __hash__(self):
            return hash(self.name.lower())

    assert repr(Named("a")) == "<a>" and Named("a") == Named("A") and hash(Named("a")) == hash(Named("A"))


def test_kernel_ir_nodes():
    e = K.IBin("+", K.IVar("i0"), K.ILit(1))
    assert e == K.IBin("+", K.IVar("i0"), K.ILit(1)) and e != K.IBin("+", K.IVar("i0"), K.ILit(2))
    assert hash(e) == hash(("+", K.IVar("i0"), K.ILit(1)))      # the dataclass's hash: its fields' tuple
    assert repr(e) == "IBin(op='+', lhs=IVar(name='i0'), rhs=ILit(value=1))"
    assert K.IVar("a") != K.IVal("a") and {K.IVar("a"): 1}[K.IVar("a")] == 1
    assert pickle.loads(pickle.dumps(e)) == e
    assert dataclasses.replace(e, rhs=K.ILit(2)).rhs == K.ILit(2)


def _both(body: dict, annotations: dict, doc="A record."):
    ns = dict(body, __annotations__=annotations, __module__=__name__, __doc__=doc)
    return dataclasses.dataclass(frozen=True)(type("R", (), dict(ns))), record(type("R", (), dict(ns)))


def test_lazy_init_is_the_dataclass_init():
    made = []
    D, R = _both({"y": 2, "z": dataclasses.field(default_factory=list),
                  "w": dataclasses.field(default_factory=lambda: 7, init=False),
                  "v": dataclasses.field(default=5, init=False),
                  "__post_init__": lambda self: made.append(self.x)},
                 {"x": "int", "y": "int", "z": "list", "w": "int", "v": "int"})
    assert R.__init__ is not D.__init__ and R.__dataclass_params__.frozen
    for args, kw in [((1,), {}), ((1, 3), {}), ((1,), {"z": [4]}), ((), {"x": 1, "y": 0})]:
        d, r = D(*args, **kw), R(*args, **kw)
        assert repr(r) == repr(d) and (r.w, r.v) == (d.w, d.v) == (7, 5)
    assert made == [1, 1] * 4
    assert R(1).z is not R(1).z                                    # a new list each time
    for bad in [((), {}), ((1, 2, [], 4), {}), ((1,), {"w": 1}), ((1,), {"q": 1})]:
        with pytest.raises(TypeError):
            D(*bad[0], **bad[1])
        with pytest.raises(TypeError):
            R(*bad[0], **bad[1])
    assert dataclasses.replace(R(1), y=9) == R(1, 9)
    assert [f.name for f in dataclasses.fields(R)] == ["x", "y", "z", "w", "v"]


def test_lazy_records_refuse_what_dataclasses_refuses():
    with pytest.raises(TypeError, match="non-default argument"):
        record(type("R", (), {"__annotations__": {"x": "int", "y": "int"}, "x": 1, "__doc__": "d"}))
    with pytest.raises(ValueError, match="mutable default"):
        record(type("R", (), {"__annotations__": {"x": "list"}, "x": [], "__doc__": "d"}))


def test_subclasses_of_a_lazy_record():
    @record
    class Base:
        """A record."""
        x: int

    @dataclasses.dataclass(frozen=True)
    class Frozen(Base):
        y: int = 0

    class Plain(Base):
        pass

    with pytest.raises(TypeError):
        @dataclasses.dataclass
        class Thawed(Base):                 # (a frozen dataclass's subclass must be frozen)
            y: int = 0
    assert Frozen(1, 2).y == 2 and Plain(3).x == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        Plain(3).x = 4
    p = Plain(3)
    p.other = 1                               # (a subclass's own attribute, as dataclasses allows)
    assert p.other == 1
