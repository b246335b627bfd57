"""kfuse.records.record behaves as ``dataclasses.dataclass(frozen=True)``: equality, hashing,
printing, immutability, and the dataclasses functions."""
import dataclasses
import pickle

import pytest

from kfuse.codegen import kernel_ir as K
from kfuse.records import record


def _pair(annotations: dict, **body):
    ns = dict(body, __annotations__=annotations, __module__=__name__)
    return dataclasses.dataclass(frozen=True)(type("R", (), dict(ns))), record(type("R", (), dict(ns)))


BODIES = [
    ({"x": "int", "y": "object"}, {"y": 3}),
    ({"x": "int"}, {}),
    ({}, {}),
    ({"x": "int", "y": "object"}, {"y": dataclasses.field(default=1, compare=False)}),
    ({"x": "int", "y": "object"}, {"y": dataclasses.field(default=1, repr=False, hash=False)}),
]


@pytest.mark.parametrize("annotations, body", BODIES)
def test_record_is_a_frozen_dataclass(annotations, body):
    D, R = _pair(annotations, **body)
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
