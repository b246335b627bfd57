"""Frozen records: frozen dataclasses that cost less to define.

``@record`` is ``@dataclasses.dataclass(frozen=True)`` with the same behaviour (``==`` and
``hash`` over the fields, class included in ``==``; the dataclass's printed form; assignment and
deletion refused with ``FrozenInstanceError``; ``dataclasses.fields``, ``replace`` and
``is_dataclass`` work as on any dataclass), made cheaper to create: ``dataclasses`` writes every
method of every class as source text and compiles it when the module is imported (~70 us a
method here, six a frozen class, ~0.4 ms a class; the kernel IR's 17 node classes alone took
~8 ms of a warm GPU first call). Here only ``__init__`` and the frozen ``__setattr__`` and
``__delattr__`` are generated; ``__eq__``, ``__hash__`` and ``__repr__`` are shared functions
reading the fields through one ``operator.attrgetter``, compiled once with this module.

Use it on classes defined on a hot import path whose instances compare, hash and print as
dataclasses do; it takes no options (a record with ``eq=False``, ``order=True`` or
``unsafe_hash`` stays a plain dataclass).
"""
from __future__ import annotations

import dataclasses
import operator
import reprlib

__all__ = ["record"]


def record(cls: type) -> type:
    """``cls`` as a frozen dataclass (see the module docstring); a class that defines its own
    ``__eq__``, ``__hash__`` or ``__repr__`` keeps it, as with ``dataclasses.dataclass``."""
    own = set(cls.__dict__)
    if "__hash__" in own and cls.__dict__["__hash__"] is None and "__eq__" in own:
        own.discard("__hash__")     # (Python's None for a class defining __eq__: not explicit)
    cls = dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
    fields = dataclasses.fields(cls)
    compared = tuple(f.name for f in fields if f.compare)
    hashed = tuple(f.name for f in fields if (f.hash is None and f.compare) or f.hash)
    values = _values(compared)
    made = {}
    if "__eq__" not in own:
        made["__eq__"] = _eq(values)
    if "__hash__" not in own:       # (eq=True, frozen=True: the hash of the hashed fields' tuple)
        made["__hash__"] = _hash(values if hashed == compared else _values(hashed))
    if "__repr__" not in own:
        made["__repr__"] = _repr(tuple(f.name for f in fields if f.repr))
    for name, fn in made.items():
        fn.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, fn)
    return cls


def _values(names: tuple):
    """A function giving an instance's field values as a tuple (``()`` without fields)."""
    if not names:
        return lambda self: ()
    if len(names) == 1:
        get = operator.attrgetter(names[0])
        return lambda self: (get(self),)
    return operator.attrgetter(*names)


def _eq(values):
    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented
    return __eq__


def _hash(values):
    def __hash__(self):
        return hash(values(self))
    return __hash__


def _repr(names: tuple):
    @reprlib.recursive_repr()
    def __repr__(self):
        return f"{self.__class__.__qualname__}(" + ", ".join(
            f"{n}={getattr(self, n)!r}" for n in names) + ")"
    return __repr__
