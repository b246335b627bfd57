"""The corpus's building blocks: an :class:`Entry` (one workload written once against an array
namespace ``xp``: :func:`body`, :func:`along`), its arguments (:class:`Arg`: a shape per size
class, a dtype, a generator), and
:class:`CorpusCase`, one entry at one size class, shaped like ``workloads.Case`` so the suite's
ceilings, timing and peers take it as they take P1..P6.

Size classes: ``gpu`` (memory-bound entries move ~64-512 MiB; launch-bound ones are tiny on
purpose), ``cpu`` (~4-32 MiB, milliseconds on two cores) and ``tiny`` (a few hundred elements: the
CPU correctness sweep of ``tests/bench/test_corpus.py``).

Bodies use only what NumPy, CuPy, ``jax.numpy`` and :class:`workloads.TorchNamespace` all have,
called as ``xp.f(...)`` (never tensor methods other than ``.reshape``, ``.T``, slicing and
operators), Python-float constants, and :func:`cast` for dtype changes (tensors have no ``astype``).
bfloat16 arguments live on the host as float32 values already rounded to bfloat16; a peer that can
hold bfloat16 (torch, kfuse on torch tensors, JAX) converts them exactly on ``put``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import inspect
import math
from typing import Any, Callable

import numpy as np

SIZES = ("gpu", "cpu", "tiny")
CATEGORIES = ("transformer", "vision", "optim", "losses", "quant", "preprocess", "science", "layouts")

# Tolerance classes: the relative Frobenius error (vs the float64 reference) a row may have to be
# counted correct, and whether the CPU test compares with ``assert_matches_numpy(reductions=True)``.
TOLERANCE_CLASSES: dict[str, tuple[float, bool]] = {
    "f32": (1e-4, False),           # elementwise / short reductions in float32
    "f32-long": (1e-3, True),       # long sums, scans, statistics over many rows (order differs)
    "f16": (1e-2, True),            # float16 storage (NumPy rounds every op; kfuse too)
    "bf16": (3e-2, True),           # bfloat16 storage (torch tensors only)
    "int8": (1e-2, False),          # quantised outputs: a rounding tie may land one step apart
}

_REFERENCE = [False]


@contextlib.contextmanager
def reference_mode():
    """While active, :func:`cast` to a float dtype gives float64: the float64 reference computes
    every step in float64, the casts of the body included."""
    _REFERENCE[0] = True
    try:
        yield
    finally:
        _REFERENCE[0] = False


def cast(xp, x, name: str):
    """``x.astype(xp.<name>)`` for NumPy/CuPy/JAX arrays and kfuse tracers, ``x.to(...)`` for torch."""
    if _REFERENCE[0] and name.startswith(("float", "bfloat")):
        name = "float64"
    dt = getattr(xp, name, None)
    if dt is None and name == "bfloat16":        # NumPy (kfuse traces with it): ml_dtypes' bfloat16
        from ...ir.dtypes import BF16
        dt = BF16
    if hasattr(x, "astype"):
        return x.astype(dt)
    return x.to(dt)


# ---- arguments ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Arg:
    """One argument: ``shape`` is a comma list of dimension names or expressions over a size
    class's dims (``"R,2*C"``); ``gen`` names the generator (see :func:`generate`)."""
    shape: str
    dtype: str = "float32"
    gen: str = "normal"
    scale: float = 1.0
    shift: float = 0.0
    high: str = ""              # labels: exclusive upper bound (an expression over the dims)

    def dims(self, d: dict) -> tuple[int, ...]:
        if not self.shape:
            return ()
        return tuple(int(eval(s, {}, dict(d))) for s in self.shape.split(","))


def body(fn: Callable) -> Callable[[Any], Callable]:
    """An entry's ``make``: ``fn`` is the workload written once as ``fn(xp, *arrays)``; ``make(xp)``
    is the function of the arrays alone that each peer compiles or calls, with ``fn``'s name and
    its signature less ``xp`` (kfuse and JAX read the parameter names from it)."""
    sig = inspect.signature(fn)
    arrays = sig.replace(parameters=list(sig.parameters.values())[1:])

    def make(xp):
        def bound(*args):
            return fn(xp, *args)
        bound.__signature__ = arrays
        bound.__name__, bound.__qualname__, bound.__module__ = fn.__name__, fn.__qualname__, fn.__module__
        return bound
    make.__name__ = make.__qualname__ = fn.__name__
    return make


def along(name: str, func: str, axis) -> Callable[[Any], Callable]:
    """The :func:`body` ``name(x) = xp.<func>(x, axis=axis)``: one reduction, scan or difference
    along an axis."""
    def fn(xp, x):
        return getattr(xp, func)(x, axis=axis)
    fn.__name__ = fn.__qualname__ = name
    return body(fn)


def bf16_round(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def host_dtype(dtype: str) -> np.dtype:
    return np.dtype(np.float32 if dtype == "bfloat16" else dtype)


def generate(arg: Arg, shape: tuple, d: dict, rng: np.random.Generator) -> np.ndarray:
    """Deterministic host values for ``arg`` at ``shape``."""
    g = arg.gen
    if g == "labels":
        return rng.integers(0, int(eval(arg.high, {}, dict(d))), size=shape, dtype=np.int64)
    if g == "mask":                          # a causal (lower-triangular) boolean mask
        r, c = shape[-2], shape[-1]
        return np.broadcast_to(np.arange(c)[None, :] <= np.arange(r)[:, None], shape).copy()
    if g == "bool":
        return rng.random(shape, dtype=np.float32) < 0.9
    if g == "uint8":
        return rng.integers(0, 256, size=shape, dtype=np.uint8)
    if g == "int8":
        return rng.integers(-127, 128, size=shape, dtype=np.int8)
    a = rng.standard_normal(shape, dtype=np.float32)
    if g == "positive":
        np.square(a, out=a)
        a += np.float32(1e-3)
    elif g == "uniform":
        a = rng.random(shape, dtype=np.float32)
    elif g == "binary":
        a = (rng.random(shape, dtype=np.float32) < 0.5).astype(np.float32)
    elif g == "probs":                       # rows summing to one (softmax of normals)
        a = np.exp(a - a.max(axis=-1, keepdims=True))
        a /= a.sum(axis=-1, keepdims=True)
    elif g == "nan":                         # about 5% NaN
        a[rng.random(shape, dtype=np.float32) < 0.05] = np.nan
    elif g != "normal":
        raise ValueError(f"unknown generator {g!r}")
    if arg.scale != 1.0:
        a *= np.float32(arg.scale)
    if arg.shift:
        a += np.float32(arg.shift)
    if arg.dtype == "bfloat16":
        return bf16_round(a)
    return a.astype(arg.dtype, copy=False)


# ---- entries -----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Entry:
    """One corpus workload. ``make(xp)`` returns the function; ``sizes`` maps each size class to
    its dims; ``flops`` is nominal FLOPs per element of the first argument."""
    name: str
    category: str
    title: str
    make: Callable[[Any], Callable]
    args: tuple[Arg, ...]
    sizes: dict
    tags: tuple[str, ...] = ()
    flops: float = 1.0
    tol: str = "f32"
    bound: str = "memory"           # "memory" or "launch" (tiny on purpose: dispatch and launch cost)
    only: str | None = None         # "gpu-torch": bfloat16, torch tensors on the GPU only

    @property
    def dtypes(self) -> tuple[str, ...]:
        return tuple(a.dtype for a in self.args)

    def case(self, size: str) -> "CorpusCase":
        return CorpusCase(self, size, dict(self.sizes[size]))

    def body(self, xp) -> Callable:
        return self.make(xp)


class _WorkloadView:
    """What the suite reads off ``case.workload`` (its name and title)."""

    def __init__(self, entry: Entry):
        self.name = entry.name
        self.title = entry.title
        self.make = entry.make


class CorpusCase:
    """One entry at one size class; duck-types ``workloads.Case`` for the suite's machinery."""

    def __init__(self, entry: Entry, size: str, dims: dict):
        self.entry, self.size, self.dims = entry, size, dims
        self.workload = _WorkloadView(entry)
        self.label = entry.name
        self.shapes = tuple(a.dims(dims) for a in entry.args)
        self.dtypes = entry.dtypes
        floats = [t for t in self.dtypes if t.startswith(("float", "bfloat"))]
        self.dtype = floats[0] if floats else self.dtypes[0]
        self.bound = "memory"               # the ceiling: copy bandwidth (launch-bound rows too)
        self._out = None

    # -- sizes, bytes, FLOPs --
    @property
    def in_bytes(self) -> int:
        return sum(math.prod(s) * _itemsize(t) for s, t in zip(self.shapes, self.dtypes))

    def outputs(self) -> list[tuple[tuple, str]]:
        """(shape, dtype) of each output, from kfuse's trace (nothing allocated), else NumPy run on
        zero-stride inputs."""
        if self._out is None:
            self._out = output_specs(self)
        return self._out

    @property
    def out_shapes(self):
        return tuple(s for s, _ in self.outputs())

    @property
    def nbytes(self) -> float:
        """Minimal traffic: every input read once, every output written once."""
        return float(self.in_bytes + sum(math.prod(s) * _itemsize(t) for s, t in self.outputs()))

    @property
    def flops(self) -> float:
        return float(self.entry.flops * math.prod(self.shapes[0]))

    @property
    def intensity(self) -> float:
        return self.flops / max(self.nbytes, 1.0)

    @property
    def specs(self) -> list[str]:
        from ...ir.dtypes import format_spec
        return [format_spec(np.dtype(t) if t != "bfloat16" else _bf16(), s)
                for s, t in zip(self.shapes, self.dtypes)]

    def body(self, xp) -> Callable:
        return self.entry.make(xp)

    def make_inputs(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [generate(a, s, self.dims, rng) for a, s in zip(self.entry.args, self.shapes)]

    def __str__(self) -> str:
        return f"{self.label} " + " ".join(f"{t}[{'x'.join(map(str, s))}]" for s, t in zip(self.shapes, self.dtypes))


def _bf16():
    from ...ir.dtypes import BF16
    return BF16


def _itemsize(t: str) -> int:
    return 2 if t == "bfloat16" else np.dtype(t).itemsize


def output_specs(case: CorpusCase) -> list[tuple[tuple, str]]:
    try:
        from ...api import JitFunction
        g = JitFunction(case.body(np)).trace(*case.specs)
        return [(tuple(n.shape), "bfloat16" if "bfloat16" in str(n.dtype) else np.dtype(n.dtype).name)
                for n in g.outputs]
    except Exception:
        pass
    zeros = [np.broadcast_to(np.zeros((), host_dtype(t)), s) for s, t in zip(case.shapes, case.dtypes)]
    with np.errstate(all="ignore"):
        out = case.body(np)(*zeros)
    out = list(out) if isinstance(out, (tuple, list)) else [out]
    return [(tuple(np.shape(o)), np.asarray(o).dtype.name) for o in out]
