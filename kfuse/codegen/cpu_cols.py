"""The ``cols`` loop order of a CPU reduce kernel (:mod:`kfuse.codegen.cpu_schedule`).

The kept dim ``col`` (the main operand's contiguous axis) is cut into blocks of ``cb`` columns
(``cb`` a run-time argument after the sizes); the parallel loop runs over (first other kept dim x
blocks). Inside, per phase: the reduced dims loop outside and the block's columns inside, each
column with its own accumulator in a small array (``cacc_*``, in the accumulation dtype of the
rows order: float64 for float16/float32 sums), so the innermost loop is unit-stride and LLVM
vectorises it across columns without reassociating anything: every column adds its terms one by
one in the reduced dims' C order (NumPy's own order for a leading axis of a C-contiguous array).
Each column loop runs ``j`` from 0 over the block, its column ``i<col> = c0 + j``. A float64 sum of
float32 values computed by a vectorised helper adds them in a column loop of its own
(:func:`_wide_sums`).
Outer-level values (a phase's ``pre`` statements, accumulator results) are computed in a loop
over the block's columns and kept in column arrays (``col_*``) for the loops that read them.
The first phase's statements per column and the later phases' run in the same order as in rows.
"""
from __future__ import annotations

from . import kernel_ir as K


def _vtype(dtype: str) -> str:
    if dtype == "bool":
        return "np.bool_"
    return "np.float32" if dtype == "float16" else f"np.{dtype}"


def _defs(stmts) -> dict:
    """Variable -> NumPy type name of the values ``stmts`` define."""
    out = {}
    for s in stmts:
        if isinstance(s, (K.Index, K.Search)):
            out[s.dst] = "np.int64"
        elif isinstance(s, (K.Load, K.Const, K.Op)):
            out[s.dst] = _vtype(s.dtype)
    return out


def _reads(stmts, accs=()) -> set:
    r = set()
    for s in stmts:
        r.update(K.stmt_reads(s))
        if isinstance(s, K.Store):
            r.add(s.src)
    for a in accs:
        r.update(x for x in (a.src, a.mask) if x)
        if a.pos is not None:
            r.update(K.expr_vars(a.pos))
    return r


def function(em, sched) -> list[str]:
    """The kernel function's lines in the ``cols`` order (``em``: the :class:`_Emitter`)."""
    kir = em.kir
    c = sched.col
    params = [f"in{k}" for k in range(len(kir.inputs))] + \
             [f"out{k}" for k in range(len(kir.outputs))] + [p.name for p in kir.sizes] + ["cb"]
    lines = [f"def kfuse_kernel({', '.join(params)}):", em.docstring(sched)] + em.scalar_reads()
    others = [d for d in kir.loop_dims(kir.outer) if d != c]
    inner = kir.loop_dims(kir.inner)
    n0 = str(kir.domain[others[0]]) if others else "1"
    lines += [f"    nblk = ({kir.domain[c]} + cb - 1) // cb",
              f"    for t in numba.prange({n0} * nblk):"]
    ind = 2
    if others:
        lines.append("    " * ind + f"i{others[0]} = t // nblk")
    # c0 >= 0 and a 0-based loop over the block let LLVM drop Numba's negative-index fix-up,
    # which kept the column loop scalar (a 16384x512 f32 column sum: 7.1 -> 0.9 ms)
    lines += ["    " * ind + "c0 = max((t % nblk) * cb, 0)",
              "    " * ind + f"nb = min(c0 + cb, {kir.domain[c]}) - c0"]

    outer_types, seg_defs, seg_reads, kept = segments(kir)
    accs = [a for ph in kir.phases for a in ph.accs]
    lines += ["    " * ind + f"col_{v} = np.empty(cb, {outer_types[v]})" for v in kept]
    for a in accs:
        lines.append("    " * ind + f"cacc_{a.dst} = np.empty(cb, np.{_acc_store_type(a)})")
        if any(a in _wide_sums(em, ph) for ph in kir.phases):
            lines.append("    " * ind + f"csrc_{a.dst} = np.empty(cb, {_vtype(a.src_dtype)})")
        if a.kind in ("argmax", "argmin"):
            lines.append("    " * ind + f"cpos_{a.dst} = np.empty(cb, np.int64)")
    for d in others[1:]:
        lines.append("    " * ind + f"for i{d} in range({kir.domain[d]}):")
        ind += 1

    kept_set = set(kept)
    seg = 0
    stage, reread = _staged_in_output(em)

    def loop(level, body, reads, defs):
        return column_loop(level, body, reads, defs, kept_set, c)
    prev_accs = ()
    for ph in kir.phases:
        head = [x for a in prev_accs for x in _load_acc(a) + em.acc_lines(a, "result")]
        lines += loop(ind, head + [em.stmt(s) for s in ph.pre], seg_reads[seg], seg_defs[seg])
        seg += 1
        if not ph.has_loop:
            prev_accs = ()
            continue
        lines += loop(ind, [x for a in ph.accs for x in em.acc_lines(a, "init") + _save_acc(a)], set(), set())
        j = ind
        for d in inner:
            lines.append("    " * j + f"for i{d} in range({kir.domain[d]}):")
            j += 1
        wide = _wide_sums(em, ph)
        lines += loop(j, _body(em, ph, wide, stage, reread), seg_reads[seg], seg_defs[seg])
        lines += loop(j, wide_combine(em, wide), set(), set())
        seg += 1
        prev_accs = ph.accs
    if prev_accs:
        lines += loop(ind, [x for a in prev_accs for x in _load_acc(a) + em.acc_lines(a, "result")],
                      set(), seg_defs[seg])
    return lines


def segments(kir: K.KernelIR) -> tuple:
    """``(types, defs, reads, kept)``: the NumPy type of each outer-level value; per segment (the
    column loop before each phase's reduction loop, holding the previous phase's results and this
    phase's pre; each reduction loop; the last column loop) the values it defines and reads; and
    the values one segment defines and a later one reads, kept in column arrays between them."""
    types: dict = {}
    for ph in kir.phases:
        types.update(_defs(ph.pre))
        for a in ph.accs:
            types[a.dst] = _vtype(a.dtype) if a.kind not in ("argmax", "argmin") else "np.int64"
    defs, reads = [], []
    prev: tuple = ()
    for ph in kir.phases:
        defs.append(set(_defs(ph.pre)) | {a.dst for a in prev})
        reads.append(_reads(ph.pre))
        if ph.has_loop:
            defs.append(set())
            reads.append(_reads(ph.body, ph.accs))
            prev = ph.accs
        else:
            prev = ()
    if prev:
        defs.append({a.dst for a in prev})
        reads.append(set())
    kept = sorted(dict.fromkeys(v for k, r in enumerate(reads) for v in r if v in types and v not in defs[k]))
    return types, defs, reads, kept


def column_loop(level: int, body: list, reads: set, defs: set, kept: set, c: int, at: str = "j") -> list[str]:
    """``body`` in a loop over the block's columns (``i<c> = c0 + j``), the kept values it reads
    loaded from their column arrays (``col_v[at]``) and those it defines stored there."""
    if not body and not defs & kept:
        return []
    pad = "    " * level
    out = [pad + "for j in range(nb):", pad + f"    i{c} = c0 + j"]
    out += [pad + f"    {v} = col_{v}[{at}]" for v in sorted(reads & kept - defs)]
    out += [pad + "    " + x for x in body]
    out += [pad + f"    col_{v}[{at}] = {v}" for v in sorted(defs & kept)]
    return out


def wide_combine(em, wide: list, at: str = "j") -> list[str]:
    """The additions of the ``wide`` sums (:func:`_wide_sums`) for one column, from ``csrc_*``."""
    return [x for a in wide for x in _load_acc(a, at) + [f"{a.src} = csrc_{a.dst}[j]"]
            + em.acc_lines(a, "combine") + _save_acc(a, at)]


def _body(em, ph: K.Phase, wide: list, stage: dict, reread: dict, at: str = "j") -> list[str]:
    """A phase's statements and accumulator combines for one column (``wide`` sums: their
    summands kept in ``csrc_*`` for a loop of their own; ``stage``/``reread``: a value stored
    into or read back from the output, :func:`_staged_in_output`; ``at``: the accumulators'
    subscript in their column arrays)."""
    narrow = [a for a in ph.accs if a not in wide]
    out = [x for a in narrow for x in _load_acc(a, at)]
    for s in ph.body:
        if getattr(s, "dst", None) in reread:       # (staged by an earlier phase)
            out.append(f"{s.dst} = {reread[s.dst]}")
            continue
        out.append(em.stmt(s))
        if getattr(s, "dst", None) in stage:
            out.append(f"{stage[s.dst]} = {s.dst}")
    for a in narrow:
        out += em.acc_lines(a, "combine") + _save_acc(a, at)
    return out + [f"csrc_{a.dst}[j] = {a.src}" for a in wide]


def _staged_in_output(em) -> tuple[dict, dict]:
    """``({var: ref}, {var: ref})``: a float32 value computed by a vectorised helper in a loop
    phase that the last loop phase computes again, stored by the first into the output element
    the last phase writes (``ref``, ``out<k>[index]``) and read back there (a column softmax's
    ``exp(x - max)``: one exp per element, not two, without a scratch block the size of the
    output). Only where that phase's one store writes a float32 output nothing else writes, at
    an index of loop variables, and no output may be an input's buffer."""
    kir = em.kir
    loops = [ph for ph in kir.phases if ph.has_loop]
    if kir.in_place or kir.init_from or len(loops) < 2:
        return {}, {}
    last = loops[-1]
    stores = [s for ph in kir.phases for s in ph.pre + ph.body if isinstance(s, K.Store)]
    if len(stores) != 1 or stores[0] not in last.body or stores[0].combine or K.gathers(stores[0].index) \
            or kir.outputs[stores[0].buf].dtype != "float32":
        return {}, {}
    ref = f"out{stores[0].buf}[{em.index(stores[0].index)}]"
    keys = K.value_keys(last.body)
    wanted = {keys[s.dst]: s.dst for s in last.body
              if isinstance(s, K.Op) and s.dtype == "float32" and em.vector_helper(s.op, s.dtype)}
    for ph in loops[:-1]:
        for dst, key in K.value_keys(ph.body).items():
            if key in wanted:
                return {dst: ref}, {wanted[key]: ref}
    return {}, {}


def _wide_sums(em, ph: K.Phase) -> list:
    """The float sums of phase ``ph`` that accumulate float32 summands in float64, where its
    column loop calls a vectorised float32 helper (``exp``...): their additions run in a column
    loop of their own over the summands kept in ``csrc_*``, so that the helper's loop vectorises
    at float32 width (a 2048x1024 column softmax's exp-and-sum pass: 1.62 -> 0.87 ms on one
    thread). The additions, and so the sums, are the same."""
    if not any(isinstance(s, K.Op) and em.vector_helper(s.op, s.dtype) for s in ph.body):
        return []
    return [a for a in ph.accs if a.kind == "sum" and a.mask is None and a.acc_dtype == "float64"
            and a.src_dtype in ("float32", "float16")]


def _acc_store_type(a: K.Acc) -> str:
    vt = "float32" if a.acc_dtype == "float16" else a.acc_dtype
    return "bool_" if vt == "bool" else vt


def _load_acc(a: K.Acc, at: str = "j") -> list[str]:
    out = [f"acc_{a.dst} = cacc_{a.dst}[{at}]"]
    if a.kind in ("argmax", "argmin"):
        out.append(f"pos_{a.dst} = cpos_{a.dst}[{at}]")
    return out


def _save_acc(a: K.Acc, at: str = "j") -> list[str]:
    out = [f"cacc_{a.dst}[{at}] = acc_{a.dst}"]
    if a.kind in ("argmax", "argmin"):
        out.append(f"cpos_{a.dst}[{at}] = pos_{a.dst}")
    return out
