"""Backend glue for tuning the CUDA C runtime (``runtime.cuda``): run one kernel of a compiled
program under a TileConfig on CuPy arrays.

:class:`CudaTarget` mirrors ``targets.CpuTarget``: it replays the plan once with the runtime's own
(heuristic) launch shapes to capture every kernel's inputs, reads each kernel's heuristic choice
back as a TileConfig (``runtime.cuda_tiles.tile_params``) so heuristic and tuned configs are
compared like with like, and runs a single kernel under a config through a fresh launcher whose
``tile`` is set (the heuristic candidate runs with no tile at all: exactly the untuned runtime).
Inputs are rotated between timed runs (``bench.rotation_sets``) so L2 does not flatter anyone.
:meth:`CudaTarget.precompile` only generates and NVRTC-compiles a candidate's source (thread-safe,
run in a pool); :meth:`CudaTarget.prepare` loads it and returns ``run(j) -> outputs`` (main thread).
cupy is imported lazily, only when a target is made.
"""
from __future__ import annotations

from ..codegen import cuda_shapes
from ..runtime import cuda as rcuda
from ..fusion.kinds import GroupKind, TileKind
from ..runtime import cuda_tiles
from ..runtime import device as devmod
from ..runtime import interop
from ..runtime.gpu_launch import as_host_value, contract
from . import space as S


def gpu_arch(device_id: int | None = None) -> str:
    """What a GPU tuning result depends on: the arch and the device name (e.g. "sm_90:NVIDIA H200")."""
    p = devmod.device_properties(device_id)
    return f"{p['arch']}:{p['name']}"


def kernel_source(kir, store=None) -> str:
    """The text a tuning key hashes: the kernel in its default variant (stable across calls),
    read from the kernel store's index of rendered kernels where it holds it (``runtime.rendered``:
    a warm first call renders nothing)."""
    if kir.attention is not None:
        from ..codegen import cuda as cuda_emit     # (the renderer: imported where it renders)
        return cuda_emit.emit(kir)
    return rcuda.emitted_kernel(kir, cuda_shapes.default_variant(kir), store).source


class CudaTarget:
    """Runs single kernels of a ``runtime.cuda`` program on the caller's inputs."""

    backend = "cuda"
    gpu = True
    compile_workers = 4         # NVRTC compiles in a thread pool (see precompile)
    warmup, reps = 2, 10
    trust_heuristic = True      # the runtime's own choice is always a candidate (the reference)
    keep_heuristic_within = 0.01  # a candidate must beat the heuristic by 1% (timing noise)

    def __init__(self, program, arrays, heuristics: dict | None = None):
        import cupy
        from ..codegen import cuda as cuda_emit     # (the renderer: candidates are rendered; imported
        self.cupy = cupy                            # here, not in precompile's worker threads)
        self._renderer = cuda_emit
        self.program = program
        self.plan = program.plan
        self.groups = list(self.plan.groups)
        self.kirs = list(program.kirs)
        dev = int(cupy.cuda.runtime.getDevice())
        self.props = devmod.device_properties(dev)
        program.arch = self.props["arch"]
        graph = self.plan.graph
        host = program.host_inputs      # (scalars the kernels take by value)
        env = {n: as_host_value(a, n.dtype) if k in host else interop.device_array(a)   # bfloat16: uint16 bits
               for k, (n, a) in enumerate(zip(graph.inputs, arrays))}
        self.ins: dict[int, list] = {}
        self.outs: dict[int, list] = {}
        self.heur: dict[int, S.TileConfig] = {}
        self._rot: dict[int, list] = {}
        for i, (g, kir) in enumerate(zip(self.groups, self.kirs)):
            ins = [env[n] for n in g.inputs]
            if kir.contraction is not None:
                ins.append(contract(kir.contraction, ins))
            outs = [cupy.empty(tuple(n.shape), interop.storage_dtype(n.dtype)) for n in g.outputs]
            if kir.attention is not None:       # (not tuned: its one tile)
                from ..runtime.attention import group_runner
                group_runner(g, kir)(ins, outs[0])
                self.heur[i], self.ins[i], self.outs[i] = (heuristics or {}).get(g.id), ins, outs
                env.update(zip(g.outputs, outs))
                continue
            launcher = self._launcher(i, None)
            launcher(ins, outs, self.props)
            variant, grid = launcher.variant_for(ins, outs, self.props)
            kind, params = cuda_tiles.tile_params(variant, grid, cuda_tiles.geometry(launcher, self.props["sm_count"]))
            self.heur[i] = S.TileConfig.make(kind, **params)
            self.ins[i], self.outs[i] = ins, outs
            env.update(zip(g.outputs, outs))
        cupy.cuda.get_current_stream().synchronize()

    # -- what the tuner asks
    def group_index(self, group_id: int) -> int:
        return next(i for i, g in enumerate(self.groups) if g.id == group_id)

    def heuristic(self, i: int) -> S.TileConfig:
        return self.heur[i]

    def source(self, i: int) -> str:
        return kernel_source(self.kirs[i], self.program.cache)

    def signature(self, i: int) -> list:
        return [[str(a.dtype), a.ndim, a.data is None or bool(a.flags.c_contiguous)] for a in self.ins[i]]

    def empty(self, i: int) -> bool:
        return all(o.size == 0 for o in self.outs[i])

    def space(self, group, dropped: list | None = None) -> list[S.TileConfig]:
        """The group's candidates the CUDA C runtime can launch (others go to ``dropped``). A
        matmul group's kernel is its elementwise epilogue (the product is cuBLAS's)."""
        i = self.group_index(group.id)
        if self.heur[i].kind == TileKind.ELEMENTWISE and group.kind != GroupKind.SCATTER:
            cands = S.elementwise_space(S.max_itemsize(group))
        else:
            cands = S.space_for(group, "cuda")
        out = []
        for c in cands:
            why = cuda_tiles.unsupported(c)
            if why is None and c.kind != self.heur[i].kind:
                why = f"the runtime launches this kernel as {self.heur[i].kind}"
            if why is None:
                why = row_registers_unfit(c, group)
            if why is None:
                out.append(c)
            elif dropped is not None:
                dropped.append((c, why))
        return out

    # -- running candidates
    def _launcher(self, i: int, tile):
        launcher = rcuda._Launcher(self.groups[i], self.kirs[i], self.program.arch, self.program.cache)
        launcher.tile = tile
        return launcher

    def _tile(self, i: int, cfg: S.TileConfig):
        return None if cfg == self.heur[i] else cfg

    def precompile(self, i: int, cfg: S.TileConfig) -> str:
        """NVRTC-compile ``cfg``'s kernel (memoised in ``runtime.cuda``); no CUDA context needed."""
        launcher = self._launcher(i, self._tile(i, cfg))
        variant, _ = launcher.variant_for(self.ins[i], self.outs[i], self.props)
        if launcher.tile_note:
            raise ValueError(f"tile not applicable: {launcher.tile_note}")
        kernel = self._renderer.emit_kernel(self.kirs[i], variant)
        # memo only (cache=None): losing candidates stay out of the disk cache; prepare() loads
        # the memoised CUBIN, and the kernel the program finally runs is stored as usual
        rcuda.compile_source(kernel.source, self.program.arch, None)
        return kernel.name

    def _rotations(self, i: int) -> list:
        sets = self._rot.get(i)
        if sets is None:
            ins = self.ins[i]
            nbytes = sum(int(a.nbytes) for a in ins if a.data is not None)     # (a host scalar: data None)
            from . import bench        # (statistics, concurrent.futures: not for a cached lookup)
            n = bench.rotation_sets(nbytes, int(self.props.get("l2_bytes") or (50 << 20)))
            sets = [ins] + [[a.copy() if a.data is not None else a for a in ins] for _ in range(n - 1)]
            self._rot[i] = sets
        return sets

    def prepare(self, i: int, cfg: S.TileConfig):
        """Load ``cfg``'s kernel for kernel ``i``; ``run(j)`` launches it on input set ``j``."""
        cupy = self.cupy
        launcher = self._launcher(i, self._tile(i, cfg))
        sets = self._rotations(i)
        outs = [cupy.empty(o.shape, o.dtype) for o in self.outs[i]]
        launcher.choose(sets[0], outs, self.props)
        if launcher.tile_note:
            raise ValueError(f"tile not applicable: {launcher.tile_note}")
        props = self.props

        def run(j: int):
            launcher(sets[j % len(sets)], outs, props)
            return outs
        return run

    def release(self) -> None:
        """Drop the captured inputs and their rotated copies (GPU memory)."""
        self._rot.clear()
        self.ins.clear()
        self.outs.clear()


def row_registers_unfit(cfg: S.TileConfig, group) -> str | None:
    """Why a row tile cannot keep ``group``'s rows in registers (the launcher would ignore it)."""
    if cfg.kind != "row" or cfg.get("storage") != "registers":
        return None
    L, block, vec = S.reduced_length(group), int(cfg.get("block", 256)), int(cfg.get("vec", 1))
    kc = cuda_tiles.row_slots(L, block, vec)
    if kc > cuda_tiles.MAX_CACHE_K:
        return f"a row of {L // max(1, vec)} vector units needs {kc} register slots at {block} threads"
    return None


def apply_gpu(program, tiles: dict) -> None:
    """Set each group's tile on a program with ``set_tile`` (CUDA C); others keep heuristics."""
    if not hasattr(program, "set_tile"):
        return
    for gid, cfg in tiles.items():
        if cfg is None or cuda_tiles.unsupported(cfg) is None:
            program.set_tile(gid, cfg)
