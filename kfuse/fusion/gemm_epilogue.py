"""GEMM epilogue fusion: a ``MATMUL``, the casts of its operands, and the elementwise chain on
its result (bias, activation, residual add, scaling, output cast) become one "matmul" group."""
from __future__ import annotations

from ..ir.ops import Op
from .legality import Clustering
from .rules import PlanContext, Rule

# Movement on matmul operands: a PERMUTE chain over a graph input (``x.T @ w``) stays free index
# math and is folded into the matmul group (the contraction's ``permute`` steps: a transposed view
# that cuBLAS reads through its trans flag, or strides for the generated kernel; no copy). Any other
# movement (slices, broadcasts, reshapes) is materialised by a copy kernel: the matmul contract
# promises only CAST and PERMUTE steps on operands. False: materialise every operand movement.
OPERAND_MOVEMENT = True


def _permute_of_input(x) -> bool:
    """A PERMUTE chain over an input, with at most casts between the permutes (``w.astype(t).T``:
    the cast folds into the matmul's loads, the permutes into its index math)."""
    while x.op in (Op.PERMUTE, Op.CAST):
        x = x.inputs[0]
    return x.op is Op.INPUT


def _operand_cast(x):
    """The CAST an operand reads under its PERMUTE chain (``w.astype(t).T``), or None."""
    while x.op is Op.PERMUTE:
        x = x.inputs[0]
    return x if x.op is Op.CAST else None


def keep_clustered(graph) -> set:
    """Nodes that must not be treated as free index math: movement feeding a matmul operand
    (except a PERMUTE chain over an input, when OPERAND_MOVEMENT), and the array a scatter writes
    into (a buffer the runtime copies; a constant one is materialised by a kernel of its own), and
    a searched table (read whole by every element: a buffer too)."""
    out = set()
    for n in graph.nodes():
        if n.op in (Op.SCATTER, Op.SEARCHSORTED) and n.inputs[0].op is not Op.INPUT:
            out.add(n.inputs[0])
        if n.op is Op.MATMUL:
            for x in n.inputs:
                if x.op is Op.CAST:
                    x = x.inputs[0]
                if x.op is Op.INPUT or x.op is Op.CONST:
                    continue
                if OPERAND_MOVEMENT and _permute_of_input(x):
                    continue
                out.add(x)
    return out


def operand_nodes(mm) -> set:
    """What a matmul reads as its operands: its inputs and, under their CAST/PERMUTE steps, the
    values those read (the contraction's operand chains)."""
    out, stack = set(), list(mm.inputs)
    while stack:
        x = stack.pop()
        out.add(x)
        if x.op in (Op.CAST, Op.PERMUTE):
            stack.append(x.inputs[0])
    return out


def side_inputs_ok(mm, nodes) -> bool:
    """Whether a matmul group may compute ``nodes`` (elementwise values it reads, recomputed in
    it: a scale's cast to float64 and its broadcast) beside its epilogue: none of them is an
    operand, which the contraction reads from memory."""
    return not (operand_nodes(mm) & set(nodes))


class GemmEpilogue(Rule):
    """Per matmul (each once, in graph order): fold in its operand casts, then absorb consumers
    until nothing more joins."""
    name = "gemm_epilogue"
    fixpoint = False

    def match(self, state: Clustering, ctx: PlanContext):
        return [n for n in state.order_list if n.op is Op.MATMUL]

    def apply(self, state: Clustering, mm, ctx: PlanContext) -> bool:
        changed = self._casts(state, mm)
        while self._epilogue_step(state, mm):
            changed = True
        return changed

    @staticmethod
    def _casts(state: Clustering, mm) -> bool:
        """Operand casts fold into the loads (a cast the caller also gets back is written by its
        own kernel: a matmul kernel writes only arrays of its output's shape)."""
        changed = False
        for y in mm.inputs:
            x = _operand_cast(y)
            if x is not None and x in state.home and state.home[x] != state.home[mm]:
                users = {u for u in state.order_list if x in u.inputs}
                reader = {y if y is not x else mm}
                if users == reader and x not in state.outputs and len(state.members[state.home[x]]) == 1:
                    changed |= state.merge(state.home[mm], state.home[x])
        return changed

    @staticmethod
    def _epilogue_step(state: Clustering, mm) -> bool:
        """Merge the first consumer of the matmul's cluster that can join; whether one did."""
        dag = state.dag()
        cid = state.home[mm]
        _, succ = state.neighbours(cid, dag)
        return any(state.merge(cid, c, dag) for c in succ)


RULE = GemmEpilogue()
