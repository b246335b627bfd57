"""Run one fuzz program through ``kfuse.jit`` and through NumPy, and classify the outcome.

Outcomes: ``ok``; ``mismatch`` (dtype, shape, values or signed zeros differ, per the tolerance
table, in an output or in an argument the program writes; or kfuse changed an input NumPy left
alone); ``crash`` (kfuse raised where NumPy did not, raised another exception type than NumPy, or
returned where NumPy raised); ``unsupported`` (:class:`kfuse.UnsupportedError`, with the op name
taken from its message; also a program whose writes to a repeated position land in C order only,
:meth:`Program.cpu_only`, on a GPU backend).
"""
from __future__ import annotations

import dataclasses
import re
import traceback
import warnings

import numpy as np

from ..ir.dtypes import real_dtype

from .compare import ATOMIC_ROUNDING, ATOMIC_ZERO_SIGN, ZERO_SIGN_UNSPECIFIED, compare, flatten_outputs
from .generator import Program

# "kfuse: np.dot of arrays with more than 2 dimensions is not supported ...", and the numba-cuda
# backend's refusal of a ufunc.at combine: "kfuse: np.multiply.at into a float32 array has no exact
# atomic on the numba-cuda backend ..."
_UNSUPPORTED_RE = re.compile(r"kfuse: (.*?) (?:(?:is|are) not supported|has no exact atomic)")


@dataclasses.dataclass
class Result:
    status: str                   # ok | mismatch | crash | unsupported
    detail: str = ""
    op: str | None = None         # unsupported: the op's name
    exc_type: str | None = None   # crash: the exception kfuse raised (or "returned")

    @property
    def signature(self) -> tuple:
        """What must stay the same while shrinking."""
        if self.status == "crash":
            return (self.status, self.exc_type)
        return (self.status,)

    @property
    def failed(self) -> bool:
        return self.status in ("mismatch", "crash")


def unsupported_name(exc: BaseException) -> str:
    msg = str(exc)
    m = _UNSUPPORTED_RE.search(msg)
    name = m.group(1) if m else msg.splitlines()[0][:60]
    return re.sub(r"\s*\(at [^)]*\)", "", name).strip()


def _on_host(backend) -> bool:
    from kfuse import backends
    return backends.get(backend).on_host


def _to_device(backend: str):
    if _on_host(backend):
        return np, lambda a: a
    import cupy
    return cupy, lambda a: cupy.asnumpy(a) if hasattr(a, "__cuda_array_interface__") else a


def run_numpy(program: Program):
    """NumPy's result as ``(outputs, None)`` or ``(None, exception)``."""
    return numpy_call(program)[:2]


def numpy_call(program: Program):
    """``(outputs, exception, arguments)``: NumPy's result (one of the first two is None) and the
    argument arrays after the call (a program may write into them)."""
    fn = program.function()
    args = program.inputs_arrays()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                return fn(*args), None, args
            except Exception as e:      # noqa: BLE001 - any NumPy error is an expected outcome
                return None, e, args


def comparison(program: Program, backend: str) -> tuple[bool, bool]:
    """``(reductions, zero_sign)`` for comparing ``program``'s results from ``backend``: a sum's
    tolerance for reductions, contractions and scans, and on a GPU for float ``ufunc.at`` sums and
    products (atomics' order); zero signs unless an op leaves them open (on a GPU also
    ``maximum.at``/``minimum.at``: the last of +0.0 and -0.0 to run stays)."""
    ops = program.ops()
    gpu = not _on_host(backend)
    reductions = program.has_reduction() or (gpu and bool(ops & ATOMIC_ROUNDING))
    zero_sign = not (ops & ZERO_SIGN_UNSPECIFIED or (gpu and ops & ATOMIC_ZERO_SIGN))
    return reductions, zero_sign


def _loosest_float(program: Program):
    """The least precise float dtype among the program's inputs and intermediates (NumPy); a
    complex one counts as its parts' (complex64: float32)."""
    env = {i.name: i.build() for i in program.inputs}
    dts = [a.dtype for a in env.values()]
    try:
        for st in program.steps:
            env[st.out] = np.asarray(st.run(env))
            dts.append(env[st.out].dtype)
    except Exception:       # noqa: BLE001
        pass
    for st in program.steps:        # an accumulate dtype a step names (dtype=np.complex64)
        dts += [np.dtype(n) for n in re.findall(r"dtype=np\.(float16|float32|complex64)\b", st.expr)]
    floats = [real_dtype(d) for d in dts if d.kind in "fc"]
    return min(floats, key=lambda d: d.itemsize) if floats else None


def run_program(program: Program, backend: str = "cpu") -> Result:
    import kfuse
    from kfuse.errors import UnsupportedError

    if not _on_host(backend) and program.cpu_only():
        return Result("unsupported", "writes to a repeated position land in C order on the CPU only",
                      op="repeated scatter positions (CPU only)")
    expected, np_exc, expected_args = numpy_call(program)
    xp, to_host = _to_device(backend)
    args = program.inputs_arrays(xp)
    before = [np.array(to_host(a), copy=True) for a in args]
    fn = program.function()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = kfuse.jit(fn, backend=backend)(*args)
    except UnsupportedError as e:
        if np_exc is not None and isinstance(e, type(np_exc)):
            return Result("ok")
        return Result("unsupported", str(e), op=unsupported_name(e))
    except Exception as e:              # noqa: BLE001 - classify everything
        if np_exc is not None and isinstance(e, type(np_exc)):
            return Result("ok")
        what = (f"NumPy raised {type(np_exc).__name__}: {np_exc}; kfuse raised "
                if np_exc is not None else "kfuse raised ")
        tb = traceback.format_exc(limit=-4)
        return Result("crash", f"{what}{type(e).__name__}: {e}\n{tb}", exc_type=type(e).__name__)
    if np_exc is not None:
        return Result("crash", f"NumPy raised {type(np_exc).__name__}: {np_exc}; kfuse returned "
                      f"{actual!r}", exc_type="returned")
    outs_a = flatten_outputs(actual)
    outs_e = flatten_outputs(expected)
    if len(outs_a) != len(outs_e):
        return Result("mismatch", f"{len(outs_a)} outputs, NumPy has {len(outs_e)}")
    red, zs = comparison(program, backend)
    for i, (a, e) in enumerate(zip(outs_a, outs_e)):
        why = _compare_value(program, to_host(a), e, red, zs)
        if why:
            return Result("mismatch", f"output {i}: {why}")
    for spec, b, a, e in zip(program.inputs, before, args, expected_args):
        a = to_host(a)
        if np.array_equal(b, e, equal_nan=True):        # NumPy left it alone: so must kfuse
            if not np.array_equal(b, a, equal_nan=True):
                return Result("mismatch", f"kfuse modified input {spec.name}")
            continue
        why = _compare_value(program, a, e, red, zs)
        if why:
            return Result("mismatch", f"argument {spec.name} after the call: {why}")
    return Result("ok")


def _compare_value(program: Program, a, e, red: bool, zs: bool) -> str | None:
    """Why kfuse's value ``a`` differs from NumPy's ``e`` (an output, or an argument written)."""
    why = compare(a, e, reductions=red, zero_sign=zs)
    if why and np.asarray(a).dtype == np.asarray(e).dtype and np.asarray(a).shape == np.shape(e):
        # a float64 value computed from float32/float16 intermediates carries their rounding:
        # compare at the least precise float dtype the program went through
        loosest, edt = _loosest_float(program), np.asarray(e).dtype
        if loosest is not None and edt.kind in "fc" and loosest.itemsize < real_dtype(edt).itemsize:
            # (a complex value at the complex dtype of those parts: float16 and float32 -> complex64)
            to = loosest if edt.kind == "f" else np.result_type(loosest, np.complex64)
            with np.errstate(all="ignore"):
                why = compare(np.asarray(a).astype(to), np.asarray(e).astype(to),
                              reductions=red, zero_sign=zs)
    return why
