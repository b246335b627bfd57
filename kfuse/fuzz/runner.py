"""Run one fuzz program through ``kfuse.jit`` and through NumPy, and classify the outcome.

Outcomes: ``ok``; ``mismatch`` (dtype, shape, values or signed zeros differ, per the tolerance
table; or kfuse changed an input); ``crash`` (kfuse raised where NumPy did not, raised another
exception type than NumPy, or returned where NumPy raised); ``unsupported``
(:class:`kfuse.UnsupportedError`, with the op name taken from its message).
"""
from __future__ import annotations

import dataclasses
import re
import traceback
import warnings

import numpy as np

from .compare import ZERO_SIGN_UNSPECIFIED, compare, flatten_outputs
from .generator import Program

_UNSUPPORTED_RE = re.compile(r"kfuse: (.*?) (?:is|are) not supported")


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


def _to_device(backend: str):
    if backend == "cpu":
        return np, lambda a: a
    import cupy
    return cupy, lambda a: cupy.asnumpy(a) if hasattr(a, "__cuda_array_interface__") else a


def run_numpy(program: Program):
    """NumPy's result as ``(outputs, None)`` or ``(None, exception)``."""
    fn = program.function()
    args = program.inputs_arrays()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                return fn(*args), None
            except Exception as e:      # noqa: BLE001 - any NumPy error is an expected outcome
                return None, e


def _loosest_float(program: Program):
    """The least precise float dtype among the program's inputs and intermediates (NumPy)."""
    env = {i.name: i.build() for i in program.inputs}
    dts = [a.dtype for a in env.values()]
    try:
        for st in program.steps:
            env[st.out] = np.asarray(st.run(env))
            dts.append(env[st.out].dtype)
    except Exception:       # noqa: BLE001
        pass
    floats = [d for d in dts if d.kind == "f"]
    return min(floats, key=lambda d: d.itemsize) if floats else None


def run_program(program: Program, backend: str = "cpu") -> Result:
    import kfuse
    from kfuse.errors import UnsupportedError

    expected, np_exc = run_numpy(program)
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
    red = program.has_reduction()
    zs = not (program.ops() & ZERO_SIGN_UNSPECIFIED)
    loosest = None
    for i, (a, e) in enumerate(zip(outs_a, outs_e)):
        a = to_host(a)
        why = compare(a, e, reductions=red, zero_sign=zs)
        if why and np.asarray(a).dtype == np.asarray(e).dtype and np.asarray(a).shape == np.shape(e):
            # a float64 output computed from float32/float16 intermediates carries their
            # rounding: compare at the least precise float dtype the program went through
            loosest = loosest or _loosest_float(program)
            if loosest is not None and np.asarray(e).dtype.kind == "f" \
                    and loosest.itemsize < np.asarray(e).dtype.itemsize:
                with np.errstate(all="ignore"):
                    why = compare(np.asarray(a).astype(loosest), np.asarray(e).astype(loosest),
                                  reductions=red, zero_sign=zs)
        if why:
            return Result("mismatch", f"output {i}: {why}")
    for spec, b, a in zip(program.inputs, before, args):
        if not np.array_equal(b, to_host(a), equal_nan=True):
            return Result("mismatch", f"kfuse modified input {spec.name}")
    return Result("ok")
