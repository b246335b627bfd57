"""Seeded random programs over the ops kfuse traces.

A :class:`Program` is a small printable description: input arrays (dtype, base shape, literal
values, and the view taken of them: step slices incl. negative steps, then a transpose) and a list
of steps ``vK = <NumPy expression over earlier names>``; :meth:`Program.source` renders the Python
function, :meth:`Program.inputs` builds the arrays. ``generate(seed, index)`` is deterministic.

The generator evaluates every candidate step with NumPy while it builds (so it knows dtypes and
shapes), and keeps programs out of the domains NumPy leaves undefined: integer divisors and
reciprocals are made non-zero and never -1 (no ``INT_MIN // -1``), integer exponents are ``& 3``,
shift counts ``& (bits - 1)``, ldexp's exponents ``(e & 63) - 32``, float->int casts go through
``isfinite``/``clip`` into range, and max/min/argmax/argmin never reduce zero elements. The sign
bits signbit/copysign read are never an op-made NaN's (:meth:`_Gen._sign_operand`). These guards
live inside the step's own expression, so dropping a step while shrinking can never expose an
undefined operation (a gather's index arrays are kept in range the same way: ``gen_gather``; a
float product scan's terms are kept near 1: ``gen_scan``; a scatter's ``ufunc.at`` into an integer
array stays in its range: ``gen_scatter``).
A few programs end with a step NumPy rejects (``-bool``, bad broadcast, an index out of range...):
kfuse must raise the same exception type.

Kinds of step (:data:`KINDS`): ufuncs, reductions, movement, matmul and friends, where/clip/astype,
arrays from pieces and writes into copies (``gen_arrays``), gathers (``gen_gather``), scans
(``gen_scan``), writes at index positions (``gen_scatter``: item assignment with index arrays,
``ufunc.at``, ``np.put``, ``np.put_along_axis``, into arguments too). A step that writes into an
argument or an earlier value (:attr:`Step.in_place`) changes env's arrays as the program's run
does; a step drawn again after NumPy rejected it first has that write undone.
"""
from __future__ import annotations

import numpy as np

from ..ir import ops
from . import gen_arrays, gen_gather, gen_scan, gen_scatter
from .compare import ZERO_SIGN_UNSPECIFIED
from .gen_scan import scan_steps  # noqa: F401 (re-exported)
from .program import InputSpec, Program, Step, _evaluate, _fmt_float  # noqa: F401 (re-exported)

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")
_DTYPE_W = np.array([2, 1, 1, 1.5, 1.5, 1, 0.5, 0.5, 1, 1.5, 3, 3], dtype=float)

def _listed_then_new(listed: tuple, group) -> tuple:
    """``listed`` in its order (a seed's programs depend on it), then every other op of ``group``
    (``kfuse.ir.ops``) that is a NumPy ufunc: a ufunc added to the op table is fuzzed without an
    edit here. The ops of complex values are the complex programs' (``gen_complex``)."""
    new = sorted(o.value for o in group - ops.COMPLEX_PARTS
                 if o.value not in listed and isinstance(getattr(np, o.value, None), np.ufunc))
    return listed + tuple(new)


UNARY = ("negative", "positive", "absolute", "exp", "exp2", "log", "log2", "log10", "log1p",
         "expm1", "sqrt", "cbrt", "square", "reciprocal", "sin", "cos", "tan", "arcsin", "arccos",
         "arctan", "sinh", "cosh", "tanh", "floor", "ceil", "trunc", "rint", "sign", "isnan",
         "isinf", "isfinite", "logical_not", "invert", "fabs", "deg2rad", "rad2deg", "arcsinh",
         "arccosh", "arctanh", "signbit", "bitwise_count")
UNARY = _listed_then_new(UNARY, ops.UNARY)
# einsum forms -> the axes (of a, of b) they contract. NumPy's einsum of two operands sometimes
# factors a contracted subscript of size 1 in one operand (x * sum(y): inf) and sometimes broadcasts
# it (sum(x * y): nan), by its loop's strides (np.einsum('ij,jk', [[inf]], [[1], [-1], [2]]) is inf,
# with two rows of x nan); kfuse broadcasts. Equal for finite values, so the fuzzer keeps to equal
# sizes.
EINSUM_CONTRACTED = {"np.einsum('...ij,...jk->...ik', {a}, {b})": (-1, -2),
                     "np.einsum('...i,...i', {a}, {b})": (-1, -1),
                     "np.einsum('i...,i...->...', {a}, {b})": (0, 0),
                     "np.einsum('ij,kj', {a}, {b})": (1, 1)}
# binary ufuncs whose second operand is guarded (divisors, exponents, shift counts) and kept on the right
_GUARDED = ("floor_divide", "remainder", "fmod", "power", "left_shift", "right_shift")
UNARY_OPERATORS = {"negative": "-{}", "positive": "+{}", "absolute": "abs({})", "invert": "~{}"}
BINARY = ("add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power",
          "float_power", "arctan2", "hypot", "maximum", "minimum", "fmax", "fmin", "equal",
          "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
          "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
          "right_shift", "copysign", "logaddexp", "logaddexp2", "heaviside", "fmod", "gcd", "lcm",
          "ldexp")
BINARY = _listed_then_new(BINARY, ops.BINARY)
BINARY_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/",
                    "floor_divide": "//", "remainder": "%", "power": "**", "bitwise_and": "&",
                    "bitwise_or": "|", "bitwise_xor": "^", "left_shift": "<<", "right_shift": ">>",
                    "equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=",
                    "greater": ">", "greater_equal": ">="}
REDUCTIONS = ("sum", "mean", "prod", "max", "min", "any", "all", "var", "std", "argmax", "argmin")
_NONEMPTY = ("max", "min", "argmax", "argmin")
MAX_ELEMENTS = 256          # no intermediate grows past this
# the kinds of step (each a _Gen method or a gen_* module's function) and how often each is drawn;
# ``generate(..., favor=kind)`` draws one about half the time (``kfuse fuzz --kind``)
KINDS = {"unary": 0.27, "binary": 0.33, "reduction": 0.17, "movement": 0.09, "matmul": 0.05,
         "other": 0.09, "assemble": 0.05, "write": 0.05, "gather": 0.11, "scan": 0.08, "scatter": 0.08}
ERROR_CHANCE = 0.04         # a step NumPy rejects ends the program this often (else it is redrawn)


def _accumulators(dtype) -> tuple:
    """The ``dtype=`` a generated sum/prod of a ``dtype`` array may ask for: a float one only when
    its mantissa holds every value of an integer input exactly (float64: 32-bit integers, float32:
    16-bit). Otherwise terms such as int64's +-9.2e18 round on conversion and their cancellation
    leaves an order-dependent result (seed 27 #381: 0.0 against NumPy's 3.0), not a kfuse bug.
    A float input gets no integer one: each term would be cast to int64, undefined for inf, NaN
    and out-of-range values (seed 35 #2491: x86 gives INT64_MIN, a GPU saturates)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return ("float64", "float32")
    if dt.kind == "c":
        return ("complex128", "complex64")
    bits = dt.itemsize * 8 if dt.kind in "iu" else 0
    return ("int64",) + (("float64",) if bits <= 32 else ()) + (("float32",) if bits <= 16 else ())


class _Gen:
    ALLOWED = DTYPES            # the dtypes a step's value may have (a subclass adds its own)

    def __init__(self, seed: int, index: int, max_steps: int, favor: str | None = None):
        self.rng = np.random.default_rng([seed & 0xFFFFFFFF, index])
        self.seed, self.index, self.max_steps = seed, index, max_steps
        self.kind_weights = _kind_weights(favor)
        self.error_chance = ERROR_CHANCE       # a kind drawing an error on purpose raises it
        self.env: dict[str, np.ndarray] = {}
        self.inputs: list[InputSpec] = []
        self.steps: list[Step] = []
        self.index_inputs: list[str] = []      # integer arguments gen_gather added

    # --- random helpers
    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def dtype(self) -> str:
        return DTYPES[int(self.rng.choice(len(DTYPES), p=_DTYPE_W / _DTYPE_W.sum()))]

    # --- inputs
    def program_shape(self) -> tuple[int, ...]:
        rank = int(self.rng.choice(4, p=[0.1, 0.3, 0.4, 0.2]))
        dims = [int(self.choice((1, 2, 3, 4, 5, 7))) for _ in range(rank)]
        while int(np.prod(dims)) > 48:
            dims[int(self.rng.integers(rank))] = 2
        if rank and self.chance(0.06):
            dims[int(self.rng.integers(rank))] = 0
        return tuple(dims)

    def values(self, dtype: str, n: int) -> tuple:
        dt = np.dtype(dtype)
        rng = self.rng
        if dt.kind == "b":
            return tuple(bool(v) for v in rng.random(n) < 0.5)
        out = []
        if dt.kind in "iu":
            info = np.iinfo(dt)
            extremes = [info.min, info.max, info.min + 1, info.max - 1, 0]
            for _ in range(n):
                r = rng.random()
                if r < 0.7:
                    v = int(rng.integers(-6, 7))
                    v = v if info.min <= v <= info.max else abs(v)
                elif r < 0.85:
                    v = int(self.choice(extremes))
                else:
                    v = int(rng.integers(info.min, int(info.max) + 1, dtype=np.uint64
                                         if dt.kind == "u" else np.int64))
                out.append(v)
            return tuple(out)
        specials = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0]
        p_special = 0.0 if self.chance(0.4) else 0.12
        for _ in range(n):
            r = rng.random()
            if r < p_special:
                v = self.choice(specials)
            elif r < 0.55:
                v = float(rng.integers(-8, 9)) / float(self.choice((1, 2, 4)))
            elif r < 0.93:
                v = float(rng.uniform(-3, 3))
            else:
                v = float(rng.uniform(-1, 1) * 10 ** rng.uniform(1, 4))
            out.append(float(np.array(v, dtype=dt)))
        return tuple(out)

    def make_input(self, name: str, shape: tuple[int, ...]) -> InputSpec:
        dtype = self.dtype()
        if not shape or not self.chance(0.35):
            n = int(np.prod(shape)) if shape else 1
            return InputSpec(name, dtype, shape, self.values(dtype, n))
        rank = len(shape)
        perm = None
        logical = shape
        if rank >= 2 and self.chance(0.6):
            q = tuple(int(i) for i in self.rng.permutation(rank))
            base = [0] * rank
            for i in range(rank):
                base[q[i]] = shape[i]     # base.transpose(q).shape == shape
            logical, perm = tuple(base), q
        slices = None
        base_shape = logical
        if self.chance(0.7) or perm is None:
            slices, base_shape = [], []
            for d in logical:
                step = int(self.choice((1, 2, -1, -2, 3)))
                if step > 0:
                    start = int(self.choice((0, 1)))
                    length = start + (d - 1) * step + 1 if d else start
                    slices.append((start, step))
                else:
                    length = (d - 1) * -step + 1 if d else 0
                    slices.append((None, step))
                base_shape.append(length)
            slices, base_shape = tuple(slices), tuple(base_shape)
        n = int(np.prod(base_shape)) if base_shape else 1
        spec = InputSpec(name, dtype, base_shape, self.values(dtype, n), slices, perm)
        assert spec.build().shape == shape, (spec, shape)
        return spec

    # --- steps
    def vars(self, pred=None) -> list[str]:
        return [k for k, v in self.env.items() if pred is None or pred(v)]

    def var(self, pred=None) -> str | None:
        vs = self.vars(pred)
        if not vs:
            return None
        if self.steps and self.chance(0.5):     # prefer recent values: deeper chains
            recent = [v for v in vs if v.startswith("v")]
            if recent:
                return recent[-1] if self.chance(0.5) else self.choice(recent)
        return self.choice(vs)

    def const(self, dtype_hint=None, small=False) -> str:
        r = self.rng.random()
        if r < 0.45:
            v = int(self.rng.integers(-3 if not small else 1, 6))
            return f"({v})" if v < 0 else str(v)
        if r < 0.8:
            v = float(self.choice((0.5, -1.5, 2.0, 0.25, -0.0, 3.0, 1e3)))
            return f"({_fmt_float(v)})" if v < 0 or str(v).startswith("-") else _fmt_float(v)
        if r < 0.85:
            return self.choice(("True", "False"))
        dt = self.choice(("int8", "uint8", "int32", "float32", "float16", "float64", "int64"))
        v = int(self.rng.integers(1 if small else -3, 6))
        if dt.startswith("u"):
            v = abs(v) or 1
        return f"np.{dt}({v})"

    def gen_unary(self) -> str | None:
        a = self.var()
        name = self.choice(UNARY)
        arr = self.env[a]
        if name == "reciprocal" and arr.dtype.kind in "biu":
            a = self._safe_divisor(a, np.reciprocal(np.ones(1, arr.dtype)).dtype)
            return f"np.reciprocal({a})"
        if name in UNARY_OPERATORS and self.chance(0.5):
            return UNARY_OPERATORS[name].format(a)
        if name in ("sin", "cos", "tan") and arr.dtype.kind == "f":
            # a huge argument makes the result depend on the argument's last ulp (an ulp of
            # difference between two libms' pow upstream turns tan(1e39) into noise), and tan is
            # ill-conditioned near pi/2 (tan(arctan2(65535, -3)) in float32): keep them tame
            bound = "1.5" if name == "tan" else "100.0"
            return f"np.{name}(np.clip({a}, -{bound}, {bound}))"
        if name in ("arccosh", "arctanh") and arr.dtype.kind == "f" and a.startswith("v"):
            # ill-conditioned near 1 (and -1): an ulp of difference in a computed argument (tanh
            # near 1) moves the result far past the tolerance, so they take exact values only
            return None
        if name == "signbit":
            a = self._sign_operand(a)
        if name == "reciprocal":
            a = self._zero_sign_operand(a)
        return f"np.{name}({a})"

    def _sign_operand(self, x: str) -> str:
        """``x`` where its sign bit becomes a value (np.signbit, np.copysign's 2nd operand): NaNs
        made 0.0 (an op-made NaN's sign is the hardware's: kfuse/testing.py), and zeros made +0.0
        after ops whose zero sign NumPy leaves open (compare.ZERO_SIGN_UNSPECIFIED)."""
        if self.env[x].dtype.kind != "f":
            return x
        keep = f"({x} == {x})"
        if self._zero_sign_open():
            keep += f" & ({x} != 0)"
        return f"np.where({keep}, {x}, 0.0)"

    def _zero_sign_operand(self, x: str) -> str:
        """``x`` where a zero's sign becomes a value (arctan2's operands, a float divisor,
        reciprocal): zeros made +0.0 after ops whose zero sign NumPy leaves open (a contraction on
        the GPU gives -0.0 for a product of -0.0 where NumPy's loop starts from +0.0: cuda seed 51
        #894, arctan2 of it was -pi against pi)."""
        if self.env[x].dtype.kind != "f" or not self._zero_sign_open():
            return x
        return f"np.where({x} != 0, {x}, 0.0)"

    def _zero_sign_open(self) -> bool:
        """Whether a step so far is an op whose zero sign NumPy leaves open."""
        return bool(Program(0, 0, (), tuple(self.steps), ()).ops() & ZERO_SIGN_UNSPECIFIED)

    def _safe_divisor(self, b: str, loop) -> str:
        loop = np.dtype(loop)
        if loop.kind not in "iu":
            return b
        d = b if self.env[b].dtype == loop else f"{b}.astype(np.{loop.name})"
        if loop.kind == "u":
            return f"np.where({d} == 0, 3, {d})"
        return f"np.where(({d} == 0) | ({d} == -1), 3, {d})"

    def gen_binary(self) -> str | None:
        name = self.choice(BINARY)
        a = self.var()
        use_const = self.chance(0.25)
        b = self.const(small=name in _GUARDED + ("ldexp",)) if use_const else self.var()
        if use_const and self.chance(0.3):
            a, b = b, a                              # constant on the left
            if name in _GUARDED:
                a, b = b, a
        raw = (f"({a} {BINARY_OPERATORS[name]} {b})" if name in BINARY_OPERATORS and self.chance(0.6)
               else f"np.{name}({a}, {b})")
        guarded = name in _GUARDED
        try:
            # the loop dtype, probed with a harmless divisor/exponent: NumPy's own errors for
            # negative integer powers depend on values, which kfuse cannot see
            res = _evaluate(f"np.{name}({a}, np.ones_like({b}))" if guarded and b in self.env
                            else raw, self.env)
        except Exception:
            return raw                               # may become an error program
        loop = np.asarray(res).dtype
        if name == "fmod" and loop.kind == "f" and any(
                x in self.env and x.startswith("v") and self.env[x].dtype.kind == "f" for x in (a, b)):
            # fmod jumps at every multiple of the divisor and scales a divisor's error by the
            # quotient: an ulp of a computed float (libdevice's log2(8.0) is 3 - 4e-16) moves the
            # result past any tolerance (cuda seed 49 #4032, #5821, #6525), so exact operands only
            return None
        if guarded and loop.kind in "iu" and b in self.env:
            if name in ("floor_divide", "remainder", "fmod"):
                b = self._safe_divisor(b, loop)
            else:
                bits = 3 if name == "power" else loop.itemsize * 8 - 1
                cast = b if self.env[b].dtype == loop else f"{b}.astype(np.{loop.name})"
                b = f"({cast} & {bits})"
        if name == "copysign" and b in self.env:
            b = self._sign_operand(b)
        if name in ("arctan2", "divide", "floor_divide") and b in self.env:
            b = self._zero_sign_operand(b)
        if name == "arctan2" and a in self.env:
            a = self._zero_sign_operand(a)
        if name == "ldexp" and b in self.env:
            # exponents bounded as shift counts are: a huge one saturates exactly, but to inf or 0
            e = b if self.env[b].dtype.kind == "i" else f"{b}.astype(np.int32)"
            b = f"(({e} & 63) - 32)"
        if name in BINARY_OPERATORS and raw.startswith("("):
            return f"({a} {BINARY_OPERATORS[name]} {b})"
        return f"np.{name}({a}, {b})"

    def _axis(self, ndim: int, single=False):
        if ndim == 0 or self.chance(0.25):
            return None
        if single or self.chance(0.6):
            ax = int(self.rng.integers(ndim))
            return ax - ndim if self.chance(0.3) else ax
        k = int(self.rng.integers(1, ndim + 1))
        return tuple(sorted(int(x) for x in self.rng.choice(ndim, k, replace=False)))

    def gen_reduction(self) -> str | None:
        name = self.choice(REDUCTIONS)
        a = self.var()
        arr = self.env[a]
        axis = self._axis(arr.ndim, single=name.startswith("arg"))
        if name in _NONEMPTY and arr.size == 0 and not self.chance(0.1):
            return None
        kw = []
        if axis is not None:
            kw.append(f"axis={axis!r}")
        if self.chance(0.4):
            kw.append("keepdims=True")
        if name in ("sum", "prod") and self.chance(0.1):
            kw.append(f"dtype=np.{self.choice(_accumulators(arr.dtype))}")
        if name in ("var", "std") and self.chance(0.15):
            kw.append("ddof=1")
        if not name.startswith("arg") and self.chance(0.15):
            kw.append(f"where=({a} > 0)")          # a mask: max/min then need initial=
        if name in ("sum", "prod", "max", "min") and (self.chance(0.1) or (
                name in ("max", "min") and kw[-1:] == [f"where=({a} > 0)"])):
            kw.append(f"initial={int(self.rng.integers(0, 4))}")
        args = ", ".join([a] + kw) if self.chance(0.5) else ", ".join(kw)
        if args == ", ".join(kw):
            return f"{a}.{name}({args})"
        return f"np.{name}({args})"

    def gen_movement(self) -> str | None:
        a = self.var()
        arr = self.env[a]
        nd = arr.ndim
        opts = ["{x}[None]", "np.expand_dims({x}, 0)", "{x}.reshape(-1)",
                "np.broadcast_to({x}, (2,) + SHAPE)"]
        if nd >= 1:
            opts += ["{x}[::-1]", "{x}[1:]", "{x}[::2]", "{x}[..., ::-2]", "{x}[-1]", "{x}[:, None]"]
        if nd >= 2:
            perm = tuple(int(i) for i in self.rng.permutation(nd))
            opts += ["{x}.T", "np.swapaxes({x}, 0, -1)", f"np.transpose({{x}}, {perm!r})",
                     "{x}[1:, ::-1]", "{x}.reshape(SHAPE0, -1)", "np.moveaxis({x}, 0, -1)"]
        if 1 in arr.shape:
            opts.append("np.squeeze({x})")
        if nd >= 1 and arr.shape[-1] % 2 == 0 and arr.shape[-1]:
            opts.append("{x}.reshape(SHAPEM1 + (2, -1))")
        expr = self.choice(opts)
        expr = expr.replace("SHAPE0", repr(arr.shape[0]) if nd else "1")
        expr = expr.replace("SHAPEM1", repr(arr.shape[:-1])).replace("SHAPE", repr(arr.shape))
        return expr.replace("{x}", a)

    def gen_matmul(self) -> str | None:
        cands = self.vars(lambda v: v.ndim >= 1 and v.dtype.kind != "b")
        if not cands:
            return None
        a = self.choice(cands)
        forms = ["{a} @ {b}", "{a} @ {b}.T", "{a}.T @ {b}", "np.matmul({a}, {b})", "np.dot({a}, {b})",
                 "{a} @ np.swapaxes({b}, -1, -2)", "np.inner({a}, {b})", "np.tensordot({a}, {b}, 1)",
                 "np.tensordot({a}, {b}, ([0], [0]))", "np.vecdot({a}, {b})", "np.matvec({a}, {b})",
                 "np.vecmat({a}, {b})", *EINSUM_CONTRACTED]
        self.rng.shuffle(forms)
        bs = list(cands)
        self.rng.shuffle(bs)
        for form in forms:
            for b in bs:
                ax = EINSUM_CONTRACTED.get(form)
                sa, sb = (self.env[a].shape, self.env[b].shape)
                if ax and -len(sa) <= ax[0] < len(sa) and -len(sb) <= ax[1] < len(sb) and \
                        sa[ax[0]] != sb[ax[1]]:
                    continue            # a contracted subscript of size 1 against n: see EINSUM_CONTRACTED
                expr = form.format(a=a, b=b)
                try:
                    r = _evaluate(expr, self.env)
                except Exception:
                    continue
                if np.asarray(r).size <= MAX_ELEMENTS:
                    return expr
        return None

    def gen_other(self) -> str | None:
        kind = self.choice(("where", "clip", "astype", "astype", "where", "table"))
        a = self.var()
        arr = self.env[a]
        if kind == "table" and arr.ndim:        # an array constant the function makes (an extra input)
            n = arr.shape[-1]
            return self.choice((f"({a} + np.arange({n}))", f"({a} * np.linspace(-2, 2, {n}, dtype=np.float32))",
                                f"np.where({a} > 0, np.eye({n}, dtype=np.{arr.dtype.name})[-1], {a})"))
        if kind == "where":
            c = self.var()
            b = self.var() if self.chance(0.7) else self.const()
            cond = c if self.env[c].dtype == bool or self.chance(0.3) else f"({c} > 0)"
            return f"np.where({cond}, {a}, {b})"
        if kind == "clip":
            lo, hi = sorted(int(x) for x in self.rng.integers(-4, 5, 2))
            if self.chance(0.3):
                return f"{a}.clip({lo}, None)" if self.chance(0.5) else f"np.clip({a}, None, {hi})"
            if self.chance(0.3):
                return f"np.clip({a}, {float(lo) - 0.5}, {float(hi) + 0.5})"
            return f"np.clip({a}, {lo}, {hi})"
        dst = np.dtype(self.dtype())
        if arr.dtype.kind == "f" and dst.kind in "iu":
            bits = dst.itemsize * 8
            lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 2)) if dst.kind == "i" else (0, 2 ** (bits - 1))
            return (f"np.clip(np.where(np.isfinite({a}), {a}, 0), {float(lo)!r}, {float(hi)!r})"
                    f".astype(np.{dst.name})")
        return f"{a}.astype(np.{dst.name})"

    def kinds(self) -> dict:
        """Each kind of step (the keys of KINDS) -> the function drawing one."""
        return {"unary": self.gen_unary, "binary": self.gen_binary, "reduction": self.gen_reduction,
                "movement": self.gen_movement, "matmul": self.gen_matmul, "other": self.gen_other,
                "assemble": lambda: gen_arrays.assemble(self), "write": lambda: gen_arrays.write(self),
                "gather": lambda: gen_gather.gather(self), "scan": lambda: gen_scan.scan(self),
                "scatter": lambda: gen_scatter.scatter(self)}

    def step(self) -> bool:
        """Add one step; False when the program ended with an expected NumPy error."""
        kinds = list(self.kinds().values())
        weights = self.kind_weights
        for _ in range(30):
            self.error_chance = ERROR_CHANCE
            gen = kinds[int(self.rng.choice(len(kinds), p=weights))]
            made = gen()
            if made is None:
                continue
            step = Step(f"v{len(self.steps)}", *made) if isinstance(made, tuple) else \
                Step(f"v{len(self.steps)}", made)
            # a step writing in place changes an earlier value in env: undone if it is redrawn
            written = np.array(self.env[step.expr]) if step.in_place else None
            try:
                val = step.run(self.env)
            except Exception:
                if self.chance(self.error_chance):
                    self.steps.append(step)
                    return False
                if written is not None and self.env[step.expr].flags.writeable:
                    np.copyto(self.env[step.expr], written)
                continue
            val = np.asarray(val)
            if val.dtype.name not in self.ALLOWED or val.size > MAX_ELEMENTS:
                continue
            self.steps.append(step)
            self.env[step.out] = val
            return True
        return True

    def build(self) -> Program:
        shape = self.program_shape()
        n_in = int(self.rng.choice([1, 2, 3], p=[0.3, 0.45, 0.25]))
        for i in range(n_in):
            s = list(shape)
            if s and self.chance(0.3):
                s = s[int(self.rng.integers(1, len(s) + 1)):]
            s = [1 if (d and self.chance(0.15)) else d for d in s]
            spec = self.make_input(f"a{i}", tuple(s))
            self.inputs.append(spec)
            self.env[spec.name] = spec.build()
        n_steps = int(self.rng.integers(1, self.max_steps + 1))
        ok = True
        for _ in range(n_steps):
            if not self.step():
                ok = False
                break
        if not self.steps:
            self.steps.append(Step("v0", f"np.negative({self.inputs[0].name}.astype(np.float64))"))
        last = self.steps[-1].out
        outs = [last]
        if ok:
            others = [s.out for s in self.steps[:-1]]
            for _ in range(int(self.rng.choice([0, 1, 2], p=[0.45, 0.4, 0.15]))):
                if others:
                    o = self.choice(others)
                    if o not in outs:
                        outs.append(o)
            if self.chance(0.04):
                outs.append(self.inputs[0].name)
        tuple_out = len(outs) > 1 or self.chance(0.3)
        return Program(self.seed, self.index, tuple(self.inputs), tuple(self.steps), tuple(outs),
                       tuple_out)


def _kind_weights(favor: str | None) -> np.ndarray:
    """KINDS' weights as probabilities; ``favor`` (a kind) gets half of them."""
    w = dict(KINDS)
    if favor is not None:
        if favor not in w:
            raise ValueError(f"unknown kind {favor!r}; kinds: {', '.join(KINDS)}")
        w[favor] = sum(v for k, v in w.items() if k != favor)
    p = np.array(list(w.values()))
    return p / p.sum()


def generate(seed: int, index: int, max_steps: int = 5, favor: str | None = None) -> Program:
    """The ``index``-th program of the run seeded ``seed`` (deterministic); ``favor``: a kind of
    step (a key of KINDS) drawn about half the time. Complex programs: ``gen_complex.generate``."""
    return _Gen(seed, index, max_steps, favor).build()
