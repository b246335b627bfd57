"""What may share a kernel: the clustering state, the group DAG (:mod:`.dag`) and the contract checks.

A :class:`Clustering` assigns every computed node a *home* cluster (where it is computed and, if
needed elsewhere, written); a cluster may also *pull* copies of cheap producers (recomputation).
Merging two clusters takes the convex hull of the pair in the cluster DAG (every cluster on a path
between them), so a merge can never create a cycle between kernels; a hull that would have to
swallow a cluster that cannot join (a matmul, a reduction over other axes) is refused with the
reason "would create a cycle through ...". :func:`classify` checks a node set against the
``plan.py`` contract and says which kind of kernel it is; :func:`verify_group` re-checks a built
:class:`KernelGroup` (tests and ``plan()`` use it).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Iterable

from ..ir.graph import Graph, Node
from ..ir.ops import ELEMENTWISE, LEAF, LOOKUP, MOVEMENT, RANDOM, REDUCE, SCAN, Op
from .dag import Dag, ancestors, descendants
from .explain import brief
from .kinds import GroupKind
from .plan import KernelGroup, Refusal

POINTWISE = ELEMENTWISE | LOOKUP | RANDOM   # what an elementwise kernel computes per element


@dataclasses.dataclass(frozen=True)
class Shape:
    """What kind of kernel a node set is: kind, domain, reduced axes, anchor."""
    kind: GroupKind
    domain: tuple[int, ...]
    axes: tuple[int, ...] = ()
    anchor: Node | None = None


def reduce_key(r: Node) -> tuple:
    """(domain, axes) of a reduction, or of a scan (its shape, its one axis)."""
    if r.op in SCAN:
        return (r.shape, (r.attr("axis"),))
    return (r.inputs[0].shape, tuple(r.attr("axes")))


def outer_shapes(domain, axes) -> tuple[tuple, tuple]:
    keep = tuple(1 if d in axes else s for d, s in enumerate(domain))
    drop = tuple(s for d, s in enumerate(domain) if d not in axes)
    return keep, drop


def _padded(shape, ndim) -> tuple:
    return (1,) * (ndim - len(shape)) + tuple(shape)


def classify(home: Iterable[Node], order: dict[Node, int]) -> tuple[Shape | None, str]:
    """The kernel kind of ``home`` (computed nodes, no pulled copies), or None and the reason."""
    nodes = sorted(home, key=order.__getitem__)
    member = set(nodes)
    table = next((n for n in nodes if n.op in LOOKUP and n.inputs[0] in member), None)
    if table is not None:
        return None, (f"the sorted table {table.op.value} reads is read whole by every element: "
                      "it is written by an earlier kernel, not computed in the searching one")
    mms = [n for n in nodes if n.op is Op.MATMUL]
    reds = [n for n in nodes if n.op in REDUCE]
    scans = [n for n in nodes if n.op in SCAN]
    scatters = [n for n in nodes if n.op is Op.SCATTER]
    if scatters:
        return _check_scatter(nodes, scatters, bool(mms or reds or scans))
    if scans and (mms or reds):
        return None, (f"a scan runs its axis in order, a thread a row: it shares no kernel with a "
                      f"{'matmul' if mms else 'reduction'}")
    if scans:
        return _check_scan(nodes, scans)
    if len(mms) > 1:
        return None, "two matmuls cannot share a kernel"
    if mms and reds:
        return None, "a matmul and a reduction cannot share a kernel"
    if mms:
        return _check_matmul(nodes, mms[0])
    if reds:
        return _check_reduce(nodes, reds)
    shapes = {n.shape for n in nodes}
    if len(shapes) > 1:
        return None, f"different shapes {sorted(shapes)}"
    bad = [n for n in nodes if n.op not in POINTWISE | MOVEMENT | LEAF]
    if bad:
        return None, f"{bad[0].op.value} is not elementwise"
    return Shape(GroupKind.ELEMENTWISE, nodes[0].shape if nodes else ()), ""


def _check_reduce(nodes: list[Node], reds: list[Node]) -> tuple[Shape | None, str]:
    keys = {reduce_key(r) for r in reds}
    if len(keys) > 1:
        (d1, a1), (d2, a2) = sorted(keys)[:2]
        what = "axes" if d1 == d2 else "domains"
        return None, f"reductions over different {what} ({list(d1)} axes {a1} vs {list(d2)} axes {a2})"
    domain, axes = next(iter(keys))
    keep, drop = outer_shapes(domain, axes)
    member = set(nodes)
    level: dict[Node, str] = {}
    after = _after_reductions(nodes)
    reshaped = _reshaped_producers(nodes, domain, after)
    for n in nodes:
        ins = {level[i] for i in n.inputs if i in member}
        if n.op in REDUCE:
            if ins - {"full"}:
                return None, "a reduction of a reduced value over the same axes"
            level[n] = "reduce"
        elif ins & {"reduce", "outer"}:
            if n.op is Op.BROADCAST and n.shape == domain:
                if _padded(n.inputs[0].shape, len(domain)) != keep:
                    return None, (f"a reduced value of shape {list(n.inputs[0].shape)} broadcast to "
                                  f"{list(domain)} does not line up with the reduced axes {axes}")
                level[n] = "full"
            elif n.shape in (keep, drop) and n.op in ELEMENTWISE | {Op.RESHAPE}:
                level[n] = "outer"
            else:
                return None, (f"{n.op.value} of a reduced value to shape {list(n.shape)} (row kernels "
                              f"only broadcast reduced values back to {list(domain)})")
        elif n.shape != domain and n.shape in (keep, drop) and n.op in ELEMENTWISE and n not in reshaped:
            # a row-level value from the kernel's own row-level inputs (Adafactor's 0.8 * vr beside
            # the row mean it is added to): computed once a row, as a reduced value's epilogue is
            level[n] = "outer"
        else:
            if n.shape != domain and n not in reshaped:
                return None, (f"{n.op.value} of shape {list(n.shape)} computed inside a row kernel "
                              f"over {list(domain)}")
            if n.op in MOVEMENT and n in after:
                # a permute/slice/reshape of a full-level value that needs a reduced one reads it at
                # another row's index, which this row's kernel does not hold (cuda fuzz seed 55 #817)
                return None, (f"{n.op.value} of a value computed from a reduction would read another "
                              f"row inside a row kernel over {list(domain)}")
            level[n] = "full"
    return Shape(GroupKind.REDUCE, domain, axes, reds[0]), ""


def _after_reductions(nodes: list[Node]) -> set[Node]:
    """The members of a node set (in graph order) computed from one of its reductions."""
    after: set[Node] = set()
    for n in nodes:
        if n.op in REDUCE or any(i in after for i in n.inputs):
            after.add(n)
    return after


def _reshaped_producers(nodes: list[Node], domain: tuple, after: set) -> set[Node]:
    """The members computed before the group's reductions, elementwise or by movement, whose
    elements are the domain's and which reach it only through reshapes to it
    (``x.astype(np.float32).reshape(n, groups, -1)``): the row kernel computes each of their
    elements once, at the position its reshape reads, as it reads an input there. And 0-d
    elementwise values (``x / temp``'s cast of a Python float): a value the kernel computes where
    it reads it, not a launch of its own before it (4 us of a softmax's 40 on an H200)."""
    users: dict[Node, list[Node]] = {n: [] for n in nodes}
    for n in nodes:
        for i in n.inputs:
            if i in users:
                users[i].append(n)
    size = math.prod(domain)
    ok: set[Node] = set()
    for n in reversed(nodes):
        if n.shape != domain and n not in after and n.op in POINTWISE | MOVEMENT and n.op is not Op.BROADCAST \
                and users[n] and (n.shape == () and n.op in POINTWISE or math.prod(n.shape) == size
                                  and all(u in ok or (u.op is Op.RESHAPE and u.shape == domain) for u in users[n])):
            ok.add(n)
    return ok


def _check_scan(nodes: list[Node], scans: list[Node]) -> tuple[Shape | None, str]:
    """Scans along one axis of one shape, their producers and consumers, all of that shape (a
    "scan" kernel whose one inner dim is the scan axis, run in order); a movement of a scanned
    value would read another position of the row, which the running value is not."""
    keys = {reduce_key(s) for s in scans}
    if len(keys) > 1:
        (d1, a1), (d2, a2) = sorted(keys)[:2]
        return None, f"scans over different axes or shapes ({list(d1)} axis {a1[0]} vs {list(d2)} axis {a2[0]})"
    domain, axes = next(iter(keys))
    after: set[Node] = set()
    for n in nodes:
        if n.shape != domain:
            return None, f"{n.op.value} of shape {list(n.shape)} computed inside a scan kernel over {list(domain)}"
        if n.op in SCAN or any(i in after for i in n.inputs):
            if n.op in MOVEMENT:
                return None, (f"{n.op.value} of a scanned value would read another position inside a scan "
                              f"kernel over {list(domain)}")
            after.add(n)
    return Shape(GroupKind.SCAN, domain, axes, scans[0]), ""


def _check_scatter(nodes: list[Node], scatters: list[Node], other: bool,
                   shapes: bool = True) -> tuple[Shape | None, str]:
    """One SCATTER with the elementwise producers of its values and indices (all of its domain;
    ``shapes=False``: of any shape, as the cheap producers a kernel recomputes may be); its base is
    written before the kernel runs and its result is complete only when it ends."""
    if len(scatters) > 1:
        return None, "two scatters cannot share a kernel"
    sc = scatters[0]
    if other:
        return None, "a scatter shares its kernel only with the elementwise producers of its values and indices"
    domain = sc.inputs[1].shape
    for n in nodes:
        if n is sc:
            continue
        if n is sc.inputs[0]:
            return None, "the array a scatter writes into is copied into its output before the scatter runs"
        if sc in n.inputs:
            return None, ("a scattered array is complete only when the scatter's kernel ends: "
                          "its readers run in a later kernel")
        if (shapes and n.shape != domain) or n.op not in POINTWISE | MOVEMENT | LEAF:
            return None, (f"{n.op.value} of shape {list(n.shape)} is not an elementwise producer of "
                          f"a scatter over {list(domain)}")
    return Shape(GroupKind.SCATTER, domain, (), sc), ""


def _operand_chains(mm: Node) -> set:
    """The PERMUTE and CAST nodes under each operand down to its first other op (``w.astype(t).T``:
    the contraction's operand steps)."""
    out = set()
    for x in mm.inputs:
        while x.op in (Op.PERMUTE, Op.CAST):
            out.add(x)
            x = x.inputs[0]
    return out


def _check_matmul(nodes: list[Node], mm: Node) -> tuple[Shape | None, str]:
    after, chain = {mm}, _operand_chains(mm)
    for n in nodes:
        if n is mm:
            continue
        if any(i in after for i in n.inputs):
            if n.shape != mm.shape or n.op not in ELEMENTWISE | MOVEMENT:
                return None, f"{n.op.value} to shape {list(n.shape)} is not a matmul epilogue"
            after.add(n)
        elif n.op is Op.CAST and n in chain and not any(i in nodes for i in n.inputs):
            continue
        elif n.op is Op.PERMUTE and n in chain:
            continue
        else:
            return None, f"{n.op.value} is neither an operand cast nor an epilogue of the matmul"
    return Shape(GroupKind.MATMUL, mm.shape, (), mm), ""


def is_free(n: Node, free: set[Node]) -> bool:
    """A movement chain over leaves: pure index math, pulled into every kernel that reads it."""
    return n.op in MOVEMENT and all(i.op in LEAF or i in free for i in n.inputs)


def output_views(graph: Graph) -> set[Node]:
    """Graph outputs that are reshapes of a computed value read by nothing else: returned as a
    reshape of the kernel output that holds the value (C-contiguous, so a view: GroupNorm's
    ``y.reshape(N, C, H, W)``), not copied by a kernel of their own (``Plan.views``)."""
    read = {i for n in graph.nodes() for i in n.inputs}
    return {o for o in graph.outputs if o.op is Op.RESHAPE and o.size > 1 and o not in read
            and o.inputs[0].op not in LEAF and o.inputs[0].op is not Op.RESHAPE}


class Clustering:
    """Mutable planning state (local to one ``plan()`` call)."""

    def __init__(self, graph: Graph, *, keep_clustered: Iterable[Node] = ()):
        self.graph = graph
        self.order_list = graph.nodes()
        self.order = {n: i for i, n in enumerate(self.order_list)}
        self.views = output_views(graph)
        self.outputs = (set(graph.outputs) - self.views) | {v.inputs[0] for v in self.views}
        keep = set(keep_clustered)
        self.free: set[Node] = set()
        for n in self.order_list:
            if is_free(n, self.free) and n not in self.outputs and n not in keep:
                self.free.add(n)
        self.home: dict[Node, int] = {}
        self.members: dict[int, set[Node]] = {}
        self.pulled: dict[int, set[Node]] = {}
        self.refused: list[Refusal] = []
        self.notes: dict[int, list[str]] = {}
        for n in self.order_list:
            if n.op is Op.INPUT or n in self.free or n in self.views or (n.op is Op.CONST and n not in self.outputs | keep):
                continue
            cid = len(self.members)
            self.home[n] = cid
            self.members[cid] = {n}
            self.pulled[cid] = set()
            self.notes[cid] = []

    # -- views -------------------------------------------------------------------------------------
    def clusters(self) -> list[int]:
        return sorted(self.members, key=lambda c: min(self.order[n] for n in self.members[c]))

    def nodeset(self, cid: int) -> set[Node]:
        return self.members[cid] | self.pulled[cid]

    def shape(self, cid: int) -> Shape:
        s, _ = classify(self.members[cid], self.order)
        assert s is not None, self.members[cid]
        return s

    def reads(self, cid: int) -> set[Node]:
        """Computed nodes of other clusters that cluster ``cid`` reads."""
        ns = self.nodeset(cid)
        return {i for n in ns for i in n.inputs if i in self.home and i not in ns}

    def dag(self) -> Dag:
        g = Dag()
        g.add_nodes_from(self.members)
        for c in self.members:
            for i in self.reads(c):
                g.add_edge(self.home[i], c)
        return g

    def describe(self, cid: int) -> str:
        ops = [n.op.value for n in sorted(self.members[cid], key=self.order.__getitem__)
               if n.op not in MOVEMENT]
        if not ops:
            ops = [n.op.value for n in self.members[cid]]
        return brief(ops, min(self.members[cid], key=self.order.__getitem__))

    def refuse(self, what: str, reason: str, between: tuple[int, int] | None = None) -> None:
        """Record a refused fusion; ``between``: the two clusters it would have joined."""
        nodes = tuple(min(self.members[c], key=self.order.__getitem__) for c in between) if between else ()
        r = Refusal(what, reason, nodes)
        if r not in self.refused:
            self.refused.append(r)

    # -- merging -----------------------------------------------------------------------------------
    def hull(self, cids: Iterable[int], dag: Dag | None = None) -> set[int]:
        dag = dag if dag is not None else self.dag()
        s = set(cids)
        desc = set().union(*(descendants(dag, c) for c in s))
        anc = set().union(*(ancestors(dag, c) for c in s))
        return s | (desc & anc)

    def can_merge(self, a: int, b: int, dag: Dag | None = None) -> tuple[set[int] | None, str]:
        hull = self.hull((a, b), dag)
        home = set().union(*(self.members[c] for c in hull))
        shape, why = classify(home, self.order)
        if shape is not None and shape.kind == GroupKind.REDUCE:
            shape, why = self._reshaped_inside(home, shape)
        if shape is not None:
            return hull, ""
        extra = hull - {a, b}
        if extra:
            via = ", ".join(self.describe(c) for c in sorted(extra))
            ok, _ = classify(self.members[a] | self.members[b], self.order)
            if ok is not None:
                return None, f"would create a cycle between kernels through {via}"
        return None, why

    def _reshaped_inside(self, home: set[Node], shape: Shape) -> tuple[Shape | None, str]:
        """``shape``, unless a member of another shape than the row kernel's domain (a reshaped
        producer, ``_reshaped_producers``) is also read outside the kernel or returned: the kernel
        stores only values of its domain."""
        users = self.__dict__.get("_users")
        if users is None:
            users = self._users = self.graph.users()
        nodes = sorted(home, key=self.order.__getitem__)
        outside = [n for n in _reshaped_producers(nodes, shape.domain, _after_reductions(nodes))
                   if n in self.outputs or any(u not in home for u in users.get(n, ()))]
        if outside:
            n = min(outside, key=self.order.__getitem__)
            return None, (f"{n.op.value} of shape {list(n.shape)}, reshaped inside a row kernel over "
                          f"{list(shape.domain)}, is also used outside it")
        return shape, ""

    def merge(self, a: int, b: int, dag: Dag | None = None, *, record: bool = True) -> bool:
        """Merge clusters ``a`` and ``b`` (and what lies between them); record a refusal if not."""
        if a == b or a not in self.members or b not in self.members:
            return False
        hull, why = self.can_merge(a, b, dag)
        if hull is None:
            if record:
                self.refuse(f"fuse {self.describe(a)} with {self.describe(b)}", why, (a, b))
            return False
        keep = min(hull, key=lambda c: min(self.order[n] for n in self.members[c]))
        for c in hull:
            if c == keep:
                continue
            for n in self.members.pop(c):
                self.home[n] = keep
                self.members[keep].add(n)
            self.pulled[keep] |= self.pulled.pop(c)
            self.notes[keep] += self.notes.pop(c)
        self.pulled[keep] -= self.members[keep]
        return True

    def neighbours(self, cid: int, dag: Dag) -> tuple[list[int], list[int]]:
        key = lambda c: min(self.order[n] for n in self.members[c])  # noqa: E731
        return (sorted(dag.predecessors(cid), key=key), sorted(dag.successors(cid), key=key))


def verify_group(g: KernelGroup, order: dict[Node, int] | None = None) -> list[str]:
    """Problems of a built group against the plan.py contract (empty when it is fine)."""
    problems = []
    nodes = set(g.nodes)
    order = order or {n: i for i, n in enumerate(g.nodes)}
    if g.kind == GroupKind.ELEMENTWISE:
        shapes = {o.shape for o in g.outputs}
        if shapes and shapes != {tuple(g.domain)}:
            problems.append(f"outputs of shapes {shapes} in an elementwise group over {g.domain}")
        for n in g.nodes:
            if n.op not in POINTWISE | MOVEMENT | LEAF:
                problems.append(f"{n.op.value} in an elementwise group")
    elif g.kind == GroupKind.SCATTER:
        scatters = [n for n in g.nodes if n.op is Op.SCATTER]
        shape, why = _check_scatter(list(g.nodes), scatters, any(n.op in REDUCE | SCAN | {Op.MATMUL} for n in g.nodes),
                                    shapes=False) if scatters else (None, "no scatter")
        if shape is None or shape.anchor is not g.anchor:
            problems.append(why or "the anchor is not the group's scatter")
        for o in g.outputs:
            if o is not g.anchor and o.shape != tuple(g.domain):
                problems.append(f"output of shape {o.shape} in a scatter group over {g.domain}")
    elif g.kind == GroupKind.ATTENTION:
        parts = g.attention.copies + g.attention.parts
        if len(g.attention.parts) != 3 or set(g.nodes) != {n for p in parts for n in p.nodes}:
            problems.append("an attention group is not its three parts")
        problems += [f"part {p.id}: {why}" for p in parts for why in verify_group(p, order)]
    elif g.kind in (GroupKind.REDUCE, GroupKind.SCAN, GroupKind.MATMUL):
        computed = [n for n in g.nodes if n.op not in LEAF and not _index_only(n, nodes)]
        if g.kind == GroupKind.MATMUL:      # not the values its epilogue recomputes (recompute's pulls)
            after = {g.anchor}
            for n in sorted(computed, key=order.__getitem__):
                if any(i in after for i in n.inputs):
                    after.add(n)
            computed = [n for n in computed if n in after or n in g.anchor.inputs]
        shape, why = classify(computed, order)
        if shape is None or shape.kind != g.kind:
            problems.append(why or f"classified as {shape.kind if shape else None}")
        elif g.kind == GroupKind.REDUCE:
            keep, drop = outer_shapes(g.domain, g.axes)
            for o in g.outputs:
                if o.shape not in (tuple(g.domain), keep, drop):
                    problems.append(f"output of shape {o.shape} in a reduce group over {g.domain}")
    for i in g.inputs:
        if i.op is Op.CONST:
            problems.append("a CONST among the inputs")
        if i in nodes:
            problems.append(f"input {i!r} is also computed in the group")
    for n in g.nodes:
        for i in n.inputs:
            if i not in nodes and i not in g.inputs:
                problems.append(f"{n!r} reads {i!r}, which is neither computed nor an input")
    return problems


def _index_only(n: Node, nodes: set[Node]) -> bool:
    """A movement chain over leaves inside a group (index math; no contract level)."""
    if n.op is Op.GATHER:                       # its index arrays too, not only its source
        return all(_index_only(i, nodes) for i in n.inputs)
    if n.op in MOVEMENT:
        return _index_only(n.inputs[0], nodes)
    return n.op in LEAF
