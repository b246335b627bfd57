"""Candidate tile configurations per kernel kind (what the tuner may choose from).

A :class:`TileConfig` is frozen and hashable: a ``kind`` plus its parameters as a sorted tuple of
``(name, value)`` pairs, so equal configs compare equal and serialise to the same JSON
(:meth:`TileConfig.as_dict` / :meth:`TileConfig.from_dict`, the form stored in the cache's tuning
namespace).

Kinds and their parameters:

``cpu``          ``variant`` ("par" | "seq"), ``threads`` (Numba threads for the par variant).
                 The CPU emitter has no chunk / inner-block knob yet, so nothing else is tuned.
``elementwise``  ``block`` (threads a block), ``ept`` (elements a thread), ``vec`` (vector width).
                 A scatter kernel is one too, with ``vec`` 1 (its store addresses are data).
``reduction``    ``block`` (threads), ``rows`` (rows a block), ``split`` (split factor of long rows).
``row``          ``block`` (threads a row), ``storage`` ("registers" | "shared" | "reread"), ``vec``.
``gemm``         ``block_m, block_n, block_k, warps_m, warps_n, stages, group_m`` (a GemmTile).
``cublas+epilogue``  no parameters: cuBLAS product + one elementwise epilogue kernel.

Spaces are pure functions of a ``fusion.plan.KernelGroup`` (or plain numbers); which configs fit
the device is :mod:`kfuse.autotune.prune`'s business.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterable

import numpy as np
from ..fusion.kinds import GroupKind, TileKind
from ..records import record

from .. import backends as _backends

KINDS = tuple(TileKind)
THREADS_PER_BLOCK = (64, 128, 256, 512, 1024)
# where a row-wise kernel keeps its row between phases: registers (the CUDA emitter's cache_k > 0),
# shared memory (not in the emitter yet), or nowhere: re-read through L2 (cache_k = 0)
ROW_STORAGE = ("registers", "shared", "reread")


@record
class TileConfig:
    """A launch shape or tile a tuner tries: its kind and (name, value) parameters, kept sorted."""
    kind: str
    params: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"TileConfig kind {self.kind!r} not in {KINDS}")
        object.__setattr__(self, "params", tuple(sorted((str(k), v) for k, v in self.params)))

    @classmethod
    def make(cls, kind: str, **params) -> "TileConfig":
        return cls(kind, tuple(params.items()))

    def get(self, name: str, default=None):
        for k, v in self.params:
            if k == name:
                return v
        return default

    def __getitem__(self, name: str):
        for k, v in self.params:
            if k == name:
                return v
        raise KeyError(name)

    def replace(self, **params) -> "TileConfig":
        d = dict(self.params)
        d.update(params)
        return TileConfig(self.kind, tuple(d.items()))

    def as_dict(self) -> dict:
        return {"kind": self.kind, "params": dict(self.params)}

    @classmethod
    def from_dict(cls, d: dict) -> "TileConfig":
        if not isinstance(d, dict) or "kind" not in d:
            raise ValueError(f"not a TileConfig dict: {d!r}")
        params = d.get("params") or {}
        if not isinstance(params, dict):
            raise ValueError(f"not a TileConfig dict: {d!r}")
        return cls(str(d["kind"]), tuple(params.items()))

    @property
    def name(self) -> str:
        if not self.params:
            return self.kind
        return self.kind + ":" + ",".join(f"{k}={v}" for k, v in self.params)

    def __str__(self) -> str:
        return self.name


# --------------------------------------------------------------------------- helpers

def _pow2_upto(n: int, start: int = 1) -> list[int]:
    out, k = [], start
    while k <= n:
        out.append(k)
        k *= 2
    return out


def max_itemsize(group) -> int:
    nodes = list(group.inputs) + list(group.outputs)
    return max([np.dtype(n.dtype).itemsize for n in nodes] or [4])


def reduced_length(group) -> int:
    return int(math.prod(group.domain[a] for a in group.axes)) if group.axes else 1


def outer_rows(group) -> int:
    keep = [d for i, d in enumerate(group.domain) if i not in set(group.axes)]
    return int(math.prod(keep)) if keep else 1


def is_rowwise(group) -> bool:
    """A reduce group whose reduced axes are the trailing dims (softmax/layernorm/row sums)."""
    n = len(group.domain)
    return bool(group.axes) and tuple(sorted(group.axes)) == tuple(range(n - len(group.axes), n))


# --------------------------------------------------------------------------- CPU

def cpu_max_threads() -> int:
    import numba
    return int(numba.config.NUMBA_NUM_THREADS)


def cpu_thread_counts(max_threads: int) -> list[int]:
    """Powers of two from 2 up to ``max_threads``, plus ``max_threads`` itself."""
    ts = [t for t in _pow2_upto(max_threads) if t >= 2]
    if max_threads >= 2 and max_threads not in ts:
        ts.append(max_threads)
    return ts


def cpu_has_parallel_loop(group) -> bool:
    """Whether the kernel has an outer loop for ``prange`` (else par == seq)."""
    outer = [i for i in range(len(group.domain)) if i not in set(group.axes)]
    loops = [i for i in outer if group.domain[i] != 1]
    return bool(loops) and group.domain[loops[0]] > 1


def cpu_space(group, max_threads: int | None = None) -> list[TileConfig]:
    """seq, and par at every thread count in 2..max_threads (powers of two + the max); a
    scatter seq alone (it runs in C order: its writes may hit one position)."""
    max_threads = cpu_max_threads() if max_threads is None else int(max_threads)
    out = [TileConfig.make("cpu", variant="seq", threads=1)]
    if cpu_has_parallel_loop(group) and group.kind != GroupKind.SCATTER:
        out += [TileConfig.make("cpu", variant="par", threads=t) for t in cpu_thread_counts(max_threads)]
    return out


# --------------------------------------------------------------------------- GPU

def elementwise_space(itemsize: int = 4) -> list[TileConfig]:
    vmax = max(1, 16 // itemsize)
    return [TileConfig.make("elementwise", block=b, ept=e, vec=v)
            for b in (128, 256, 512, 1024) for e in (1, 2, 4, 8) for v in _pow2_upto(vmax)]


def scatter_space() -> list[TileConfig]:
    """A scatter's scalar grid-stride loop: threads a block and elements a thread, ``vec`` 1."""
    return [TileConfig.make("elementwise", block=b, ept=e, vec=1) for b in (128, 256, 512, 1024) for e in (1, 2, 4)]


def reduction_space(length: int | None = None) -> list[TileConfig]:
    splits = (1, 2, 4, 8) if length is None or length >= 4096 else (1,)
    return [TileConfig.make("reduction", block=b, rows=r, split=s)
            for b in THREADS_PER_BLOCK for r in (1, 2, 4, 8) for s in splits]


def rowwise_space(itemsize: int = 4) -> list[TileConfig]:
    vmax = max(1, 16 // itemsize)
    return [TileConfig.make("row", block=b, storage=st, vec=v)
            for b in (32,) + THREADS_PER_BLOCK for st in ROW_STORAGE
            for v in _pow2_upto(vmax)]


CUBLAS_EPILOGUE = TileConfig("cublas+epilogue")


def gemm_tile_config(tile) -> TileConfig:
    return TileConfig("gemm", tuple(dataclasses.asdict(tile).items()))


def gemm_space(dtype: str = "f16") -> list[TileConfig]:
    from ..codegen.gemm_cuda import gemm_search_space
    return [gemm_tile_config(t) for t in gemm_search_space(dtype)] + [CUBLAS_EPILOGUE]


def gemm_dtype(group) -> str:
    from ..fusion.gemm_int8 import int8_operands
    int8 = int8_operands(group.anchor)
    if int8 is not None:            # int8 tiles: block_k a multiple of 32
        return int8[0]
    a = group.anchor.inputs[0] if group.anchor is not None else None
    dt = np.dtype(a.dtype) if a is not None else np.dtype(np.float32)
    return {"float16": "f16", "bfloat16": "bf16"}.get(dt.name, "f32")


# --------------------------------------------------------------------------- dispatch

def space_for(group, backend="cpu", *, max_threads: int | None = None) -> list[TileConfig]:
    """Every candidate for one kernel group on ``backend`` (a ``kfuse.backends`` object or name):
    a host backend's thread counts, a device backend's launch shapes."""
    if _backends.get(backend).on_host:
        return cpu_space(group, max_threads)
    if group.kind == GroupKind.MATMUL:
        return gemm_space(gemm_dtype(group))
    if group.kind == GroupKind.SCATTER:
        return scatter_space()
    size = max_itemsize(group)
    if group.kind == GroupKind.SCAN:      # a thread a row, in order: the block size alone
        return [TileConfig.make("reduction", block=b, rows=1, split=1) for b in THREADS_PER_BLOCK]
    if group.kind == GroupKind.REDUCE:
        return rowwise_space(size) if is_rowwise(group) else reduction_space(reduced_length(group))
    return elementwise_space(size)


def dedupe(configs: Iterable[TileConfig]) -> list[TileConfig]:
    seen, out = set(), []
    for c in configs:
        if c not in seen:
            seen.add(c)
            out.append(c)
    return out
