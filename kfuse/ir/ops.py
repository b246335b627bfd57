"""The op enum of the IR and the groups ops fall into.

Elementwise ops carry the name of the NumPy ufunc whose semantics they have (``Op.ADD.value ==
"add"``), so dtype resolution, the CPU reference and the emitters can all look the ufunc up.
Conventions every producer of IR follows (the tracer builds IR this way; passes keep it so):

* An elementwise node's inputs all have exactly the node's shape (broadcasting is explicit, via
  ``BROADCAST``) and exactly the dtypes of the NumPy loop that ``np.<ufunc>.resolve_dtypes``
  chooses (casts are explicit, via ``CAST``). ``node.dtype`` is the loop's output dtype. Those
  may differ from each other: ``ldexp`` (float32, int32) -> float32, ``bitwise_count`` int16 -> uint8.
* ``CONST`` is a 0-d scalar (``attrs["value"]``, a Python bool/int/float of ``node.dtype``).
* ``INPUT`` is an array argument (``attrs["index"]``: position among the array arguments,
  ``attrs["name"]``: the parameter name).
* Reductions: ``attrs["axes"]`` (sorted, non-negative tuple), ``attrs["keepdims"]`` (bool). The
  input has the reduction's accumulate dtype already (the tracer inserts the ``CAST``), and
  ``node.dtype`` is that dtype, except ``ARGMAX``/``ARGMIN`` whose dtype is int64 and whose single
  axis is ``attrs["axes"][0]`` (``None`` axis is traced as a reshape to 1-D first).
* Movement: ``BROADCAST`` (NumPy right-aligned rules to ``node.shape``), ``RESHAPE`` (C order,
  to ``node.shape``), ``PERMUTE`` (``attrs["perm"]``), ``SLICE`` (``attrs["starts"]``,
  ``attrs["steps"]``: per dim; element i of dim d reads ``starts[d] + i * steps[d]``; lengths are
  ``node.shape``). ``PAD`` (``attrs["starts"]``, ``attrs["steps"]`` (positive), ``attrs["fill"]``)
  is the inverse of a SLICE: the input's element k of dim d lands at ``starts[d] + k * steps[d]``
  of ``node.shape``, every other element is ``fill`` (a Python scalar of ``node.dtype``); the
  input has at least one element. Concatenation, ``np.pad`` and item assignment are built on it.
  ``GATHER`` (``attrs["dims"]``: one entry per dim of the source ``inputs[0]``) reads the source
  at data-dependent positions: inputs ``(src, idx_0, ..., idx_k-1)``, every ``idx_j`` an integer
  array of ``node.shape`` (broadcast explicitly). Element ``I`` of the node reads ``src`` at the
  index whose dim ``d`` is ``I[dims[d]]`` when ``dims[d] >= 0`` (then ``src.shape[d]`` equals
  ``node.shape[dims[d]]``, or is 1: read at 0), else ``idx_j[I]`` with ``j = -1 - dims[d]``, a
  negative value counting from the end once (NumPy's rule; a dim of extent 1 is read at 0). A
  value still out of range reads element 0 or the last: the tracer adds a run-time check that
  raises NumPy's IndexError (``Graph.checks``). Fancy indexing, ``np.take`` and
  ``np.take_along_axis`` are built on it.
* ``SEARCHSORTED`` (``attrs["side"]``: ``"left"`` or ``"right"``): inputs ``(a, v)``, ``a`` 1-D and
  sorted, both of one dtype; ``node`` is int64 of ``v``'s shape: for each element of ``v`` NumPy's
  ``np.searchsorted(a, v, side)`` (a binary search; NaN sorts after every number, as NumPy sorts).
  ``a`` is read whole by every element, so it is a buffer (a kernel input), never computed in
  the searching kernel. ``np.searchsorted``, ``np.digitize`` and ``np.interp`` are built on it.
* ``SCATTER`` (``attrs["dims"]`` as GATHER's, ``attrs["mode"]``, ``attrs["loop"]``): the base
  ``inputs[0]`` (``node.shape``, ``node.dtype``) with values written at data-dependent positions:
  inputs ``(base, values, idx_0, ..., idx_k-1)``, ``values`` and every ``idx_j`` of one shape S
  (the scatter's domain, broadcast explicitly). Element ``I`` of S goes to the base position a
  GATHER with those ``dims`` would read for its element ``I`` (negative positions counted from the
  end once; a base dim of extent 1 is position 0). ``mode`` ``"set"``: the position takes
  ``values[I]`` (of ``node.dtype``; when two elements hit one position which one lands is
  unspecified, as in NumPy, the CPU taking the last in C order as NumPy does). Any other mode is
  a binary ufunc name (NumPy's unbuffered ``ufunc.at``): in C order of S, the position becomes
  ``op(base[p] as loop, values[I])`` computed in the dtype ``loop`` (``values`` has it) and cast
  back to ``node.dtype`` (unsafe, as ``ufunc.at`` does). Out-of-range positions are clamped as
  GATHER's, with the same run-time check. A *region* scatter (``attrs["starts"]`` and
  ``attrs["steps"]``, one per base dim; inputs ``(base, values)``, every dim a domain dim) writes
  ``values[I]`` at ``starts[d] + I[dims[d]] * steps[d]`` along each dim ``d``: an argument's slice
  overwritten (``x[:, 0] = v``, ``fusion.simplify.region_writes``), distinct in-range positions. ``x[idx] = v``, ``np.add.at`` and the other ``ufunc.at``,
  ``np.put`` and ``np.put_along_axis`` are built on it.
* Scans (``CUMSUM``, ``CUMPROD``, ``CUMMAX``, ``CUMMIN``): ``attrs["axis"]`` (non-negative int);
  one input of ``node.dtype`` and ``node.shape`` (the tracer inserts the ``CAST`` to NumPy's
  accumulate dtype). NumPy's ``ufunc.accumulate`` of ``add``/``multiply``/``maximum``/``minimum``
  along the axis, in order: element ``k`` is ``op(result[k-1], x[k])`` computed in ``node.dtype``
  (integers wrap, float16 rounds every step, ``maximum``/``minimum`` propagate NaN), element 0 is
  ``x[0]``. ``np.cumsum``/``np.cumprod`` (axis None: over a reshape to 1-D) are built on them.
* ``MATMUL``: inputs of one dtype with shapes ``(..., M, K)`` and ``(..., K, N)`` (equal batch
  dims, broadcast explicitly; 1-D operands are reshaped by the tracer); output ``(..., M, N)``.
* ``WHERE``: inputs (cond: bool, a, b) of one shape; a, b of ``node.dtype``.
* ``CAST``: one input; converts like ``ndarray.astype(node.dtype)`` (unsafe casting): complex to
  real keeps the real part (NumPy's ComplexWarning is raised by the tracer, not the IR).
* ``RANDOM`` (``attrs["stream"]``: an int unique to the random call in its trace; ``attrs["word"]``:
  0 or 1): uint64 of ``node.shape``, one input, the call's uint64 seed (an INPUT whose value each
  call draws, ``attrs["seed"]``) broadcast to ``node.shape``. Element ``I`` is Philox4x32-10 of
  (seed, stream, ``I``'s C-order flat position in ``node.shape``), word ``word`` (``ir/philox.py``):
  a pure function of those, so a random op is pointwise (it fuses, and may be recomputed in two
  kernels, with the same values), but two calls are never one node (their streams differ) and it
  is never folded. ``trace/random.py`` builds NumPy's distributions from it with ordinary ops.

Complex numbers (complex64, complex128): a complex value is ONE value of dtype complex64/complex128
everywhere in the IR and in the kernel IR (a ``CONST``'s value is a Python ``complex``); each
emitter decides how to hold it (Numba: its native complex; CUDA: a pair). Elementwise ops keep
their ufunc's complex loop (``add``, ``multiply``, ``divide``, ``power``, ``exp``, ``log``,
``sqrt``, trig, ``sign`` = z/|z|, ``equal``...; the ordering compares, ``maximum``/``minimum``
and ``fmax``/``fmin`` are lexicographic, NumPy 2's rule, NaN as NumPy's loops treat it).
``ABSOLUTE`` of a complex input is its float dtype (hypot of the parts). Ops of the parts, each
one input of a complex dtype (or of a real dtype, where NumPy defines them: the tracer composes
those from real ops instead, ``trace/floatparts.py``):

* ``REAL`` / ``IMAG``: the real / imaginary part, of the float dtype (complex64 -> float32);
* ``CONJUGATE``: the complex conjugate (same dtype; the ufunc ``np.conjugate``, which is
  ``POSITIVE`` on real inputs);
* ``ANGLE``: ``arctan2(imag, real)`` of the float dtype (``np.angle``; degrees are a multiply);
* ``COMPLEX`` (binary, no ufunc): the complex number of the parts ``(real, imag)``, both of one
  float dtype (float32 -> complex64), exactly (``np.round``/``np.nan_to_num`` of complex arrays
  work on the parts).

NumPy has no complex loop for ``floor``/``ceil``/``trunc``, ``arctan2``, ``hypot``,
``remainder``, ``floor_divide``, ``fmod``, ``copysign``, ``logaddexp``, ``cbrt``, ``signbit``,
``heaviside``, ``ldexp`` or the bitwise ops: the tracer raises NumPy's TypeError for those.
Reductions ``SUM``/``PROD`` and scans ``CUMSUM``/``CUMPROD`` accumulate in the complex dtype;
``MAX``/``MIN``/``ARGMAX``/``ARGMIN``/``CUMMAX``/``CUMMIN`` order lexicographically (a NaN in
either part propagates).
"""
from __future__ import annotations

import enum

import numpy as np


class Op(enum.Enum):
    # members are singletons compared by identity, so they hash by identity (Enum's __hash__
    # hashes the name in Python code; tracing, passes and lowering look ops up in sets and dicts)
    __hash__ = object.__hash__

    # leaves
    INPUT = "input"
    CONST = "const"
    # unary elementwise (NumPy ufunc names)
    NEGATIVE = "negative"
    POSITIVE = "positive"
    ABSOLUTE = "absolute"
    EXP = "exp"
    EXP2 = "exp2"
    LOG = "log"
    LOG2 = "log2"
    LOG10 = "log10"
    LOG1P = "log1p"
    EXPM1 = "expm1"
    SQRT = "sqrt"
    CBRT = "cbrt"
    SQUARE = "square"
    RECIPROCAL = "reciprocal"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    ARCSIN = "arcsin"
    ARCCOS = "arccos"
    ARCTAN = "arctan"
    SINH = "sinh"
    COSH = "cosh"
    TANH = "tanh"
    ARCSINH = "arcsinh"
    ARCCOSH = "arccosh"
    ARCTANH = "arctanh"
    FLOOR = "floor"
    CEIL = "ceil"
    TRUNC = "trunc"
    RINT = "rint"
    SIGN = "sign"
    SIGNBIT = "signbit"
    BITWISE_COUNT = "bitwise_count"
    ISNAN = "isnan"
    ISINF = "isinf"
    ISFINITE = "isfinite"
    LOGICAL_NOT = "logical_not"
    INVERT = "invert"
    CAST = "cast"
    # the parts of a complex value (module docstring); conjugate is NumPy's ufunc
    REAL = "real"
    IMAG = "imag"
    CONJUGATE = "conjugate"
    ANGLE = "angle"
    # binary elementwise (NumPy ufunc names)
    ADD = "add"
    SUBTRACT = "subtract"
    MULTIPLY = "multiply"
    TRUE_DIVIDE = "divide"
    FLOOR_DIVIDE = "floor_divide"
    REMAINDER = "remainder"
    POWER = "power"
    ARCTAN2 = "arctan2"
    HYPOT = "hypot"
    COPYSIGN = "copysign"
    LOGADDEXP = "logaddexp"
    LOGADDEXP2 = "logaddexp2"
    HEAVISIDE = "heaviside"
    FMOD = "fmod"
    GCD = "gcd"
    LCM = "lcm"
    LDEXP = "ldexp"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    FMAX = "fmax"
    FMIN = "fmin"
    EQUAL = "equal"
    NOT_EQUAL = "not_equal"
    LESS = "less"
    LESS_EQUAL = "less_equal"
    GREATER = "greater"
    GREATER_EQUAL = "greater_equal"
    LOGICAL_AND = "logical_and"
    LOGICAL_OR = "logical_or"
    LOGICAL_XOR = "logical_xor"
    BITWISE_AND = "bitwise_and"
    BITWISE_OR = "bitwise_or"
    BITWISE_XOR = "bitwise_xor"
    LEFT_SHIFT = "left_shift"
    RIGHT_SHIFT = "right_shift"
    COMPLEX = "complex"             # (real, imag) -> complex: module docstring
    # ternary elementwise
    WHERE = "where"
    # reductions
    SUM = "sum"
    PROD = "prod"
    MAX = "max"
    MIN = "min"
    ANY = "any"
    ALL = "all"
    ARGMAX = "argmax"
    ARGMIN = "argmin"
    # scans (running reductions along one axis: NumPy's ufunc.accumulate)
    CUMSUM = "cumsum"
    CUMPROD = "cumprod"
    CUMMAX = "cummax"
    CUMMIN = "cummin"
    # movement (no arithmetic: index math only)
    BROADCAST = "broadcast"
    RESHAPE = "reshape"
    PERMUTE = "permute"
    SLICE = "slice"
    PAD = "pad"
    GATHER = "gather"
    # writes at data-dependent positions
    SCATTER = "scatter"
    # a binary search of each element in a sorted table
    SEARCHSORTED = "searchsorted"
    # contraction
    MATMUL = "matmul"
    # counter-based random bits (Philox4x32-10 of the seed, the call's stream and the position)
    RANDOM = "random"

    def __repr__(self) -> str:  # short, for printed IR
        return self.value


LEAF = frozenset({Op.INPUT, Op.CONST})
UNARY = frozenset({
    Op.NEGATIVE, Op.POSITIVE, Op.ABSOLUTE, Op.EXP, Op.EXP2, Op.LOG, Op.LOG2, Op.LOG10, Op.LOG1P,
    Op.EXPM1, Op.SQRT, Op.CBRT, Op.SQUARE, Op.RECIPROCAL, Op.SIN, Op.COS, Op.TAN, Op.ARCSIN,
    Op.ARCCOS, Op.ARCTAN, Op.SINH, Op.COSH, Op.TANH, Op.ARCSINH, Op.ARCCOSH, Op.ARCTANH, Op.FLOOR,
    Op.CEIL, Op.TRUNC, Op.RINT, Op.SIGN, Op.SIGNBIT, Op.ISNAN, Op.ISINF, Op.ISFINITE, Op.LOGICAL_NOT,
    Op.INVERT, Op.BITWISE_COUNT, Op.CAST,
    Op.REAL, Op.IMAG, Op.CONJUGATE, Op.ANGLE,
})
# ops of the parts of complex values
COMPLEX_PARTS = frozenset({Op.REAL, Op.IMAG, Op.CONJUGATE, Op.ANGLE, Op.COMPLEX})
BINARY = frozenset({
    Op.ADD, Op.SUBTRACT, Op.MULTIPLY, Op.TRUE_DIVIDE, Op.FLOOR_DIVIDE, Op.REMAINDER, Op.FMOD,
    Op.POWER, Op.ARCTAN2, Op.HYPOT, Op.COPYSIGN, Op.LOGADDEXP, Op.LOGADDEXP2, Op.HEAVISIDE,
    Op.MAXIMUM, Op.MINIMUM, Op.FMAX, Op.FMIN, Op.EQUAL, Op.NOT_EQUAL, Op.LESS, Op.LESS_EQUAL,
    Op.GREATER, Op.GREATER_EQUAL, Op.LOGICAL_AND, Op.LOGICAL_OR, Op.LOGICAL_XOR, Op.BITWISE_AND,
    Op.BITWISE_OR, Op.BITWISE_XOR, Op.LEFT_SHIFT, Op.RIGHT_SHIFT, Op.GCD, Op.LCM, Op.LDEXP,
    Op.COMPLEX,
})
TERNARY = frozenset({Op.WHERE})
ELEMENTWISE = UNARY | BINARY | TERNARY
REDUCE = frozenset({Op.SUM, Op.PROD, Op.MAX, Op.MIN, Op.ANY, Op.ALL, Op.ARGMAX, Op.ARGMIN})
SCAN = frozenset({Op.CUMSUM, Op.CUMPROD, Op.CUMMAX, Op.CUMMIN})
# the NumPy ufunc a scan accumulates with
SCAN_UFUNC: dict[Op, str] = {Op.CUMSUM: "add", Op.CUMPROD: "multiply", Op.CUMMAX: "maximum",
                             Op.CUMMIN: "minimum"}
MOVEMENT = frozenset({Op.BROADCAST, Op.RESHAPE, Op.PERMUTE, Op.SLICE, Op.PAD, Op.GATHER})
CONTRACTION = frozenset({Op.MATMUL})
# elementwise over their last input, reading their first (a sorted table) whole: fused as
# elementwise ops are, the table always a kernel input
LOOKUP = frozenset({Op.SEARCHSORTED})
# random bits: pointwise producers (of their position and the seed input), never folded or merged
RANDOM = frozenset({Op.RANDOM})

# Relative cost of one application, in "flops", for the roofline model (special functions weighted).
FLOP_WEIGHT: dict[Op, float] = {
    **{op: 1.0 for op in ELEMENTWISE},
    **{op: 8.0 for op in (Op.EXP, Op.EXP2, Op.LOG, Op.LOG2, Op.LOG10, Op.LOG1P, Op.EXPM1, Op.SIN,
                          Op.COS, Op.TAN, Op.ARCSIN, Op.ARCCOS, Op.ARCTAN, Op.SINH, Op.COSH,
                          Op.TANH, Op.ARCTAN2, Op.HYPOT, Op.CBRT, Op.POWER, Op.ARCSINH,
                          Op.ARCCOSH, Op.ARCTANH, Op.LOGADDEXP, Op.LOGADDEXP2, Op.ANGLE)},
    Op.SQRT: 4.0, Op.TRUE_DIVIDE: 4.0, Op.RECIPROCAL: 4.0, Op.FLOOR_DIVIDE: 8.0, Op.REMAINDER: 8.0,
    Op.FMOD: 8.0, Op.GCD: 8.0, Op.LCM: 8.0,     # gcd/lcm: a loop of remainders, weighted as one
    Op.LDEXP: 4.0,                              # a clamp and a few multiplies by powers of two
    Op.CAST: 0.0, Op.POSITIVE: 0.0, Op.REAL: 0.0, Op.IMAG: 0.0,
    **{op: 1.0 for op in REDUCE | SCAN},
    **{op: 0.0 for op in MOVEMENT | LEAF},
    Op.SCATTER: 1.0,
    Op.SEARCHSORTED: 16.0,      # ~log2(table) compares and loads
    Op.RANDOM: 40.0,            # ten Philox rounds of two 32x32-bit products and xors
}


BY_UFUNC: dict[str, Op] = {op.value: op for op in (UNARY | BINARY)
                           if op is not Op.CAST and isinstance(getattr(np, op.value, None), np.ufunc)}
BY_UFUNC["true_divide"] = Op.TRUE_DIVIDE
BY_UFUNC["abs"] = Op.ABSOLUTE
