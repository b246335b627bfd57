"""The fusion pipeline: ``optimize`` (simplification passes to a fixpoint) and ``plan`` (the
fusion rules of :data:`RULES` in order, the last the recompute-or-materialise decision; then the
kernels with their costs, ordered, and the aliasing policy's in-place writes).

    optimize:  fold_constants -> identities -> movement -> casts -> dce   (repeat to fixpoint)
    plan:      gemm_epilogue -> reduction (row-wise) + scan -> elementwise -> recompute -> groups

The graph after every pass that changed it is logged at DEBUG on the ``kfuse`` logger
(``KFUSE_DEBUG=2``, :mod:`kfuse.logs`); any ``callback(pass_name, graph)`` can be given instead.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Callable

from .. import config as _config
from ..ir.graph import Graph, Node
from ..ir.ops import LEAF, REDUCE, SCAN, Op
from ..logs import logger
from . import attention, cpu_cost, elementwise, gemm_epilogue, gpu_chunks, recompute, reduction, scan
from .aliasing import order_checks_first, with_argument_writes
from .cost import DeviceSpec, compute_dtype, estimate, get_device_spec
from .dag import Dag, is_acyclic, topological_order
from .explain import brief
from .kinds import GroupKind
from .legality import Clustering, classify, reduce_key, verify_group
from .plan import KernelGroup, Plan, Refusal
from .rules import PlanContext, Together, run_rule
from .simplify import PASSES, Pass

MAX_ROUNDS = 20
# The fusion rules (``rules.Rule``), in the order they run over one clustering; reductions and
# scans together, each claiming its neighbours in graph order.
RULES = (gemm_epilogue.RULE, Together("rows", reduction.RULE, scan.RULE, key=reduction.anchor_order),
         elementwise.RULE, recompute.RULE)


def _log_callback(name: str, graph: Graph) -> None:
    logger.debug("--- after %s ---\n%s", name, graph.as_text())


def optimize(graph: Graph, passes: tuple[Pass, ...] = PASSES,
             callback: Callable[[str, Graph], None] | None = None) -> Graph:
    """Run the simplification passes in order, repeatedly, until none changes the graph."""
    if callback is None and logger.isEnabledFor(logging.DEBUG):
        callback = _log_callback
    idle: dict[int, Graph] = {}     # pass -> the graph it last left unchanged (passes are pure)
    for _ in range(MAX_ROUNDS):
        before = graph.outputs
        for k, p in enumerate(passes):
            if idle.get(k) is graph:
                continue
            new = p(graph)
            if new.outputs == graph.outputs:
                idle[k] = graph
            elif callback is not None:
                callback(p.name, new)
            graph = new
        if graph.outputs == before:
            break
    return graph


# -- planning --------------------------------------------------------------------------------------

def _resolve_device(device) -> DeviceSpec:
    if device is None:
        device = _config.get().device
    return get_device_spec(device)


def _build(state: Clustering, cid: int, extra: set[Node] = frozenset()):
    """(nodes, inputs, outputs) of cluster ``cid`` as it stands (plus ``extra`` pulled nodes)."""
    ns = state.members[cid] | state.pulled[cid] | set(extra)
    stack = [i for n in ns for i in n.inputs]
    while stack:                            # constants and index math over leaves come along
        i = stack.pop()
        if i not in ns and (i.op is Op.CONST or i in state.free):
            ns.add(i)
            stack.extend(i.inputs)
    inputs = {i for n in ns for i in n.inputs if i not in ns}
    outs = []
    for n in state.members[cid]:
        if n in state.outputs:
            outs.append(n)
            continue
        for c in state.members:
            if c != cid and n not in state.nodeset(c) and any(n in m.inputs for m in state.nodeset(c)):
                outs.append(n)
                break
    key = state.order.__getitem__
    return sorted(ns, key=key), sorted(inputs, key=key), sorted(outs, key=key)


def _evals(kind: GroupKind, nodes: list[Node], outputs: list[Node]) -> dict[Node, int]:
    """How often each node is evaluated: in an elementwise kernel a node under a broadcast runs
    once per element of its consumer; elsewhere once per element (reductions per input element)."""
    ev: dict[Node, int] = {}
    if kind != GroupKind.ELEMENTWISE:
        return ev
    users: dict[Node, list[Node]] = {n: [] for n in nodes}
    for n in nodes:
        for i in n.inputs:
            if i in users:
                users[i].append(n)
    outs = set(outputs)
    for n in reversed(nodes):
        cands = [n.size] if n in outs or not users[n] else []
        cands += [ev.get(u, u.size) for u in users[n]]
        ev[n] = max(cands)
    return ev


def _cost(state: Clustering, cid: int, device: DeviceSpec, extra=frozenset(), passes: int = 1):
    nodes, inputs, outputs = _build(state, cid, extra)
    if not outputs:
        return None, nodes, inputs, outputs
    kind = state.shape(cid).kind
    reread = [i for i in inputs if kind == GroupKind.REDUCE and i.shape == state.shape(cid).domain]
    c = estimate(kind, nodes, inputs, outputs, device, _evals(kind, nodes, outputs), passes, reread)
    return c, nodes, inputs, outputs


def _cluster_seconds(device):
    def f(state, cid, extra=frozenset()):
        c = _cost(state, cid, device, extra)[0]
        return 0.0 if c is None else c.seconds
    return f


def cluster(graph: Graph, device: DeviceSpec, no_rowwise: frozenset = frozenset(), rules=RULES) -> Clustering:
    """Run the fusion rules; the returned state holds the clusters and refusals."""
    state = Clustering(graph, keep_clustered=gemm_epilogue.keep_clustered(graph))
    ctx = PlanContext(device, no_rowwise, _cluster_seconds(device))
    for rule in rules:
        run_rule(rule, state, ctx)
    return state


def final_refusals(refused, groups) -> tuple[Refusal, ...]:
    """The planner's refusals restated between the plan's kernels: a refusal recorded while the
    clusters were still growing names the final kernels holding its two sides; one whose sides
    ended up in the same kernel is dropped, and each (pair of kernels, reason) is said once."""
    where: dict = {}
    for g in groups:                    # a recomputed node: the first kernel that computes it
        for n in g.nodes:
            where.setdefault(n, g)
    out, seen = [], set()
    for r in refused:
        if not r.between:
            if r not in out:
                out.append(r)
            continue
        a, b = (where.get(n) for n in r.between)
        if a is None or b is None:
            key = (r.what, r.reason)
        elif a is b:
            continue
        else:
            key = (frozenset((a.id, b.id)), r.reason)
        if key in seen:
            continue
        seen.add(key)
        what = r.what if a is None or b is None else f"fuse kernel {a.id} {_brief(a)} with kernel {b.id} {_brief(b)}"
        out.append(Refusal(what, r.reason))
    return tuple(out)


def _brief(g: KernelGroup) -> str:
    return brief(g.ops, g.nodes[0] if g.nodes else None)


def plan(graph: Graph, device=None) -> Plan:
    """Group the (optimized) graph's nodes into kernels under the device's roofline model."""
    device = _resolve_device(device)
    no_rowwise: frozenset = frozenset()
    decisions: dict = {}        # reduce key -> why its rows run a kernel a pass
    for _ in range(4):
        state = cluster(graph, device, no_rowwise)
        groups, split = _groups(state, device)
        if not split.keys() - no_rowwise:
            break
        no_rowwise = no_rowwise | split.keys()
        decisions.update(split)
    groups = [dataclasses.replace(g, reason=f"{g.reason}; {decisions[reduce_key(g.anchor)]}")
              if g.kind == GroupKind.REDUCE and g.anchor is not None and reduce_key(g.anchor) in decisions else g
              for g in groups]
    passthrough = tuple(dict.fromkeys(o for o in graph.outputs if o.op is Op.INPUT))
    groups, notes = attention.fuse(groups, device, graph)
    groups = with_argument_writes(graph, groups)
    groups = _check_read_back(graph, groups, device)
    views = tuple(o for o in dict.fromkeys(graph.outputs) if o in state.views)
    p = Plan(graph=graph, groups=tuple(groups), refused=final_refusals(state.refused, groups), device=device,
             passthrough=passthrough, views=views, notes=tuple(notes))
    check_plan(p)
    return p


def _check_read_back(graph: Graph, groups: list, device: DeviceSpec) -> list:
    """GPU: the groups with each index-check kernel's wait for the host priced in its cost (the
    host reads its flag back every call: ``gpu_chunks.check_read_back_seconds``)."""
    if device.kind != "gpu" or not graph.checks:
        return groups
    flags = {graph.outputs[k] for k, *_ in graph.checks}
    n = {g.id: gpu_chunks.launches(g.kind, list(g.nodes), list(g.inputs), list(g.outputs), device.sms)
         for g in groups}
    out = []
    for g in groups:
        if g.cost is not None and flags & set(g.outputs):
            rest = sum(h.cost.seconds for h in groups if h is not g and h.cost is not None)
            extra = gpu_chunks.check_read_back_seconds(n[g.id], sum(n.values()), rest)
            if extra:
                g = dataclasses.replace(g, cost=dataclasses.replace(g.cost, seconds=g.cost.seconds + extra))
        out.append(g)
    return out


def _groups(state: Clustering, device: DeviceSpec) -> tuple[list[KernelGroup], dict]:
    built = {}
    split_keys = {}
    for cid in state.clusters():
        c, nodes, inputs, outputs = _cost(state, cid, device)
        if c is None:
            continue
        shape = state.shape(cid)
        reason = _reason(state, cid, shape, nodes)
        if shape.kind == GroupKind.REDUCE:
            computed = set(n for n in nodes if n.op not in LEAF and n not in state.free)
            passes, text, split = reduction.row_decision(
                computed, inputs, outputs, state.order, device, c.flops, compute_dtype(nodes))
            if passes > 1:
                c = _cost(state, cid, device, passes=passes)[0]
                reason += "; " + text
                if split:
                    split_keys[reduce_key(shape.anchor)] = text
        built[cid] = (shape, nodes, inputs, outputs, c, reason)
    # order: topological over the kernels that remain
    dag = Dag()
    dag.add_nodes_from(built)
    home_of = {}
    for cid, (_, _, _, outputs, _, _) in built.items():
        for o in outputs:
            home_of[o] = cid
    for cid, (_, _, inputs, _, _, _) in built.items():
        for i in inputs:
            if i in home_of:
                dag.add_edge(home_of[i], cid)
    if not is_acyclic(dag):   # pragma: no cover - merges keep hulls convex
        raise AssertionError("fusion produced a cycle between kernels")
    order_checks_first(state.graph, built, home_of, dag)
    order = topological_order(
        dag, key=lambda c: min(state.order[n] for n in built[c][1]))
    costs = [built[cid][4] for cid in order]
    if device.cpu is not None and device.levels:        # (a kernel after a large one starts cold)
        costs = cpu_cost.cold_after(costs, device.cpu, device.levels, device.sms)
    groups = []
    for k, cid in enumerate(order):
        shape, nodes, inputs, outputs, _, reason = built[cid]
        groups.append(KernelGroup(id=k, kind=shape.kind, nodes=tuple(nodes), inputs=tuple(inputs),
                                  outputs=tuple(outputs), domain=tuple(shape.domain),
                                  axes=tuple(shape.axes), anchor=shape.anchor, cost=costs[k],
                                  reason=reason))
    return groups, split_keys


def _reason(state: Clustering, cid: int, shape, nodes) -> str:
    n_ops = sum(1 for n in state.members[cid] if n.op not in LEAF)
    if shape.kind == GroupKind.MATMUL:
        ep = [n for n in state.members[cid] if n is not shape.anchor]
        r = f"matmul with {len(ep)} fused operand-cast/epilogue op(s)" if ep else "matmul"
    elif shape.kind == GroupKind.SCATTER:
        mode = shape.anchor.attr("mode")
        r = (f"scatter ({'assignment' if mode == 'set' else 'np.' + mode + '.at'}) of {list(shape.domain)} "
             f"values into {list(shape.anchor.shape)} with {n_ops - 1} fused elementwise op(s)")
    elif shape.kind == GroupKind.SCAN:
        nscan = sum(1 for n in state.members[cid] if n.op in SCAN)
        r = (f"{nscan} scan(s) along axis {shape.axes[0]} of {list(shape.domain)} (in order, a thread a row) "
             f"with {n_ops - nscan} fused elementwise op(s)")
    elif shape.kind == GroupKind.REDUCE:
        nred = sum(1 for n in state.members[cid] if n.op in REDUCE)
        r = (f"{'row-wise: ' if nred > 1 else ''}{nred} reduction(s) over axes {shape.axes} of "
             f"{list(shape.domain)} with {n_ops - nred} fused elementwise op(s)")
    else:
        r = f"{n_ops} elementwise op(s) over {list(shape.domain)}"
    pulled = len(state.pulled[cid])
    if pulled:
        r += f"; {pulled} producer op(s) recomputed here"
    notes = state.notes.get(cid) or []
    return "; ".join([r] + notes)


def check_plan(p: Plan) -> None:
    """Assert the plan satisfies the contract (groups valid, inputs produced earlier)."""
    order = {n: i for i, n in enumerate(p.graph.nodes())}
    produced = set(p.graph.inputs)
    for g in p.groups:
        problems = verify_group(g, order)
        missing = [i for i in g.inputs if i not in produced]
        if missing:
            problems.append(f"inputs {missing} are not produced by an earlier kernel")
        if problems:
            raise AssertionError(f"kernel {g.id} ({g.kind}) breaks the plan contract: {problems}")
        produced |= set(g.outputs)
    for o in p.graph.outputs:
        if o not in produced and not (o in p.views and o.inputs[0] in produced):
            raise AssertionError(f"graph output {o!r} is produced by no kernel")


__all__ = ["optimize", "plan", "cluster", "check_plan", "Refusal", "classify"]
