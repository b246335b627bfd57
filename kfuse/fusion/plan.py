"""The fusion plan: which IR nodes run in which kernel, and why.

This is the contract between ``fusion`` (which builds plans) and ``codegen`` (which lowers each
:class:`KernelGroup` to a kernel). A group is one of these kinds (``kinds.GroupKind``):

``"elementwise"``
    ``nodes`` are elementwise, ``CONST`` and movement nodes. All ``outputs`` have one shape, the
    group's ``domain``. The kernel loops over the domain; each output element is computed by
    evaluating its expression tree at that index, movement nodes mapping indices (a transposed,
    sliced or broadcast operand is read through index math, never copied).

``"reduce"`` (reductions, with their producers and consumers; softmax/layernorm "row-wise" too)
    One ``domain`` shape D and one tuple of reduced ``axes`` A, shared by every reduce node in the
    group (each has input shape D). Nodes are
      * full-level: elementwise/movement nodes evaluated at an index of D;
      * reduce nodes (``SUM``, ``MAX``, ... over A);
      * outer-level: elementwise/movement nodes of the reduced shape (keepdims or not) that depend
        on a reduce node (e.g. ``mean = sum / n``, ``rstd = 1/sqrt(var + eps)``).
    A reduce or outer-level value reaches full-level code only through ``BROADCAST`` (optionally
    after a ``RESHAPE`` that only inserts or removes size-1 dims) back to D. Reductions may depend
    on earlier ones (variance on mean). Outputs: full-level nodes of shape D and outer-level or
    reduce nodes. The kernel, per outer index, runs the reductions in order over the reduced
    dims, then writes the outputs (softmax: max, sum, normalise - one kernel, the row read from
    cache). ``anchor``: the first reduce node.

``"scan"``
    Scans (``CUMSUM``...) along one axis A of one shape D (``axes == (A,)``, ``anchor`` the first
    scan), with their producers and elementwise consumers, every node of shape D; no reduction or
    matmul shares it, and no movement reads a scanned value. The kernel runs each row along A in
    order, in one thread (``kernel_ir.Scan``).

``"matmul"``
    One ``MATMUL`` node (``anchor``), optional ``CAST`` nodes on its operands, and an elementwise
    epilogue of the matmul's output shape (bias, activation, residual, scaling, cast).

``"attention"``
    ``softmax(score(q @ k^T)) @ v`` (``fusion.attention``): the nodes of a matmul group (the
    scores), the row-wise softmax group reading them and the matmul group reading the softmax,
    which it keeps (``attention.parts``: a backend without the attention kernel runs those). Its inputs are
    q, k, v and the score's arrays; its one output the second product; ``anchor`` that product.

``"scatter"``
    One ``SCATTER`` node (``anchor``) and the elementwise/movement nodes computing its values and
    index arrays, all of the scatter's domain (its values' shape, the group's ``domain``). Its one
    output is the ``SCATTER`` node (the base's shape): the runtime copies the base (an input of the
    group, never computed in it) into the output buffer, then the kernel writes (or, for a
    ``ufunc.at``, combines) each domain element's value at its position. Nothing reads the scattered
    array inside the kernel that writes it.

Groups are listed in topological order; each group's ``inputs`` are graph ``INPUT`` nodes or
``outputs`` of earlier groups (the buffers that cross kernels). ``CONST`` nodes are never inputs.
A graph output that is an ``INPUT`` node needs no kernel; ``Plan.passthrough`` lists those. A graph
output that is a reshape of a computed value read by nothing else (``legality.output_views``) is
returned as a reshape (a view) of the kernel output holding the value; ``Plan.views`` lists those.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ..ir.graph import Graph, Node
from ..ir.ops import LEAF, MOVEMENT
from ..records import record
from . import aliasing
from .explain import format_kernel, format_plan
from .kinds import GroupKind


@dataclasses.dataclass(frozen=True, eq=False)
class KernelGroup:
    id: int
    kind: GroupKind                 # (a kind's name is accepted and converted)
    nodes: tuple[Node, ...]         # every node computed inside the kernel, topological order
    inputs: tuple[Node, ...]        # nodes read from memory (graph inputs or earlier outputs)
    outputs: tuple[Node, ...]       # nodes written to memory
    domain: tuple[int, ...]         # iteration shape (elementwise: output shape; reduce/scan: D)
    axes: tuple[int, ...] = ()      # reduce/scan: the reduced (scanned) axes of the domain
    anchor: Node | None = None      # matmul/scatter: its MATMUL/SCATTER node; reduce/scan: the first reduce/scan node
    cost: Any = None                # fusion.cost.Cost: bytes, flops, predicted time
    reason: str = ""                # why these nodes are together (for explain)
    # elementwise: (output position, argument INPUT node) pairs, the output being the argument's
    # final value, written into the caller's array itself (see ``aliasing.with_argument_writes``)
    in_place: tuple[tuple[int, Node], ...] = ()
    # attention: the matmul, softmax and matmul groups it stands for (``fusion.attention.Match``)
    attention: Any = None

    def __post_init__(self):
        object.__setattr__(self, "kind", GroupKind(self.kind))

    @property
    def ops(self) -> list[str]:
        return [n.op.value for n in self.nodes if n.op not in LEAF | MOVEMENT]

    @property
    def is_scan(self) -> bool:
        """A scan group (its rows run in order, see above)."""
        return self.kind == GroupKind.SCAN

    def describe(self) -> str:
        """This kernel's part of the plan's text (``explain.format_kernel``)."""
        return "\n".join(format_kernel(self))


@record
class Refusal:
    """A fusion the planner considered and refused, with the reason (cycle, budget, cost).
    ``between``: a node of each side, while planning (the plan restates the refusal in terms of
    its final kernels, see ``pipeline.final_refusals``); empty when not a pair of clusters."""
    what: str
    reason: str
    between: tuple = dataclasses.field(default=(), compare=False, repr=False)


@dataclasses.dataclass(frozen=True, eq=False)
class Plan:
    graph: Graph
    groups: tuple[KernelGroup, ...]
    refused: tuple[Refusal, ...] = ()
    device: Any = None              # fusion.cost.DeviceSpec used for the decisions
    passthrough: tuple[Node, ...] = ()
    views: tuple[Node, ...] = ()    # outputs returned as a reshape of their input's kernel output
    notes: tuple[str, ...] = ()     # lines printed after the plan (``kfuse.explain``: dispatch)

    @property
    def kernels(self) -> list[KernelGroup]:
        return list(self.groups)

    def scatters_in_place(self, g: KernelGroup) -> bool:
        """``aliasing.scatters_in_place``: whether scatter group ``g`` writes into its base's buffer."""
        return aliasing.scatters_in_place(self, g)

    def scatters_into_argument(self, g: KernelGroup) -> bool:
        """``aliasing.scatters_into_argument``: whether scatter group ``g`` writes into its argument."""
        return aliasing.scatters_into_argument(self, g)

    def __str__(self) -> str:
        """The plan's one text form (``explain.format_plan``): per kernel ops, bytes, FLOPs,
        intensity, predicted time, in-place writes; then the refused fusions."""
        return format_plan(self)
