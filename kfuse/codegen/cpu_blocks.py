"""The ``blocks`` order of a CPU full reduction (:mod:`kfuse.codegen.cpu_schedule`).

A reduce kernel with no kept dim (``np.mean(loss)``, ``np.sum(x * x)``) has no outer loop to
share between threads. In the blocks order each loop phase cuts its first reduced dim into
blocks of ``rb`` rows (``rb`` a run-time argument after the sizes, a function of the sizes alone:
:func:`block_rows`), sums each block into its own partial (``part_*``, in the accumulation
dtype) in a ``prange`` over the blocks, then adds the partials one by one in block order. The
summation order depends on the sizes only, never on the thread count, so a call gives the same
bits on one thread or many. Only phases whose accumulators are all float sums qualify
(:func:`eligible`); their statements and values per element are the rows order's (a float64 sum
of vectorised-helper values over one dim adds them in a loop of its own over the block's row,
as the rows order does: ``cpu._Emitter.wide_sums``).
"""
from __future__ import annotations

from . import kernel_ir as K

BLOCK_ELEMENTS = 1 << 16        # elements a block sums (a block a thread's share at 128K+ elements)


def eligible(kir: K.KernelIR) -> bool:
    """Whether ``kir`` is a full reduction the blocks order can run: no kept loop, and every
    loop phase sums floats (no other accumulator, no scan) over at least two rows."""
    inner = kir.loop_dims(kir.inner)
    if kir.loop_dims(kir.outer) or not inner or kir.contraction is not None or kir.extent(inner[0]) < 2:
        return False
    loops = [ph for ph in kir.phases if ph.has_loop]
    return bool(loops) and all(
        ph.accs and all(a.kind == "sum" and a.acc_dtype in ("float32", "float64") for a in ph.accs)
        and not K.scans(ph.body) for ph in loops)


def block_rows(kir: K.KernelIR) -> int:
    """Rows of the first reduced dim per block: about BLOCK_ELEMENTS elements."""
    inner = kir.loop_dims(kir.inner)
    row = 1
    for d in inner[1:]:
        row *= kir.extent(d)
    return rows_per_block(row)


def rows_per_block(row: int) -> int:
    """Rows of ``row`` elements (the reduced dims after the first) in a block."""
    return max(1, BLOCK_ELEMENTS // max(row, 1))


def function(em) -> list[str]:
    """The kernel function's lines in the blocks order (``em``: the CPU :class:`_Emitter`)."""
    kir = em.kir
    params = [f"in{k}" for k in range(len(kir.inputs))] + \
             [f"out{k}" for k in range(len(kir.outputs))] + [p.name for p in kir.sizes] + ["rb"]
    lines = [f"def kfuse_kernel({', '.join(params)}):", em.docstring(em.sched)] + em.scalar_reads()
    inner = kir.loop_dims(kir.inner)
    d0, n0 = inner[0], kir.domain[inner[0]]
    lines.append(f"    nblk = ({n0} + rb - 1) // rb")
    for ph in kir.phases:
        lines += ["    " + em.stmt(s) for s in ph.pre]
        if not ph.has_loop:
            continue
        lines += [f"    part_{a.dst} = np.empty(nblk, np.{a.acc_dtype})" for a in ph.accs]
        lines.append("    for t in numba.prange(nblk):")
        lines += ["        " + x for a in ph.accs for x in em.acc_lines(a, "init", vector=True)]
        wide = em.wide_sums(ph, inner, K.value_keys(ph.body))     # (the last inner dim's loop)
        rows = {a.src: f"sw_{a.dst}" for a in wide}
        size = "rb" if len(inner) == 1 else str(kir.domain[inner[-1]])
        lines += [f"        {row} = np.empty({size}, np.float32)" for row in rows.values()]
        # r0 >= 0 lets LLVM drop Numba's negative-index fix-up (as cpu_cols' c0)
        loop = f"for i{d0} in range(r0, min(r0 + rb, {n0})):"
        lines += ["        r0 = max(t * rb, 0)", "        " + loop]
        ind = 3
        for d in inner[1:]:
            loop = f"for i{d} in range({kir.domain[d]}):"
            lines.append("    " * ind + loop)
            ind += 1
        at = f"np.uint64(i{d0} - r0)" if len(inner) == 1 else f"i{inner[-1]}"
        body = [em.stmt(s) for s in ph.body]
        body += [f"{rows[a.src]}[{at}] = {a.src}" for a in wide]
        body += [x for a in ph.accs if a not in wide for x in em.acc_lines(a, "combine", vector=True)]
        lines += ["    " * ind + x for x in body]
        if wide:                    # the float64 additions in a loop of their own (cpu.wide_sums)
            lines += em.row_sums(wide, rows, loop, at, ind - 1)
        lines += [f"        part_{a.dst}[t] = acc_{a.dst}" for a in ph.accs]
        for a in ph.accs:           # the partials in block order: the same sum on any thread count
            lines += ["    " + x for x in em.acc_lines(a, "init", vector=True)]
            lines += ["    for t in range(nblk):", f"        acc_{a.dst} = acc_{a.dst} + part_{a.dst}[t]"]
            lines += ["    " + x for x in em.acc_lines(a, "result", vector=True)]
    return lines
