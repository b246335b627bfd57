"""A row's maximum and its sum of exponentials in one pass (the online softmax): a pure rewrite of
a reduce kernel's phases, for row schedules that read their rows from memory again in every pass
(rows too long to hold on chip: a 32000-wide vocabulary row is 125 KiB of float32).

Lowering gives ``m = max(y)`` and ``s = sum(exp(y - m))`` a pass each, the second reading the row
again because every term needs the final ``m``. With a running maximum ``m'`` the sum can start
before ``m`` is known: each term is ``exp(y - m')`` and, when the maximum grows from ``m'`` to
``m''``, the sum so far is scaled by ``exp(m' - m'')`` (Milakov and Gimelshein, 2018). Two partial
states combine the same way, so threads and warps merge theirs as a tree like any accumulator.
The one accumulator of kind ``maxsumexp`` (``Acc.peer``: the maximum's variable, defined with the
sum when the row is finished) replaces the two; the row is read once for both (a logsumexp, a
cross-entropy's normaliser; a softmax then reads it once more to write it, two passes, not three).

The partial sums are float32 (a thread's few hundred terms, then a tree), where a float32 sum's
accumulator is float64 elsewhere: a float64 add and conversion a term cost more than the pass
saves. The maximum itself is exact (the same comparisons in another order). Each term is rounded once more
than NumPy's (``exp(y - m')`` times ``exp(m' - m)`` against ``exp(y - m)``): a few float32 ulps a
term (the CUDA C emitter takes each exponential from the hardware's ``ex2.approx``: a few more,
``cuda_ops``' ``kf_mse_exp``), inside the float32 reduction tolerance (``kfuse/testing.py``). Non-finite rows keep NumPy's
results: a NaN in the row makes the maximum and the sum NaN; an infinity's own term is
``exp(inf - inf)``, NaN, as NumPy's; a row of -inf sums ``exp(-inf - -inf)``, NaN, as NumPy's.
Only float32 values with a float32 maximum are rewritten, the terms exactly ``exp(y - m)`` with
nothing else reading ``m`` in the sum's pass; everything else is left as it is.
"""
from __future__ import annotations

import dataclasses

from . import kernel_ir as K

F32 = "float32"


def online_max_sum(kir: K.KernelIR) -> K.KernelIR:
    """``kir`` with every rewritable (max, sum of exp) pair of consecutive phases in one phase."""
    return K.phases_fixpoint(kir, _fold_one)


def _fold_one(kir: K.KernelIR):
    if any(isinstance(s, (K.Store, K.Scan)) for ph in kir.phases for s in ph.body if ph.accs):
        return None
    for b in range(1, len(kir.phases)):
        pa, pb = kir.phases[b - 1], kir.phases[b]
        for mx in pa.accs:
            if mx.kind != "max" or mx.mask is not None or mx.acc_dtype != F32 or mx.src_dtype != F32:
                continue
            found = _sum_of_exp(pa, pb, mx)
            if found is not None:
                return kir.phases[:b - 1] + (_merged(pa, pb, mx, *found),) + kir.phases[b + 1:]
    return None


def _sum_of_exp(pa: K.Phase, pb: K.Phase, mx: K.Acc):
    """``(the sum accumulator, the statements computing its terms)`` where ``pb`` sums
    ``exp(y - m)`` (``y`` the value ``mx`` maximises, ``m`` its result) and nothing else in ``pb``
    reads ``m``; else None."""
    m = mx.dst
    produced = {a.dst for a in pa.accs}     # finished after the joined loop: nothing in it may read them
    key_y = K.value_keys(pa.body).get(mx.src)
    defs = {s.dst: s for s in pb.body if hasattr(s, "dst")}
    keys_b = K.value_keys(pb.body)
    for sm in pb.accs:
        if sm.kind != "sum" or sm.mask is not None or sm.src_dtype != F32 or sm.acc_dtype not in (F32, "float64"):
            continue
        e = defs.get(sm.src)
        d = defs.get(e.args[0]) if isinstance(e, K.Op) and e.op == "exp" and e.dtype == F32 else None
        if not (isinstance(d, K.Op) and d.op == "subtract" and d.dtype == F32 and d.arg_dtypes == (F32, F32)
                and d.args[1] == m and key_y is not None and keys_b.get(d.args[0]) == key_y):
            continue
        chain = {e.dst, d.dst}
        others = [s for s in pb.pre + pb.body if getattr(s, "dst", None) not in chain]
        if any(n in chain or n in produced for s in others for n in K.stmt_reads(s)):
            continue
        if any(a is not sm and ({a.src, a.mask} & (chain | produced)) for a in pb.accs):
            continue
        return sm, chain
    return None


def _merged(pa: K.Phase, pb: K.Phase, mx: K.Acc, sm: K.Acc, chain: set) -> K.Phase:
    """One phase: ``pa``'s and ``pb``'s statements (less the terms' chain) and accumulators, the
    pair ``mx``/``sm`` as one ``maxsumexp`` accumulator of ``mx``'s values."""
    pair = dataclasses.replace(sm, kind="maxsumexp", src=mx.src, src_dtype=F32, peer=mx.dst)
    accs = tuple(pair if a is mx else a for a in pa.accs) + tuple(a for a in pb.accs if a is not sm)
    body = pa.body + tuple(s for s in pb.body if getattr(s, "dst", None) not in chain)
    return K.Phase(pa.pre + pb.pre, accs, body)
