"""The ``cols`` order with its rows in chunks, for CPU reduce kernels with few columns
(:mod:`kfuse.codegen.cpu_schedule`, ``chunks``).

The plain ``cols`` order (:mod:`kfuse.codegen.cpu_cols`) shares a kernel between threads by
column blocks; a column statistic of 512 columns (``x.sum(0)`` of 8192x512) is one block, so it
ran on one thread, and narrower blocks read every row in pieces (slower on one thread than the
whole row on one). Here the first reduced dim is also cut into chunks of ``rb`` rows (a run-time
argument after ``cb``, a function of the sizes alone: :func:`chunk_rows`), and every phase is a
``prange`` of its own:

* a loop phase runs over (column blocks x chunks): each chunk adds its rows into its own partial
  accumulators (``pacc_*[u, j]``, one row of partials a chunk, read and written through that
  row's view ``cacc_* = pacc_*[u]``), its columns inside as in ``cols``;
* the column loop after it (over blocks) combines each column's partials in chunk order, then
  computes the phase's results and the next phase's outer-level values (``col_*[t, j]``).

The summation order depends on the sizes only (rows in C order within a chunk, chunks in order),
never on the thread count, so a call gives the same bits on one thread or many. Only phases whose
accumulators combine partials exactly as they combine elements qualify (:func:`eligible`: float
and integer sums, max/min, any/all; no position, float16 sum or complex accumulator, no scan), in
kernels whose only kept loop is the column one. Where the columns alone make several blocks, the
runtime passes one chunk (``rb`` = all rows), which is the plain ``cols`` order's arithmetic.
"""
from __future__ import annotations

import dataclasses

from . import cpu_cols as C
from . import kernel_ir as K

CHUNK_ELEMENTS = 1 << 18        # elements a chunk reads (1 MiB of float32: a thread's share at 2M+)
_KINDS = ("sum", "max", "min", "any", "all")


def eligible(kir: K.KernelIR, col: int) -> bool:
    """Whether the chunked ``cols`` order can run ``kir`` with kept dim ``col`` innermost."""
    if kir.contraction is not None or [d for d in kir.loop_dims(kir.outer) if d != col]:
        return False
    if not kir.loop_dims(kir.inner):
        return False
    for ph in kir.phases:
        if K.scans(ph.body) or any(isinstance(s, K.Store) and s.combine for s in ph.body):
            return False
        for a in ph.accs:
            if a.kind not in _KINDS or a.pos is not None or a.peer is not None \
                    or (a.acc_dtype == "float16" and a.kind == "sum") or a.acc_dtype.startswith("complex"):
                return False
    return True


def chunk_rows(blocks: int, rows: int, row: int) -> int:
    """Rows of the first reduced dim (``rows`` of them) per chunk: all of them where the kept
    dim makes several column ``blocks`` (threads share the blocks), else about CHUNK_ELEMENTS
    elements (``row``: elements a row of the first reduced dim covers, the later reduced dims'
    and the block's columns)."""
    if blocks >= 2:
        return max(rows, 1)
    return max(1, CHUNK_ELEMENTS // max(row, 1))


def function(em, sched) -> list[str]:
    """The kernel function's lines (``em``: the CPU :class:`_Emitter`)."""
    kir = em.kir
    c = sched.col
    inner = kir.loop_dims(kir.inner)
    n_col, n_row = kir.domain[c], kir.domain[inner[0]]
    params = [f"in{k}" for k in range(len(kir.inputs))] + \
             [f"out{k}" for k in range(len(kir.outputs))] + [p.name for p in kir.sizes] + ["cb", "rb"]
    lines = [f"def kfuse_kernel({', '.join(params)}):", em.docstring(sched)] + em.scalar_reads()
    lines += [f"    nt = ({n_col} + cb - 1) // cb", f"    nch = ({n_row} + rb - 1) // rb"]
    types, seg_defs, seg_reads, kept = C.segments(kir)
    lines += [f"    col_{v} = np.empty((nt, cb), {types[v]})" for v in kept]
    lines += [f"    pacc_{a.dst} = np.empty((nt * nch, cb), np.{C._acc_store_type(a)})"
              for ph in kir.phases for a in ph.accs]
    kept_set = set(kept)
    stage, reread = C._staged_in_output(em)
    # c0 >= 0 (and r0 >= 0) let LLVM drop Numba's negative-index fix-ups (cpu_cols)
    block = ["c0 = max(t * cb, 0)", f"nb = min(c0 + cb, {n_col}) - c0"]

    def blocks(body: list) -> list[str]:        # a prange over the column blocks
        return ["    for t in numba.prange(nt):"] + ["        " + x for x in block + body] if body else []

    seg, prev = 0, ()
    for ph in kir.phases:
        head = [x for a in prev for x in _combined(em, a)] + [em.stmt(s) for s in ph.pre]
        lines += blocks(C.column_loop(0, head, seg_reads[seg], seg_defs[seg], kept_set, c, "t, j"))
        seg += 1
        if not ph.has_loop:
            prev = ()
            continue
        wide = C._wide_sums(em, ph)
        body = [f"csrc_{a.dst} = np.empty(cb, {C._vtype(a.src_dtype)})" for a in wide]
        # (a chunk's partials through its row's view: indexed [u, j] in the parallel variant's
        # outlined loop, two accumulators' loads and stores were not vectorised, LLVM unable to
        # tell their arrays apart: a NaN-masked column mean 1.56 -> 0.58 ms a thread)
        body += [f"cacc_{a.dst} = pacc_{a.dst}[u]" for a in ph.accs]
        body += C.column_loop(0, [x for a in ph.accs for x in em.acc_lines(a, "init") + C._save_acc(a, "j")],
                              set(), set(), kept_set, c)
        body.append(f"for i{inner[0]} in range(r0, min(r0 + rb, {n_row})):")
        ind = 1
        for d in inner[1:]:
            body.append("    " * ind + f"for i{d} in range({kir.domain[d]}):")
            ind += 1
        body += C.column_loop(ind, C._body(em, ph, wide, stage, reread, "j"), seg_reads[seg], seg_defs[seg],
                              kept_set, c, "t, j")
        body += C.column_loop(ind, C.wide_combine(em, wide, "j"), set(), set(), kept_set, c)
        lines += ["    for u in numba.prange(nt * nch):", "        t = u // nch", "        r0 = max((u % nch) * rb, 0)"]
        lines += ["        " + x for x in block + body]
        seg += 1
        prev = ph.accs
    if prev:
        lines += blocks(C.column_loop(0, [x for a in prev for x in _combined(em, a)], set(), seg_defs[seg],
                                      kept_set, c, "t, j"))
    return lines


def _combined(em, a: K.Acc) -> list[str]:
    """Accumulator ``a``'s value for one column: its chunks' partials combined in chunk order
    (each partial an element of the accumulation dtype, combined as an element is), then its
    result."""
    part = dataclasses.replace(a, src=f"p_{a.dst}", src_dtype=a.acc_dtype, mask=None)
    return (em.acc_lines(a, "init") + ["for h in range(nch):", f"    p_{a.dst} = pacc_{a.dst}[t * nch + h, j]"]
            + ["    " + x for x in em.acc_lines(part, "combine")] + em.acc_lines(a, "result"))
