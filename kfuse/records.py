"""Frozen records: frozen dataclasses that cost less to define.

``@record`` is ``@dataclasses.dataclass(frozen=True)`` with the same behaviour (``==`` and
``hash`` over the fields, class included in ``==``; the dataclass's printed form; assignment and
deletion refused with ``FrozenInstanceError``; ``dataclasses.fields``, ``replace`` and
``is_dataclass`` work as on any dataclass; the same ``__init__``), made cheaper to create:
``dataclasses`` writes every method of every class as source text and compiles it when the module
is imported (~70 us a method here, six a frozen class, ~0.4 ms a class; the kernel IR's 17 node
classes alone took ~8 ms of a warm GPU first call). Here ``dataclasses`` only collects the fields
(no method generated, nothing compiled); ``__eq__``, ``__hash__`` and ``__repr__`` are shared
functions reading the fields through one ``operator.attrgetter``, ``__setattr__`` and
``__delattr__`` closures of the dataclass's own rule, and ``__init__`` the dataclass's text
compiled at the class's first instantiation (a class never instantiated in a process costs
nothing to compile; one that is, one small function instead of three).

Use it on classes defined on a hot import path whose instances compare, hash and print as
dataclasses do; it takes no options (a record with ``eq=False``, ``order=True`` or
``unsafe_hash`` stays a plain dataclass). A class the lazy path does not cover (no docstring, so
``dataclasses`` prints its signature into ``__doc__``; a dataclass base; its own ``__init__``,
``__setattr__`` or ``__delattr__``; ``InitVar``, ``ClassVar``, ``KW_ONLY`` or ``kw_only``
fields) is made by ``dataclasses.dataclass(frozen=True, eq=False, repr=False)`` instead.
"""
from __future__ import annotations

import copy
import dataclasses
import operator
import reprlib

__all__ = ["record"]

_OWN_FORBIDDEN = ("__init__", "__setattr__", "__delattr__")
_SPECIAL = ("InitVar", "ClassVar", "KW_ONLY")
_PARAMS: list = []          # the one __dataclass_params__ of a lazy record (made once)


def record(cls: type) -> type:
    """``cls`` as a frozen dataclass (see the module docstring); a class that defines its own
    ``__eq__``, ``__hash__`` or ``__repr__`` keeps it, as with ``dataclasses.dataclass``."""
    own = set(cls.__dict__)
    if "__hash__" in own and cls.__dict__["__hash__"] is None and "__eq__" in own:
        own.discard("__hash__")     # (Python's None for a class defining __eq__: not explicit)
    if _lazy_ok(cls):
        cls = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)   # (fields only)
        cls.__dataclass_params__ = _frozen_params(cls.__dataclass_params__)
        fields = dataclasses.fields(cls)
        _check_defaults(fields)
        names = tuple(f.name for f in fields)
        cls.__setattr__, cls.__delattr__ = _frozen_set_del(cls, names)
        cls.__init__ = _lazy_init(cls)
    else:
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


def _lazy_ok(cls: type) -> bool:
    """Whether ``cls`` is a record the lazy path makes exactly as ``dataclasses`` would."""
    if not cls.__dict__.get("__doc__") or any(n in cls.__dict__ for n in _OWN_FORBIDDEN):
        return False
    if any(hasattr(b, "__dataclass_fields__") for b in cls.__mro__[1:]):
        return False
    for name, ann in cls.__dict__.get("__annotations__", {}).items():
        if name == "self":              # (the parameter's name: dataclasses renames it)
            return False
        text = ann if isinstance(ann, str) else repr(ann)
        if any(s in text for s in _SPECIAL):
            return False
        value = cls.__dict__.get(name)
        if isinstance(value, dataclasses.Field) and value.kw_only is True:
            return False
    return True


def _frozen_params(params):
    """The ``__dataclass_params__`` of a ``dataclass(frozen=True)``: what ``dataclasses`` reads of
    a base (a frozen class's subclass must be frozen) and what a record is."""
    if not _PARAMS:
        p = copy.copy(params)
        p.init = p.repr = p.eq = p.frozen = True
        _PARAMS.append(p)
    return _PARAMS[0]


def _check_defaults(fields) -> None:
    """The check ``dataclasses`` makes when it writes ``__init__``, made when the class is."""
    seen = False
    for f in fields:
        if f.init:
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                seen = True
            elif seen:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")


def _frozen_set_del(cls: type, names: tuple):
    """A frozen dataclass's ``__setattr__`` and ``__delattr__`` (``dataclasses``' rule: a field,
    or any attribute of an instance of ``cls`` itself, is refused)."""
    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    __setattr__.__qualname__ = f"{cls.__qualname__}.__setattr__"
    __delattr__.__qualname__ = f"{cls.__qualname__}.__delattr__"
    return __setattr__, __delattr__


def _lazy_init(cls: type):
    """A stand-in ``__init__`` that compiles the real one (:func:`_init_source`) on first use and
    puts it in its place."""
    def __init__(self, *args, **kwargs):
        real = _make_init(cls)
        if cls.__dict__.get("__init__") is __init__:
            type.__setattr__(cls, "__init__", real)
        real(self, *args, **kwargs)
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


class _Factory:
    """The default of a parameter whose field has a ``default_factory``."""
    __slots__ = ()

    def __repr__(self):
        return "<factory>"


_FACTORY = _Factory()


def _make_init(cls: type):
    """The ``__init__`` ``dataclasses`` writes for a frozen class without InitVar or kw-only
    fields: each init field from its parameter (a default factory's value where none was given),
    each other field with a factory from it, then ``__post_init__()`` where the class has one."""
    env = {"__kf_set__": object.__setattr__, "__kf_factory__": _FACTORY}
    params, body = ["self"], []
    for f in dataclasses.fields(cls):
        dflt = f"__kf_dflt_{f.name}__"
        if f.default_factory is not dataclasses.MISSING:
            env[dflt] = f.default_factory
            if f.init:
                params.append(f"{f.name}=__kf_factory__")
                value = f"{dflt}() if {f.name} is __kf_factory__ else {f.name}"
            else:
                value = f"{dflt}()"
        elif f.init:
            if f.default is not dataclasses.MISSING:
                env[dflt] = f.default
                params.append(f"{f.name}={dflt}")
            else:
                params.append(f.name)
            value = f.name
        else:
            continue                    # (its class attribute is its default, as dataclasses)
        body.append(f"  __kf_set__(self, {f.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("  self.__post_init__()")
    src = f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "  pass") + "\n"
    exec(src, env)                      # noqa: S102 - the text dataclasses would exec
    fn = env["__init__"]
    fn.__qualname__ = f"{cls.__qualname__}.__init__"
    return fn


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
