"""Helpers of the fusion rule tests: a traced, optimized graph's clustering before any rule ran,
and questions about its clusters."""
from __future__ import annotations

import kfuse
from kfuse.fusion import gemm_epilogue
from kfuse.fusion.cost import get_device_spec
from kfuse.fusion.legality import Clustering
from kfuse.fusion.pipeline import _cluster_seconds
from kfuse.fusion.rules import PlanContext


def clustering(fn, *specs) -> Clustering:
    """The planning state of ``fn`` traced for ``specs``: one cluster per computed node."""
    g = kfuse.jit(fn).lower(*specs).optimized
    return Clustering(g, keep_clustered=gemm_epilogue.keep_clustered(g))


def context(device="cpu", **kw) -> PlanContext:
    dev = get_device_spec(device)
    return PlanContext(dev, cost_of=_cluster_seconds(dev), **kw)


def nodes_of(state: Clustering, op) -> list:
    return [n for n in state.order_list if n.op is op]


def home(state: Clustering, op, k: int = 0) -> int:
    """The cluster computing the ``k``-th node of ``op``."""
    return state.home[nodes_of(state, op)[k]]


def ops_of(state: Clustering, cid: int) -> set:
    return {n.op for n in state.members[cid]}
