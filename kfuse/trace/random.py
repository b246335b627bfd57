"""Random numbers in a traced function: ``np.random.*`` calls and the methods of a
``np.random.Generator`` argument become ``Op.RANDOM`` bits (Philox4x32-10, ``ir/philox.py``)
drawn inside the fused kernels, turned into NumPy's distributions by ordinary traced ops; fresh
values every call.

While a trace runs (:func:`intercepting`, entered by ``trace_function`` and restored on exit,
errors included), the public functions of ``numpy.random`` are replaced by wrappers that build
IR when called from the tracing context and call NumPy's own otherwise (another thread, no
trace). Functions with no rule here (``np.random.seed``, ``choice``, ``default_rng``...) raise
``UnsupportedError`` while tracing rather than run once and be baked in as constants. A function
imported by name before the trace (``from numpy.random import rand``) is not seen.

Each call is its own stream (``attrs["stream"]``): two ``np.random.rand(n)`` calls differ. The
bits of every call drawing from one source read one seed input (``ConstantInputs.per_call_input``,
``attrs["seed"]``: ``""`` for NumPy's global state, else the Generator parameter's name), whose
value the runtime draws per call (``runtime/seeds.py``), so ``np.random.seed(0)`` before a call
makes it reproducible. Distributions: uniform floats are the top 53 (float64) or 24 (float32)
bits times 2**-53 / 2**-24, in [0, 1); normals are Box-Muller of the two words of one Philox
block (``1 - u1`` in (0, 1] under the log), computed in float64; integers in [low, high) are
``low + bits % (high - low)`` on 64 bits (bias below (high - low) / 2**64).
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import operator
import threading

import numpy as np

from ..ir.ops import Op
from . import elementwise as ew
from .core import Tracer, broadcast, broadcast_shapes, constant_inputs, mk, unsupported

GLOBAL = ""     # the seed source of np.random.* calls: NumPy's global RandomState


class _Trace:
    """The random calls of one trace: the next stream number."""

    def __init__(self):
        self.streams = 0

    def bits(self, source: str, shape: tuple, words: int = 1) -> list[Tracer]:
        """``words`` uint64 words (of one Philox block) per element of a new stream."""
        name = f"seed({source or 'np.random'})"
        seed = constant_inputs().per_call_input(("seed", source), np.uint64, name, {"seed": source})
        stream, self.streams = self.streams, self.streams + 1
        b = broadcast(seed, shape)
        return [Tracer(mk(Op.RANDOM, np.uint64, shape, [b], {"stream": stream, "word": w}))
                for w in range(words)]


_STATE: contextvars.ContextVar[_Trace | None] = contextvars.ContextVar("kfuse_random", default=None)


# --- distributions ------------------------------------------------------------------------------
def _shape(size) -> tuple:
    if size is None:
        return ()
    if isinstance(size, (tuple, list)):
        return tuple(operator.index(s) for s in size)
    return (operator.index(size),)


def _float_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise TypeError(f"Unsupported dtype {dt!r} for random")       # NumPy's own message
    return dt


def _unit(bits: Tracer, dtype: np.dtype) -> Tracer:
    """Uniform in [0, 1) of ``dtype`` from uint64 bits: the top 24/53 bits, scaled exactly."""
    k = 40 if dtype == np.float32 else 11
    top = ew.apply_ufunc("right_shift", bits, np.uint64(k))
    return ew.apply_ufunc("multiply", ew.astype(top, dtype), dtype.type(2.0 ** -(64 - k)))


def uniform01(source: str, shape: tuple, dtype=np.float64) -> Tracer:
    (b,) = _state().bits(source, shape)
    return _unit(b, _float_dtype(dtype))


def standard_normal(source: str, shape: tuple, dtype=np.float64) -> Tracer:
    """Box-Muller in float64 of the two words of one block (cast to float32 when asked)."""
    dtype = _float_dtype(dtype)
    b1, b2 = _state().bits(source, shape, 2)
    f64 = np.dtype(np.float64)
    u1 = ew.apply_ufunc("subtract", 1.0, _unit(b1, f64))            # (0, 1]: log(u1) is finite
    r = ew.apply_ufunc("sqrt", ew.apply_ufunc("multiply", -2.0, ew.apply_ufunc("log", u1)))
    z = ew.apply_ufunc("multiply", r, ew.apply_ufunc("cos", ew.apply_ufunc("multiply", 2.0 * math.pi,
                                                                          _unit(b2, f64))))
    return z if dtype == f64 else ew.astype(z, dtype)


def _params_shape(size, *params) -> tuple:
    if size is not None:
        return _shape(size)
    return broadcast_shapes(*(np.shape(p) if not isinstance(p, Tracer) else p.shape for p in params))


def uniform(source: str, low, high, size) -> Tracer:
    """``low + (high - low) * u`` (NumPy's formula), float64."""
    u = uniform01(source, _params_shape(size, low, high))
    return ew.apply_ufunc("add", low, ew.apply_ufunc("multiply", ew.apply_ufunc("subtract", high, low), u))


def normal(source: str, loc, scale, size) -> Tracer:
    """``loc + scale * z`` (the defaults' identity ops left out: the same distribution)."""
    z = standard_normal(source, _params_shape(size, loc, scale))
    if not _python_number(scale, 1):
        z = ew.apply_ufunc("multiply", scale, z)
    return z if _python_number(loc, 0) else ew.apply_ufunc("add", loc, z)


def _python_number(v, value) -> bool:
    return type(v) in (int, float) and v == value


def integers(source: str, low, high, size, dtype, endpoint: bool, legacy: bool) -> Tracer:
    """Integers in [low, high) (``endpoint``: [low, high]) of ``dtype``; bounds are Python ints."""
    if high is None:
        low, high = 0, low
    try:
        low, high = operator.index(low), operator.index(high)
    except TypeError:
        raise unsupported("random integers with array or float bounds",
                          "pass Python ints (a traced bound: list it in static_argnames)") from None
    high += bool(endpoint)
    if high <= low:
        raise ValueError("high <= 0" if legacy and low == 0 else "low >= high")
    dtype = np.dtype(dtype)
    if dtype.kind not in "biu":
        raise TypeError(f"Unsupported dtype {dtype!r} for integers")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if low < info.min or high - 1 > info.max:
            raise ValueError(f"low is out of bounds for {dtype.name}" if low < info.min
                             else f"high is out of bounds for {dtype.name}")
    (b,) = _state().bits(source, _shape(size))
    span = high - low
    r = b if span == 2 ** 64 else ew.apply_ufunc("remainder", b, np.uint64(span))
    if low:     # in uint64, wrapping: the cast to dtype gives low + r
        r = ew.apply_ufunc("add", r, np.uint64(low % 2 ** 64))
    return ew.astype(r, dtype)


def _weak(t: Tracer, pytype: type) -> Tracer:
    """A 0-d result NumPy returns as a Python scalar (``np.random.rand()``, ``rng.random()``)."""
    return Tracer(t.node, weak=pytype) if not t.shape else t


def _state() -> _Trace:
    st = _STATE.get()
    if st is None:
        raise unsupported("a random op built outside a trace")
    return st


# --- np.random.* (NumPy's global state) -----------------------------------------------------------
def _rand(*dims):
    return _weak(uniform01(GLOBAL, _shape(dims)), float)


def _randn(*dims):
    return _weak(standard_normal(GLOBAL, _shape(dims)), float)


def _random_sample(size=None):
    return _weak(uniform01(GLOBAL, _shape(size)), float)


def _uniform(low=0.0, high=1.0, size=None):
    return _weak(uniform(GLOBAL, low, high, size), float)


def _normal(loc=0.0, scale=1.0, size=None):
    return _weak(normal(GLOBAL, loc, scale, size), float)


def _standard_normal(size=None):
    return _weak(standard_normal(GLOBAL, _shape(size)), float)


def _randint(low, high=None, size=None, dtype=int):
    return _weak(integers(GLOBAL, low, high, size, dtype, False, True), int)


LEGACY = {"rand": _rand, "randn": _randn, "random": _random_sample, "random_sample": _random_sample,
          "ranf": _random_sample, "sample": _random_sample, "uniform": _uniform, "normal": _normal,
          "standard_normal": _standard_normal, "randint": _randint}


# --- a np.random.Generator argument ------------------------------------------------------------
class TracedGenerator:
    """Stands for a ``np.random.Generator`` argument while tracing: its methods draw from the
    seed the call takes from the caller's Generator (advancing it), one per call."""

    __slots__ = ("source",)

    def __init__(self, source: str):
        self.source = source

    def random(self, size=None, dtype=np.float64, out=None):
        _no_out(out, "random")
        return _weak(uniform01(self.source, _shape(size), dtype), float)

    def uniform(self, low=0.0, high=1.0, size=None):
        return _weak(uniform(self.source, low, high, size), float)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return _weak(normal(self.source, loc, scale, size), float)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        _no_out(out, "standard_normal")
        return _weak(standard_normal(self.source, _shape(size), dtype), float)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        return integers(self.source, low, high, size, dtype, endpoint, False)

    def __getattr__(self, name):
        raise unsupported(f"np.random.Generator.{name} (argument {self.source!r})",
                          "kfuse traces random, uniform, normal, standard_normal and integers")

    def __repr__(self) -> str:
        return f"TracedGenerator({self.source!r})"


def _no_out(out, method: str) -> None:
    if out is not None:
        raise unsupported(f"Generator.{method}(out=...)", "use the returned array")


# --- the patch while tracing ----------------------------------------------------------------------
def _refused(name: str):
    def fn(*args, **kwargs):
        raise unsupported(f"np.random.{name} inside a traced function", (
            "it would run once at trace time and its result be frozen into the compiled function; "
            "pass a np.random.Generator argument, or call it outside and pass the result. Traced: "
            + ", ".join(f"np.random.{n}" for n in LEGACY)))
    return fn


def _wrapper(original, traced):
    @functools.wraps(original)
    def call(*args, **kwargs):
        if _STATE.get() is None:        # not tracing in this context: NumPy's own
            return original(*args, **kwargs)
        return traced(*args, **kwargs)
    return call


_LOCK = threading.Lock()
_ACTIVE = [0]                   # traces under way (in any thread) while the wrappers are installed
_SAVED: dict[str, object] = {}
# name -> (NumPy's function, its wrapper): made once, not per trace (a trace is on the path of
# every new size); made again if the attribute was replaced by another function since
_WRAPPERS: dict[str, tuple] = {}


@functools.lru_cache(maxsize=None)
def _patchable() -> tuple[str, ...]:
    return tuple(n for n in np.random.__all__
                 if callable(getattr(np.random, n, None)) and not isinstance(getattr(np.random, n), type))


def _wrapper_of(name: str, original):
    hit = _WRAPPERS.get(name)
    if hit is None or hit[0] is not original:
        hit = _WRAPPERS[name] = (original, _wrapper(original, LEGACY.get(name) or _refused(name)))
    return hit[1]


def _install() -> None:
    with _LOCK:
        _ACTIVE[0] += 1
        if _ACTIVE[0] > 1:
            return
        for name in _patchable():
            original = getattr(np.random, name)
            _SAVED[name] = original
            setattr(np.random, name, _wrapper_of(name, original))


def _uninstall() -> None:
    with _LOCK:
        _ACTIVE[0] -= 1
        if _ACTIVE[0]:
            return
        for name, original in _SAVED.items():
            setattr(np.random, name, original)
        _SAVED.clear()


@contextlib.contextmanager
def intercepting():
    """Inside the block (one trace), ``np.random.*`` calls from this context build random ops."""
    token = _STATE.set(_Trace())
    _install()
    try:
        yield
    finally:
        _uninstall()
        _STATE.reset(token)
