"""Backend glue for the tuner: run one kernel of a compiled program under a given TileConfig, and
apply chosen configs to a program.

:class:`CpuTarget` drives ``kfuse.runtime.cpu`` programs: it replays the plan once with the
heuristic configs to capture every kernel's inputs, then runs a single kernel with the ``seq`` or
``par`` dispatcher and a Numba thread count (``numba.set_num_threads`` is per calling thread and
is restored after each call). :func:`apply` sets the chosen variant on a CPU program, through
``program.set_variant(group_id, variant, threads)`` when the runtime provides it, else through the
kernel objects' ``parallel``/``fns`` attributes (a stop-gap until that hook exists).
"""
from __future__ import annotations

import functools

import numpy as np

from . import space as S


@functools.cache
def cpu_arch() -> str:
    """What a CPU tuning result depends on: the host CPU model and the Numba thread pool size
    (both fixed for the process: asked once)."""
    from ..runtime import cpu_native, cpu_threads     # (neither imports Numba nor llvmlite)
    return f"cpu:{cpu_native.llvm_cpu_name()}:{cpu_threads.numba_threads()}t"


def _arg(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint16) if a.dtype == np.float16 else a


def call_kernel(kernel, ins, outs, variant: str, threads: int) -> None:
    """Run one runtime ``_Kernel`` (its ``fns = (seq, par)`` and ``sizes``) on prepared buffers;
    a scatter's output starts each run as a copy of its base (``KernelIR.init_from``), so a
    ``ufunc.at`` run again gives the same result."""
    for o, i in kernel.kir.init_from:
        np.copyto(outs[o], ins[i])
    if variant == "par":
        import numba
        old = numba.get_num_threads()
        if threads != old:
            numba.set_num_threads(int(threads))
        try:
            kernel.fns[1](*[_arg(a) for a in ins], *[_arg(a) for a in outs], *kernel.sizes)
        finally:
            if threads != old:
                numba.set_num_threads(old)
    else:
        kernel.fns[0](*[_arg(a) for a in ins], *[_arg(a) for a in outs], *kernel.sizes)


class CpuTarget:
    """Runs single kernels of a ``runtime.cpu`` program on the caller's inputs."""

    backend = "cpu"
    gpu = False
    compile_workers = 1         # Numba: one global compiler lock; par kernels not re-entrant

    def __init__(self, program, arrays, heuristics: dict):
        self.program = program
        self.plan = program.plan
        self.kernels = list(program.kernels)
        graph = self.plan.graph
        env = {n: np.asarray(a) for n, a in zip(graph.inputs, arrays)}
        self.ins: dict[int, list] = {}
        for i, k in enumerate(self.kernels):
            ins = [env[n] for n in k.group.inputs]
            if k.kir.contraction is not None:
                from ..runtime.cpu import matmul as _matmul
                ins.append(_matmul(ins, k.kir.contraction))
            self.ins[i] = ins
            outs = [np.empty(n.shape, dtype=n.dtype) for n in k.group.outputs]
            if not all(o.size == 0 for o in outs):
                h = heuristics.get(k.group.id)
                variant = h.get("variant", "seq") if h is not None else ("par" if k.parallel else "seq")
                call_kernel(k, ins, outs, variant, h.get("threads", 1) if h is not None else 1)
            env.update(zip(k.group.outputs, outs))

    def group_index(self, group_id: int) -> int:
        return next(i for i, k in enumerate(self.kernels) if k.group.id == group_id)

    def source(self, i: int) -> str:
        return self.kernels[i].source

    def signature(self, i: int) -> list:
        """Per input: dtype, rank, C-contiguity (the layout class that changes speed, not sizes)."""
        return [[str(a.dtype), a.ndim, bool(a.flags.c_contiguous)] for a in self.ins[i]]

    def empty(self, i: int) -> bool:
        return all(int(np.prod(n.shape, dtype=np.int64)) == 0 for n in self.kernels[i].group.outputs)

    def call(self, i: int, cfg: S.TileConfig, ins, outs) -> None:
        """The one place a candidate runs (tests monkeypatch it to fail or to lie)."""
        call_kernel(self.kernels[i], ins, outs, cfg.get("variant", "seq"), int(cfg.get("threads", 1)))

    def prepare(self, i: int, cfg: S.TileConfig):
        """Compile ``cfg`` for kernel ``i`` (the first call compiles the Numba dispatcher) and
        return ``run(j) -> outputs``."""
        ins = self.ins[i]
        outs = [np.empty(n.shape, dtype=n.dtype) for n in self.kernels[i].group.outputs]

        def run(j: int):
            self.call(i, cfg, ins, outs)
            return outs
        run(0)
        return run


class _WithThreads:
    """A par dispatcher run with a fixed Numba thread count (the stop-gap for a runtime hook)."""

    __slots__ = ("fn", "threads")

    def __init__(self, fn, threads: int):
        self.fn, self.threads = fn, int(threads)

    def __call__(self, *args):
        import numba
        old = numba.get_num_threads()
        if old == self.threads:
            return self.fn(*args)
        numba.set_num_threads(self.threads)
        try:
            return self.fn(*args)
        finally:
            numba.set_num_threads(old)


def apply(program, tiles: dict) -> None:
    """Make ``program`` run each group with its chosen TileConfig (CPU configs only; others are
    recorded on ``program.tiles`` for a runtime that reads them)."""
    try:
        program.tiles = dict(tiles)
    except AttributeError:
        pass
    kernels = getattr(program, "kernels", None)
    for gid, cfg in tiles.items():
        if cfg is None or cfg.kind != "cpu":
            continue
        variant, threads = cfg.get("variant", "seq"), int(cfg.get("threads", 1))
        if hasattr(program, "set_variant"):
            program.set_variant(gid, variant, threads)
            continue
        for k in kernels or ():
            if k.group.id != gid:
                continue
            import numba
            base = k.fns[1].fn if isinstance(k.fns[1], _WithThreads) else k.fns[1]
            k.parallel = variant == "par"
            wrap = k.parallel and threads != numba.get_num_threads()
            k.fns = (k.fns[0], _WithThreads(base, threads) if wrap else base)

