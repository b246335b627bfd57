"""A float argmax/argmin over a row in chunks (CPU emitter): NumPy's first-maximum scan is a branch
per element that LLVM does not vectorise. The row runs in chunks of ``CHUNK`` elements, each
reduced to its best *key* (an integer max LLVM vectorises), and only a chunk whose key beats the
running one (strictly: the first of equal chunks stays) is remembered; the elements after the
last whole chunk are scanned one by one; then, where the best came from a chunk, that chunk's
first element of the best key is found (a select and a min, vectorised). One pass over the row,
32 elements searched again.

The keys order the values as NumPy's argmax scan compares them: an integer in the float's order
with -0.0 and +0.0 equal (sign and magnitude made two's complement), every NaN above everything
(the first NaN wins); an argmin's keys are the negated ones (NaN still above). So the least
index holding the greatest key is NumPy's answer.

Taken for a phase whose loop is one inner dim, not split, with that one accumulator and no other
work (scans, staged rows, stores): its statements are pure and run again in the searched chunk.
Loads index the row through ``np.uint64`` (the emitter's ``chunked`` variable): a signed index
Numba may wrap made LLVM gather the elements (argmax of 8192x257 float32, one thread, side by
side with NumPy's 0.51 ms: 1.53 ms in blocks of 256 with gathers, 0.65 without, 0.37 in chunks).
"""
from __future__ import annotations

from . import kernel_ir as K

# elements a chunk: 32 vectorised as whole vectors (16 was unrolled by LLVM into scalar code,
# 3.0 ms for the 8192x257 float32 argmax; 64: 0.39 ms, 32: 0.37)
CHUNK = 32

_KEY = '''
@numba.njit(error_model="numpy")
def _akey{kind}_{T}(x):
    """The {kind} key of a {T}: an {I} in the value's order{neg} (-0.0 equal to +0.0), NaN greatest."""
    u = np.{T}(x).view(np.{I})
    mag = np.{I}(u & np.{I}({mask}))
    s = np.{I}(u >> np.{I}({bits}))
    k = np.{I}(np.{I}(mag ^ s) - s)
    return np.{I}({top}) if mag > np.{I}({inf}) else np.{I}({sign}k)
'''
_INFS = {"float32": 0x7f800000, "float64": 0x7ff0000000000000}      # +inf's bits
SOURCES: dict[str, tuple] = {}
for _T, _I, _B, _INF in (("float32", "int32", 31, _INFS["float32"]), ("float64", "int64", 63, _INFS["float64"])):
    for _kind, _neg, _sign in (("max", "", ""), ("min", " reversed", "-")):
        SOURCES[f"_akey{_kind}_{_T}"] = (_KEY.format(
            kind=_kind, T=_T, I=_I, bits=_B, mask=hex((1 << _B) - 1), top=hex((1 << _B) - 1), inf=hex(_INF),
            neg=_neg, sign=_sign).strip("\n"), ())
del _T, _I, _B, _INF, _kind, _neg, _sign


def eligible(ph: K.Phase, inner: list, sched) -> bool:
    if len(inner) != 1 or sched.split == inner[0] or len(ph.accs) != 1:
        return False
    acc = ph.accs[0]
    return (acc.kind in ("argmax", "argmin") and acc.mask is None and acc.src_dtype == acc.acc_dtype
            and acc.acc_dtype in ("float32", "float64")
            and all(isinstance(s, (K.Load, K.Op, K.Const, K.Index)) for s in ph.body))


def loop_lines(em, ph: K.Phase, d: int, extent, ind: int, render) -> list[str]:
    """The phase's loop (at level ``ind``, after the accumulator's init lines) in chunks; ``em``
    is the emitter (its helpers and ``chunked`` index), ``render(s)`` a body statement's line."""
    acc = ph.accs[0]
    dt = acc.acc_dtype
    key = em.use(f"_akey{acc.kind[3:]}_{dt}")
    it = "int32" if dt == "float32" else "int64"
    low = f"np.{it}({-_INFS[dt] - 1})"                  # below every key (-inf's is -_INFS)
    s, i, n, C = acc.src, f"i{d}", acc.dst, CHUNK
    was, em.chunked = em.chunked, i                      # loads index the row through np.uint64(i)
    try:
        body = [render(x) for x in ph.body]
    finally:
        em.chunked = was
    lines = [f"bk_{n} = {low}", f"bc_{n} = np.int64(0)", f"nf_{n} = ({extent}) // {C} * {C}",
             f"for c_{n} in range(0, nf_{n}, {C}):", f"    m_{n} = {low}",
             f"    for j_{n} in range({C}):", f"        {i} = c_{n} + j_{n}"]
    lines += ["        " + x for x in body] + [f"        m_{n} = max(m_{n}, {key}({s}))"]
    lines += [f"    if m_{n} > bk_{n}:", f"        bk_{n} = m_{n}", f"        bc_{n} = c_{n}",
              f"pos_{n} = np.int64(-1)",
              f"for {i} in range(nf_{n}, {extent}):"]    # the last elements, one by one
    lines += ["    " + x for x in body]
    lines += [f"    k_{n} = {key}({s})", f"    if k_{n} > bk_{n}:", f"        bk_{n} = k_{n}",
              f"        pos_{n} = np.int64({acc.pos})"]
    # the best chunk's first element of the best key: the least index holding it (a select and a
    # min LLVM vectorises; an early-exit scan was a branch an element)
    lines += [f"if pos_{n} < 0:", f"    f_{n} = np.int64({C})", f"    for j_{n} in range({C}):",
              f"        {i} = bc_{n} + j_{n}"]
    lines += ["        " + x for x in body]
    lines += [f"        f_{n} = min(f_{n}, j_{n} if {key}({s}) == bk_{n} else np.int64({C}))",
              f"    {i} = bc_{n} + f_{n}", f"    pos_{n} = np.int64({acc.pos})"]
    return ["    " * ind + x for x in lines]
