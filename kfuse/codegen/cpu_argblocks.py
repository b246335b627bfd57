"""A float argmax/argmin over a row in blocks (CPU emitter): NumPy's first-maximum scan is a branch
per element that LLVM does not vectorise. Each block of ``BLOCK`` elements first takes its maximum
(minimum) as an integer max over order-preserving keys and a NaN flag, loops LLVM vectorises;
only a block whose best value beats the running value (strictly, as floats; or holds a NaN while
the running value is none) changes it, and NumPy's scan would stop there at the block's first
element equal to that value (its first NaN): that element is found and the scan goes on. The keys
order every float as ``>`` does (-0.0 below +0.0, equal as floats), so the result is the scan's.

Taken for a phase whose loop is one inner dim, not split, with that one accumulator and no other
work (scans, staged rows, stores): its statements are pure and run again in a rescanned block."""
from __future__ import annotations

import numpy as np

from . import kernel_ir as K

BLOCK = 256


def eligible(ph: K.Phase, inner: list, sched) -> bool:
    if len(inner) != 1 or sched.split == inner[0] or len(ph.accs) != 1:
        return False
    acc = ph.accs[0]
    return (acc.kind in ("argmax", "argmin") and acc.mask is None and acc.src_dtype == acc.acc_dtype
            and acc.acc_dtype in ("float32", "float64")
            and all(isinstance(s, (K.Load, K.Op, K.Const, K.Index)) for s in ph.body))


def loop_lines(em, ph: K.Phase, d: int, extent, ind: int, render) -> list[str]:
    """The phase's loop (at level ``ind``, after the accumulator's init lines) in blocks; ``em``
    is the emitter (its helpers), ``render(s)`` a body statement's line."""
    acc = ph.accs[0]
    dt = acc.acc_dtype
    key, val = em.use("_fkey_" + dt), em.use("_fval_" + dt)
    it = "int32" if dt == "float32" else "int64"
    cmp, start = (">", np.iinfo(it).min) if acc.kind == "argmax" else ("<", np.iinfo(it).max)
    a, s, i, n = f"acc_{acc.dst}", acc.src, f"i{d}", acc.dst
    body = [render(x) for x in ph.body]
    first = [f"for {i} in range(b_{n}, e_{n}):"] + ["    " + x for x in body] + [
        f"    k_{n} = {key}({s})",
        f"    bk_{n} = k_{n} if k_{n} {cmp} bk_{n} else bk_{n}",
        f"    bn_{n} = np.int32(bn_{n} | np.int32({s} != {s}))"]
    # the block's best value (its first NaN where it holds one) beats the running value: the scan
    # would stop at its first element of that value (equal as floats: -0.0 and +0.0 alike), found
    # as the least index holding it, a select and a min LLVM vectorises (an early-exit scan was
    # a branch an element: argmax of 8192 rows of 257 float32 took 1.3 ms, NumPy 0.71)
    find = [f"f_{n} = e_{n}", f"for {i} in range(b_{n}, e_{n}):"] + ["    " + x for x in body] + [
        f"    h_{n} = np.bool_({s} == t_{n}) | (np.bool_({s} != {s}) & np.bool_(t_{n} != t_{n}))",
        f"    f_{n} = min(f_{n}, {i} if h_{n} else e_{n})",
        f"{i} = f_{n}", f"{a} = t_{n}", f"pos_{n} = np.int64({acc.pos})"]
    lines = [f"for b_{n} in range(0, {extent}, {BLOCK}):",
             f"    e_{n} = min(b_{n} + {BLOCK}, {extent})",
             f"    bk_{n} = np.{it}({start})", f"    bn_{n} = np.int32(0)"]
    lines += ["    " + x for x in first]
    lines += [f"    t_{n} = np.{dt}(np.nan) if bn_{n} else {val}(bk_{n})",
              f"    if (bn_{n} and {a} == {a}) or (not bn_{n} and t_{n} {cmp} {a}):"]
    lines += ["        " + x for x in find]
    return ["    " * ind + x for x in lines]
