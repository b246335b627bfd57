"""Where-arms as branches in the Numba-CUDA emitter's elementwise kernels (a mixin of
``codegen.numba_cuda._Gen``): the plan of :mod:`kfuse.codegen.cuda_branches` (a ``where`` selecting
by loop indices alone, one of whose arms computes more than cheap arithmetic: the statements
feeding only that arm move into an ``if``/``else`` around it), rendered as Python. An element of
``concatenate([x, x * x, sin(z)], 1)`` then loads and computes its own piece only, not every
piece and a chain of selects (CUDA C: 285 -> 161 us, H200).

A unit's indices and its loads outside every arm (16-byte vectors along the row, loads read once
a unit, and with single-element units the plain loads) come first, for every unit of the trip;
then each element's statements, each planned ``where`` as ``if c: ... <dst> = arm`` / ``else: ...``
(its value the ``where``'s own casts: ``where(c, a, a)``), then the unit's vector stores."""
from __future__ import annotations

import dataclasses

from . import kernel_ir as K
from .cuda_branches import sink


def branch_plan(kir: K.KernelIR) -> dict | None:
    """:func:`codegen.cuda_branches.sink`'s plan for an elementwise kernel's statements, or None."""
    return sink(kir.phases[0].pre) if kir.phases else None


class BranchEmitter:
    """Elementwise units with branching where-arms, for ``codegen.numba_cuda._Gen``."""

    def branch_lanes(self, stmts: list, plan: dict, dims: list, n: int, vec: int) -> list[str]:
        """``n`` units (grid-stride steps apart) of ``vec`` elements each, ``stmts`` (the phase's
        statements, in order) with ``plan``'s wheres as branches."""
        last = f"i{dims[-1]}" if dims else ""
        outer = {f"i{d}" for d in dims[:-1]}
        armed = set().union(*(t | o for t, o in plan.values()))
        vload, vstore, once, early = set(), set(), set(), set()
        for j, s in enumerate(stmts):
            if isinstance(s, (K.Load, K.Store)) and self.along(s, last, vec):
                (vload if isinstance(s, K.Load) else vstore).add(j)
            elif isinstance(s, K.Load) and vec > 1 and (self.kir.inputs[s.buf].host
                                                        or set().union(*map(K.expr_vars, s.index)) <= outer):
                once.add(j)
            elif isinstance(s, K.Load) and vec == 1 and j not in armed and not K.gathers(s.index):
                early.add(j)
        names = [[f"_{k}_{e}" if n * vec > 1 else "" for e in range(vec)] for k in range(n)]
        out: list[str] = []
        for k in range(n):          # every unit's indices and loads outside the arms, first
            self.sfx = names[k][0]
            out.append(f"{self.n('u_')} = u_ + {k} * step_" if k else f"{self.n('u_')} = u_")
            self.decompose(self.n("u_"), dims, out, vec)
            out += self.element_indices(dims, names[k])
        for j in sorted(vload | once | early):
            s = stmts[j]
            for k in range(n):
                if j in vload:
                    out += self._vector_load(s, names[k])
                    continue
                self.sfx = names[k][0]
                out.append(self.stmt(s))
                out += [f"{s.dst}{x} = {s.dst}{names[k][0]}" for x in names[k][1:]]
        done = vload | once | early | vstore
        for k in range(n):
            for x in names[k]:
                self.sfx = x
                out += self._branched(stmts, plan, done)
            out += [self._vector_store(stmts[j], names[k]) for j in sorted(vstore)]
        self.sfx = ""
        return out

    def _branched(self, stmts: list, plan: dict, done: set) -> list[str]:
        """One element's lines (suffix ``self.sfx``): the statements not in ``done``, each planned
        where an ``if``/``else`` holding the statements only its arm reads."""
        owner: dict[int, int] = {}
        for w in sorted(plan):              # an inner where (earlier) claims its arms first
            for j in plan[w][0] | plan[w][1]:
                owner.setdefault(j, w)

        def line(s) -> list[str]:
            text = self.stmt(s)
            return [text] if text else []

        def block(members: list[int]) -> list[str]:
            out: list[str] = []
            for k in members:
                s = stmts[k]
                if k in done:
                    continue
                if k not in plan:
                    out += line(s)
                    continue
                then, other = plan[k]
                for head, arm, value in (("if", then, s.args[1]), ("else", other, s.args[2])):
                    out.append(f"if {self.n(s.args[0])}:" if head == "if" else "else:")
                    inner = block(sorted(j for j in arm if owner.get(j) == k))
                    inner += line(dataclasses.replace(s, args=(s.args[0], value, value)))
                    out += ["    " + x for x in inner]
            return out
        return block([k for k in range(len(stmts)) if k not in owner])
