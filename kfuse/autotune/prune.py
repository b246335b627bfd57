"""Prune candidates before measuring: drop what breaks the device's resource limits, rank the rest
with the roofline cost model, keep the top k; and the heuristic (no-measurement) choice.

* :func:`check` — ``None`` when a config fits ``DeviceSpec`` limits (threads a block, registers,
  shared memory, vector alignment of the innermost extent; CPU: thread count), else the reason.
* :func:`model_seconds` — the cost model's time for one config: the group's roofline time
  (``fusion.cost``) scaled by what the config wastes (partial waves, idle lanes, narrow accesses,
  thread start-up on the CPU). It only ranks candidates; measurements decide.
* :func:`prune` — valid configs ordered by model time, the heuristic first, at most ``top_k``.
* :func:`heuristic` — the config the runtime uses untuned (mode ``off`` and cache misses); on the
  CPU it is exactly the runtime's own rule, so ``off`` changes nothing.
"""
from __future__ import annotations

import math

import numpy as np

from .. import backends as _backends
from ..fusion import cost as costmod
from ..fusion.kinds import ROW_KINDS, GroupKind, TileKind
from . import space as S

MAX_THREADS_PER_BLOCK = 1024
MAX_REGS_PER_THREAD = 255
BASE_REGS = 32                         # index math, pointers, loop state
CPU_THREAD_START = 4e-6                # seconds to wake one Numba worker (2-core CI box, measured order)


def _cost(group, device) -> "costmod.Cost":
    c = group.cost
    if c is None or getattr(c, "seconds", None) is None:
        c = costmod.estimate(group.kind, group.nodes, group.inputs, group.outputs, device)
    return c


def _elements(group) -> int:
    return int(np.prod(group.domain, dtype=np.int64)) if group.domain else 1


def _inner_extent(group) -> int:
    return int(group.domain[-1]) if group.domain else 1


# --------------------------------------------------------------------------- resource limits

def check(cfg: S.TileConfig, group, device, *, max_threads: int | None = None) -> str | None:
    """Why ``cfg`` cannot run ``group`` on ``device``, or None when it fits."""
    device = costmod.get_device_spec(device)
    if cfg.kind == "cpu":
        if device.kind != "cpu":
            return "a CPU config on a GPU device"
        mt = S.cpu_max_threads() if max_threads is None else max_threads
        t = int(cfg.get("threads", 1))
        if cfg.get("variant") not in ("par", "seq"):
            return f"unknown CPU variant {cfg.get('variant')!r}"
        if t < 1 or t > mt:
            return f"{t} threads > NUMBA_NUM_THREADS={mt}"
        if cfg.get("variant") == "par" and group.kind == GroupKind.SCATTER:
            return "a scatter runs in C order in one thread (its writes may hit one position)"
        if cfg.get("variant") == "par" and not S.cpu_has_parallel_loop(group):
            return "no outer loop to parallelise"
        return None
    if device.kind != "gpu":
        return "a GPU config on a CPU device"
    size = S.max_itemsize(group)
    if cfg.kind in ("gemm", "cublas+epilogue"):
        if group.kind != GroupKind.MATMUL:
            return "a GEMM config on a non-matmul kernel"
        if cfg.kind == "cublas+epilogue":
            return None
        from ..codegen.gemm_cuda import GemmSpec, GemmTile
        tile = GemmTile(**dict(cfg.params))
        spec = GemmSpec(dtype=S.gemm_dtype(group))
        try:
            tile.check(spec)
        except ValueError as e:
            return str(e)
        if tile.smem_bytes(spec) > device.shared_mem_per_block:
            return f"shared memory {tile.smem_bytes(spec)} B > {device.shared_mem_per_block} B"
        acc_regs = tile.block_m * tile.block_n // tile.threads
        if BASE_REGS + acc_regs > MAX_REGS_PER_THREAD:
            return f"~{BASE_REGS + acc_regs} registers a thread > {MAX_REGS_PER_THREAD}"
        return None
    block = int(cfg.get("block", 256))
    if block > MAX_THREADS_PER_BLOCK or block % 32:
        return f"{block} threads a block (max {MAX_THREADS_PER_BLOCK}, multiple of 32)"
    vec = int(cfg.get("vec", 1))
    if vec * size > 16:
        return f"vector of {vec}x{size} B > 16 B"
    if cfg.kind == TileKind.ELEMENTWISE:
        if group.kind in ROW_KINDS:
            return "an elementwise config on a reduce kernel"
        if group.kind == GroupKind.SCATTER and vec != 1:
            return "a scatter stores at data-dependent addresses, an element at a time (vec=1)"
        if _inner_extent(group) % vec:
            return f"innermost extent {_inner_extent(group)} not a multiple of vec={vec} (alignment)"
        regs = BASE_REGS + int(cfg.get("ept", 1)) * vec * max(1, size // 4) * 2 * max(1, len(group.inputs))
        return _regs_ok(regs, block, device)
    if cfg.kind == "row" and group.kind == GroupKind.SCAN:
        return "a scan runs its row in order in one thread, not a block a row"
    if cfg.kind == "row":
        L = S.reduced_length(group)
        if _inner_extent(group) % vec:
            return f"row length {_inner_extent(group)} not a multiple of vec={vec} (alignment)"
        row_bytes = L * size * max(1, len(group.inputs))
        if cfg.get("storage") == "shared":
            if row_bytes > device.shared_mem_per_block:
                return f"row of {row_bytes} B > shared memory {device.shared_mem_per_block} B"
            return _regs_ok(BASE_REGS + 8, block, device)
        if cfg.get("storage") == "reread":
            return _regs_ok(BASE_REGS + 8, block, device)
        slots = math.ceil(L / block) * max(1, size // 4) * max(1, len(group.inputs))
        return _regs_ok(BASE_REGS + slots, block, device)
    if cfg.kind == "reduction":
        acc_bytes = block * int(cfg.get("rows", 1)) * 8
        if acc_bytes > device.shared_mem_per_block:
            return f"combine buffer {acc_bytes} B > shared memory {device.shared_mem_per_block} B"
        if int(cfg.get("split", 1)) > max(1, S.reduced_length(group) // block):
            return "split finer than one block of threads"
        return _regs_ok(BASE_REGS + 4 * int(cfg.get("rows", 1)), block, device)
    return f"unknown config kind {cfg.kind!r}"


def _regs_ok(regs_per_thread: int, block: int, device) -> str | None:
    if regs_per_thread > MAX_REGS_PER_THREAD:
        return f"~{regs_per_thread} registers a thread > {MAX_REGS_PER_THREAD}"
    if device.registers_per_sm and regs_per_thread * block > device.registers_per_sm:
        return f"~{regs_per_thread}x{block} registers a block > {device.registers_per_sm}"
    return None


# --------------------------------------------------------------------------- cost model

def model_seconds(cfg: S.TileConfig, group, device) -> float:
    """Predicted seconds of ``group`` under ``cfg`` (ranking only)."""
    device = costmod.get_device_spec(device)
    c = _cost(group, device)
    body = max(c.seconds - device.launch_overhead, 0.0)
    if cfg.kind == "cpu":
        cores = max(1, device.sms)               # the roofline assumes every core busy
        if cfg.get("variant") == "seq":
            return body * cores + device.launch_overhead
        t = int(cfg.get("threads", 1))
        return body * cores / min(t, cores) + device.launch_overhead + CPU_THREAD_START * t
    n = _elements(group)
    sms = max(1, device.sms)
    if cfg.kind == "cublas+epilogue":
        out_bytes = sum(o.nbytes for o in group.outputs)
        return c.seconds + 2 * out_bytes / device.bandwidth + device.launch_overhead
    if cfg.kind == "gemm":
        bm, bn = int(cfg["block_m"]), int(cfg["block_n"])
        a = group.anchor
        M = a.shape[-2] if a is not None and len(a.shape) >= 2 else 1
        N = a.shape[-1] if a is not None and a.shape else 1
        tiles = math.ceil(M / bm) * math.ceil(N / bn)
        waves = math.ceil(tiles / sms)
        waste = (waves * sms) / max(tiles, 1)           # partial last wave
        pad = (math.ceil(M / bm) * bm * math.ceil(N / bn) * bn) / max(M * N, 1)
        stage_pen = 1.0 + 0.05 * max(0, 3 - int(cfg.get("stages", 3)))
        return body * max(1.0, min(waste, 2.0)) * pad * stage_pen + device.launch_overhead
    block = int(cfg.get("block", 256))
    vec = int(cfg.get("vec", 1))
    size = S.max_itemsize(group)
    narrow = 1.0 + 0.5 * (1.0 - min(1.0, vec * size / 16))   # <16 B accesses waste bandwidth
    if cfg.kind == TileKind.ELEMENTWISE:
        per_block = block * vec * int(cfg.get("ept", 1))
        blocks = math.ceil(n / per_block)
        waves = math.ceil(blocks / (sms * max(1, 2048 // block)))
        fill = blocks / max(1, waves * sms * max(1, 2048 // block))
        return body * narrow / max(min(1.0, fill), 0.25) + device.launch_overhead
    L = S.reduced_length(group)
    rows = S.outer_rows(group)
    if cfg.kind == "row":
        idle = max(1.0, block * vec / max(L, 1))                 # lanes with nothing to do
        reread = {"registers": 1.0, "shared": 1.1}.get(cfg.get("storage"), 1.0 + 0.5 * _phases(group))
        fill = min(1.0, rows / (sms * max(1, 2048 // block)))
        return body * narrow * min(idle, 4.0) * reread / max(fill, 0.25) + device.launch_overhead
    # reduction
    split = int(cfg.get("split", 1))
    blocks = math.ceil(rows / int(cfg.get("rows", 1))) * split
    fill = min(1.0, blocks / (sms * max(1, 2048 // block)))
    extra = device.launch_overhead if split > 1 else 0.0        # second pass combines the splits
    return body / max(fill, 0.1) + device.launch_overhead + extra


def _phases(group) -> int:
    """Reductions after the first re-read the row (softmax: 1, layernorm: 1-2)."""
    from ..ir.ops import REDUCE
    return max(0, sum(1 for n in group.nodes if n.op in REDUCE) - 1)


# --------------------------------------------------------------------------- heuristic + prune

def heuristic(group, backend="cpu", device=None, *, threads: int | None = None) -> S.TileConfig:
    """The untuned choice (what the runtime does by itself)."""
    if _backends.get(backend).on_host:
        from ..runtime.cpu import default_parallel
        if not default_parallel(group):
            return S.TileConfig.make("cpu", variant="seq", threads=1)
        if threads is None:         # (without starting Numba's thread pool)
            from ..runtime.cpu_threads import thread_cap
            threads = thread_cap()
        return S.TileConfig.make("cpu", variant="par", threads=int(threads))
    size = S.max_itemsize(group)
    if group.kind == GroupKind.MATMUL:
        from ..codegen.gemm_cuda import default_tile
        a = group.anchor
        M = a.shape[-2] if a is not None and len(a.shape) >= 2 else 1
        N = a.shape[-1] if a is not None and a.shape else 1
        K = a.inputs[0].shape[-1] if a is not None and a.inputs and a.inputs[0].shape else 1
        dev = costmod.get_device_spec(device or "h100")
        return S.gemm_tile_config(default_tile(M, N, K, S.gemm_dtype(group), dev.sms))
    if group.kind in ROW_KINDS:
        from ..codegen.cuda_shapes import row_shape
        L = S.reduced_length(group)
        vec = max(1, 16 // size) if _inner_extent(group) % max(1, 16 // size) == 0 else 1
        if S.is_rowwise(group):
            block, kc = row_shape(max(1, L // vec))
            return S.TileConfig.make("row", block=block, storage="registers" if kc else "reread", vec=vec)
        return S.TileConfig.make("reduction", block=128, rows=1, split=1)
    vec = 1 if group.kind == GroupKind.SCATTER else max(1, 16 // size)
    if _inner_extent(group) % vec:
        vec = 1
    return S.TileConfig.make("elementwise", block=256, ept=1, vec=vec)


def prune(configs, group, device, *, top_k: int = 8, keep=None, max_threads: int | None = None,
          dropped: list | None = None) -> list[S.TileConfig]:
    """Valid configs, ``keep`` (the heuristic) first when valid, then by model time; at most
    ``top_k``. ``dropped`` (a list) receives ``(config, reason)`` for each config left out."""
    device = costmod.get_device_spec(device)
    valid = []
    for cfg in S.dedupe(configs):
        why = check(cfg, group, device, max_threads=max_threads)
        if why is None:
            valid.append(cfg)
        elif dropped is not None:
            dropped.append((cfg, why))
    ranked = sorted(valid, key=lambda c: model_seconds(c, group, device))
    if keep is not None and keep in ranked:
        ranked.remove(keep)
        ranked.insert(0, keep)
    out = ranked[:max(1, top_k)]
    if dropped is not None:
        dropped.extend((c, f"not in the top {top_k} by the cost model") for c in ranked[len(out):])
    return out
