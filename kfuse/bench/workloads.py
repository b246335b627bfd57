"""The public benchmark workloads P1..P6 (issue 9), written once in NumPy style.

Each workload's body is built by ``workload.body(xp)`` for an array namespace ``xp``: ``numpy``
(NumPy eager, the float64 reference, and the function ``kfuse.jit`` traces), ``cupy``,
``jax.numpy``, or :class:`TorchNamespace` (a thin shim giving PyTorch NumPy-style ``max/sum/mean``).
Only ``xp.tanh/exp/sqrt/max/sum/mean``, arithmetic operators and ``@`` are used, with Python-float
constants (weak scalars), so float32/float16 inputs stay in their dtype under NumPy 2 promotion.

A :class:`Case` is one workload at one size: its input shapes, dtype, nominal FLOPs and minimal
memory traffic (every input read once, every output written once) for the roofline.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import numpy as np

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_FLOPS = 9        # y*y*y (2), *0.044715, +y, *c, tanh, +1, *0.5, *y  (tanh counted as 1)

# Adam hyper-parameters (P6)
ADAM_LR, ADAM_B1, ADAM_B2, ADAM_EPS, ADAM_T = 1e-3, 0.9, 0.999, 1e-8, 10
ADAM_BC1 = 1.0 - ADAM_B1 ** ADAM_T
ADAM_BC2 = 1.0 - ADAM_B2 ** ADAM_T
LAYERNORM_EPS = 1e-5

# A row whose relative Frobenius error against the float64 reference exceeds this is marked wrong
# (its speed does not count). f16: computed in f32 and rounded once vs. NumPy's per-op rounding.
REL_TOL = {"float32": 1e-4, "float16": 1e-2, "float64": 1e-10}


def gelu(xp, y):
    """GELU, tanh form: 0.5*y*(1 + tanh(sqrt(2/pi)*(y + 0.044715*y^3)))."""
    return 0.5 * y * (1.0 + xp.tanh(SQRT_2_OVER_PI * (y + 0.044715 * (y * y * y))))


# ---- bodies (one definition each; ``xp`` is the array namespace) -------------------------------
def make_p1(xp):
    def p1_gelu_bias(x, w, b):
        return gelu(xp, x * w + b)
    return p1_gelu_bias


def make_p2(xp):
    def p2_softmax(x):
        e = xp.exp(x - xp.max(x, axis=1, keepdims=True))
        return e / xp.sum(e, axis=1, keepdims=True)
    return p2_softmax


def make_p3(xp):
    def p3_layernorm(x, gamma, beta):
        mu = xp.mean(x, axis=-1, keepdims=True)
        d = x - mu
        var = xp.mean(d * d, axis=-1, keepdims=True)
        return d / xp.sqrt(var + LAYERNORM_EPS) * gamma + beta
    return p3_layernorm


def make_p4(xp):
    def p4_rownorm(x):
        return xp.sqrt(xp.sum(x * x, axis=1))
    return p4_rownorm


def make_p5(xp):
    def p5_gemm_bias_gelu(a, w, bias):
        return gelu(xp, a @ w + bias)
    return p5_gemm_bias_gelu


def make_p6(xp):
    def p6_adam(param, grad, m, v):
        m = ADAM_B1 * m + (1.0 - ADAM_B1) * grad
        v = ADAM_B2 * v + (1.0 - ADAM_B2) * (grad * grad)
        mhat = m / ADAM_BC1
        vhat = v / ADAM_BC2
        param = param - ADAM_LR * mhat / (xp.sqrt(vhat) + ADAM_EPS)
        return param, m, v
    return p6_adam


class TorchNamespace:
    """NumPy-style names over ``torch`` for the bodies above (``max`` is ``amax``, not (values, idx))."""

    def __init__(self, torch):
        self._t = torch

    def tanh(self, x):
        return self._t.tanh(x)

    def exp(self, x):
        return self._t.exp(x)

    def sqrt(self, x):
        return self._t.sqrt(x)

    def max(self, x, axis, keepdims=False):
        return self._t.amax(x, dim=axis, keepdim=keepdims)

    def sum(self, x, axis, keepdims=False):
        return self._t.sum(x, dim=axis, keepdim=keepdims)

    def mean(self, x, axis, keepdims=False):
        return self._t.mean(x, dim=axis, keepdim=keepdims)

    # -- the corpus (kfuse/bench/corpus) uses these too; anything else falls through to torch --
    def __getattr__(self, name):            # log, log1p, abs, isnan, sign, float32, int8, ...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._t, name)

    def _tensor_like(self, v, like):
        return v if self._t.is_tensor(v) else self._t.tensor(v, dtype=like.dtype, device=like.device)

    def min(self, x, axis, keepdims=False):
        return self._t.amin(x, dim=axis, keepdim=keepdims)

    def var(self, x, axis, keepdims=False):
        return self._t.var(x, dim=axis, keepdim=keepdims, correction=0)

    def std(self, x, axis, keepdims=False):
        return self._t.std(x, dim=axis, keepdim=keepdims, correction=0)

    def _with_scalar(self, a, b, clamp, both):
        """``both(a, b)`` of two tensors; with a Python scalar, ``clamp`` of the tensor by it."""
        if not self._t.is_tensor(b):
            return clamp(a, b)
        if not self._t.is_tensor(a):
            return clamp(b, a)
        return both(a, b)

    def maximum(self, a, b):
        return self._with_scalar(a, b, self._t.clamp_min, self._t.maximum)

    def minimum(self, a, b):
        return self._with_scalar(a, b, self._t.clamp_max, self._t.minimum)

    def clip(self, x, lo, hi):
        return self._t.clamp(x, lo, hi)

    def where(self, c, a, b):
        ref = a if self._t.is_tensor(a) else b
        if self._t.is_tensor(ref):
            a, b = self._tensor_like(a, ref), self._tensor_like(b, ref)
        return self._t.where(c, a, b)

    def transpose(self, x, axes=None):
        return x.permute(*(axes if axes is not None else range(x.ndim - 1, -1, -1)))

    def concatenate(self, xs, axis=0):
        return self._t.cat(list(xs), dim=axis)

    def take_along_axis(self, x, idx, axis):
        return self._t.take_along_dim(x, idx, dim=axis)

    def cumsum(self, x, axis):
        return self._t.cumsum(x, dim=axis)

    def diff(self, x, axis=-1):
        return self._t.diff(x, dim=axis)

    def round(self, x):
        return self._t.round(x)

    def power(self, x, p):
        return self._t.pow(x, p)

    def expand_dims(self, x, axis):
        return self._t.unsqueeze(x, axis)


# ---- workloads and cases -----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Case:
    """One workload at one size."""
    workload: "Workload"
    label: str                                  # "P1", "P5 4096x4096x4096"
    dtype: str                                  # "float32" / "float16"
    shapes: tuple[tuple[int, ...], ...]         # input shapes, in argument order
    out_shapes: tuple[tuple[int, ...], ...]
    flops: float                                # nominal floating-point operations
    nbytes: float                               # minimal traffic: inputs once + outputs once
    dims: dict = dataclasses.field(default_factory=dict, compare=False, hash=False)

    @property
    def intensity(self) -> float:
        return self.flops / self.nbytes

    @property
    def bound(self) -> str:
        return self.workload.bound

    def body(self, xp) -> Callable:
        return self.workload.make(xp)

    def make_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Host (NumPy) inputs of this case, deterministic for a seed."""
        rng = np.random.default_rng(seed)
        return [gen(rng, shape, np.dtype(self.dtype))
                for gen, shape in zip(self.workload.generators(self), self.shapes)]

    def reference_rows(self, limit_elems: int = 1 << 22) -> int:
        """How many leading rows of the outputs the float64 reference checks (keeps it cheap)."""
        rows = self.out_shapes[0][0]
        per_row = max(1, int(np.prod(self.shapes[0][1:], dtype=np.int64)))
        return max(1, min(rows, limit_elems // per_row))

    def reference_inputs(self, inputs: list, rows: int) -> list[np.ndarray]:
        """float64 copies of the inputs restricted to what the first ``rows`` output rows need."""
        sl = self.workload.sliced
        return [np.asarray(a[:rows] if s else a, dtype=np.float64) for a, s in zip(inputs, sl)]

    def __str__(self) -> str:
        return f"{self.label} {self.dtype} " + " ".join("x".join(map(str, s)) for s in self.shapes)


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str                                   # "P1"
    title: str
    make: Callable[[Any], Callable]             # xp -> function
    bound: str                                  # "memory" or "compute"
    sliced: tuple[bool, ...]                    # inputs sliced along axis 0 for the reference
    cases_fn: Callable[[str, str], list]        # (device, size) -> list[dict]
    build_case: Callable[["Workload", dict], Case]
    generators: Callable[[Case], list]

    def cases(self, device: str, size: str) -> list[Case]:
        return [self.build_case(self, d) for d in self.cases_fn(device, size)]


def _normal(scale=1.0, shift=0.0):
    def gen(rng, shape, dtype):
        a = rng.standard_normal(shape, dtype=np.float32)
        if scale != 1.0:
            a *= np.float32(scale)
        if shift:
            a += np.float32(shift)
        return a.astype(dtype, copy=False)
    return gen


def _positive(scale=1e-3):
    def gen(rng, shape, dtype):
        a = rng.standard_normal(shape, dtype=np.float32)
        np.square(a, out=a)
        a *= np.float32(scale)
        return a.astype(dtype, copy=False)
    return gen


def _isz(dtype: str) -> int:
    return np.dtype(dtype).itemsize


# Sizes per (device, size): "full" = the sizes, "quick" = tiny smoke sizes,
# "tiny" = the hot-dispatch sizes (~1024 elements).
def _rows_cols(device, size, gpu=(16384, 4096), cpu=(4096, 4096)):
    if size == "tiny":
        return [dict(rows=8, cols=128)]
    if size == "quick":
        return [dict(rows=256, cols=256)]
    r, c = gpu if device == "gpu" else cpu
    return [dict(rows=r, cols=c)]


def _cases_p1(device, size):
    if size == "tiny":
        return [dict(rows=32, cols=32)]
    return _rows_cols(device, size, gpu=(8192, 8192), cpu=(4096, 4096))


def _case_p1(w: Workload, d: dict) -> Case:
    r, c = d["rows"], d["cols"]
    n = r * c
    return Case(w, w.name, "float32", ((r, c), (c,), (c,)), ((r, c),),
                flops=n * (2 + GELU_FLOPS), nbytes=4 * (2 * n + 2 * c), dims=d)


def _case_rowwise(flops_per_elem, params, out_full=True):
    def build(w: Workload, d: dict) -> Case:
        r, c = d["rows"], d["cols"]
        n = r * c
        shapes = ((r, c),) + ((c,),) * params
        out = ((r, c),) if out_full else ((r,),)
        nbytes = 4 * (n + params * c + (n if out_full else r))
        return Case(w, w.name, "float32", shapes, out, flops=n * flops_per_elem, nbytes=nbytes, dims=d)
    return build


def _cases_p5(device, size):
    if size == "tiny":
        return [dict(M=16, N=16, K=16, dtype="float16" if device == "gpu" else "float32")]
    if size == "quick":
        return [dict(M=64, N=64, K=64, dtype="float16" if device == "gpu" else "float32")]
    if device == "gpu":
        return [dict(M=4096, N=4096, K=4096, dtype="float16"), dict(M=8192, N=1024, K=4096, dtype="float16")]
    return [dict(M=512, N=512, K=512, dtype="float32")]


def _case_p5(w: Workload, d: dict) -> Case:
    M, N, K, dt = d["M"], d["N"], d["K"], d["dtype"]
    label = f"{w.name} {M}x{N}x{K}"
    return Case(w, label, dt, ((M, K), (K, N), (N,)), ((M, N),),
                flops=2.0 * M * N * K + (1 + GELU_FLOPS) * M * N,
                nbytes=_isz(dt) * (M * K + K * N + N + M * N), dims=d)


def _cases_p6(device, size):
    if size == "tiny":
        return [dict(n=1024)]
    if size == "quick":
        return [dict(n=1 << 16)]
    return [dict(n=(1 << 26) if device == "gpu" else (1 << 24))]


def _case_p6(w: Workload, d: dict) -> Case:
    n = d["n"]
    return Case(w, w.name, "float32", ((n,),) * 4, ((n,),) * 3,
                flops=14.0 * n, nbytes=4 * 7 * n, dims=d)


WORKLOADS: tuple[Workload, ...] = (
    Workload("P1", "gelu(x*w+b), tanh form (elementwise + broadcast)", make_p1, "memory",
             (True, False, False), _cases_p1, _case_p1, lambda c: [_normal(), _normal(), _normal(0.1)]),
    Workload("P2", "softmax over rows: e = exp(x - max); e / sum(e)", make_p2, "memory",
             (True,), _rows_cols, _case_rowwise(5, 0), lambda c: [_normal()]),
    Workload("P3", "layernorm over rows with gamma, beta (eps 1e-5)", make_p3, "memory",
             (True, False, False), _rows_cols, _case_rowwise(8, 2),
             lambda c: [_normal(2.0, 0.5), _normal(), _normal()]),
    Workload("P4", "row L2 norm sqrt(sum(x*x, axis=1))", make_p4, "memory",
             (True,), _rows_cols, _case_rowwise(2, 0, out_full=False), lambda c: [_normal()]),
    Workload("P5", "GEMM + bias + GELU (f16 on GPU, f32 on CPU)", make_p5, "compute",
             (True, False, False), _cases_p5, _case_p5,
             lambda c: [_normal(), _normal(1.0 / math.sqrt(c.dims["K"])), _normal(0.1)]),
    Workload("P6", "Adam step (lr 1e-3, betas 0.9/0.999, eps 1e-8, t=10) -> (param, m, v)", make_p6,
             "memory", (True, True, True, True), _cases_p6, _case_p6,
             lambda c: [_normal(), _normal(1e-2), _normal(1e-3), _positive(1e-4)]),
)

BY_NAME = {w.name: w for w in WORKLOADS}


def public_cases(device: str, size: str = "full", names=None) -> list[Case]:
    """Every case of the public suite for ``device`` ("cpu"/"gpu") at ``size`` (full/quick/tiny)."""
    out = []
    for w in WORKLOADS:
        if names and w.name not in names:
            continue
        out.extend(w.cases(device, size))
    return out


def tiny_case(case: Case, device: str) -> Case:
    """The ~1024-element version of ``case``'s workload (for hot dispatch overhead)."""
    return case.workload.cases(device, "tiny")[0]


def relative_error(actual: list, reference: list) -> float:
    """max over outputs of ||actual - ref||_F / ||ref||_F, in float64 (inf if shapes differ or NaN)."""
    worst = 0.0
    if len(actual) != len(reference):
        return math.inf
    for a, r in zip(actual, reference):
        a = np.asarray(a, dtype=np.float64)
        r = np.asarray(r, dtype=np.float64)
        if a.shape != r.shape:
            return math.inf
        den = float(np.linalg.norm(r.ravel()))
        num = float(np.linalg.norm((a - r).ravel()))
        if not math.isfinite(num):
            return math.inf
        worst = max(worst, num / den if den else num)
    return worst


def as_tuple(out) -> list:
    """A function's result as a list of arrays (single array -> one-element list)."""
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]
