"""kfuse functions on Dask arrays: a call with a ``dask.array.Array`` argument returns Dask arrays,
lazily; each layer's tasks call kfuse kernels on one chunk (NumPy or CuPy).

``detect`` (which calls come here, which backend runs a chunk), ``axes`` (the graph's dims as
chunkable labels), ``mapping`` (which layer computes which value), ``chunks`` (the per-chunk
kfuse calls tasks run, rebuilt where they run), ``reductions`` (combine and aggregate steps),
``layers`` (the Dask arrays, client side), ``chunk_plan`` (the chunk plan of ``kfuse.explain``). Importing this package
imports no Dask; a call does.
"""
from __future__ import annotations

from .detect import has_dask_arrays, is_dask_array


def call(jit, specs: dict, values: dict):
    """``jit`` called on ``values`` (some of them Dask arrays): its result as Dask arrays."""
    from .layers import build
    return build(jit, specs, values)[0]


def explain(jit, specs: dict, values: dict):
    """The chunk plan (:class:`.chunk_plan.ChunkPlan`) of that call; builds no task results."""
    from .chunk_plan import ChunkPlan
    from .layers import build
    _, layers, graph = build(jit, specs, values)
    return ChunkPlan(graph.name, tuple(layers))


__all__ = ["call", "explain", "has_dask_arrays", "is_dask_array"]
