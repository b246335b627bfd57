"""Peeled rows in the Numba-CUDA emitter (a mixin of ``codegen.numba_cuda._Gen``, used by
:mod:`kfuse.codegen.numba_cuda_rows`): CUDA C's ``Variant.peel`` (:mod:`kfuse.codegen.cuda_peel`) for
rows whose start is not a whole number of vectors from an aligned address (odd widths, sliced
views). Once a row, ``h_``: the elements up to the first one the row's *lead* access (its first
load of a full row) has 16-byte aligned, from that access's address (``numba_cuda_mem.addr``);
``units_`` full vector units from ``h_``; and ``rem_`` head and tail elements (at most
``2 vec - 2``), which the row's threads (a packed row's lanes) take one each after a pass's units,
their terms accumulated after the units' (the order fixed by the row's length and alignment:
deterministic). Any other vector access whose address at ``h_`` is not aligned as well (a flag a
row, the same for every thread) reads (``ldl``) or writes (``stvp``) its units element by
element."""
from __future__ import annotations

import numpy as np

from . import kernel_ir as K


def _key(s) -> tuple:
    return ("in" if isinstance(s, K.Load) else "out", s.buf, s.index)


class PeelEmitter:
    """Peeled rows for ``codegen.numba_cuda._Gen``."""

    _peel_flags: dict = {}      # (in/out, buf, index) -> the row's alignment flag (absent: aligned as the lead)

    def _itemsize(self, s) -> int:
        dt = s.dtype if isinstance(s, K.Load) else self.kir.outputs[s.buf].dtype
        return 1 if dt == "bool" else np.dtype(dt).itemsize

    def _addr(self, s) -> str:
        kind = "in" if isinstance(s, K.Load) else "out"
        return f"addr({kind}{s.buf}, {self.offset(kind, s.buf, s.index)})"

    def peel_head(self, inner: list) -> list[str]:
        """Once a row: ``h_``, ``units_``, ``rem_`` and each other vector access's flag."""
        V, last = self.v.vec, f"i{inner[-1]}"
        accesses: dict = {}
        for ph in self.kir.phases:
            for s in ph.body:
                if isinstance(s, (K.Load, K.Store)) and self.along(s, last, V):
                    accesses.setdefault(_key(s), s)
        # the lead: the first load of a full row (its index uses the row's variables), not a weight
        # every row reads (its head would be the same for every row, the row's own one not)
        row_vars = {f"i{d}" for d in self.kir.outer}
        loads = [s for s in accesses.values() if isinstance(s, K.Load)]
        rows = [s for s in loads if row_vars & set().union(*map(K.expr_vars, s.index))]
        lead = next(iter(rows + loads + list(accesses.values())), None)
        self._peel_flags = {}
        out = ["h_ = np.int64(0)"]
        if lead is not None:
            out += [f"{last} = np.int64(0)",
                    f"h_ = min((-({self._addr(lead)} // {self._itemsize(lead)})) & {V - 1}, row_len_)"]
        out += [f"units_ = (row_len_ - h_) // {V}", f"rem_ = row_len_ - units_ * {V}", f"{last} = h_"]
        for k, s in accesses.items():
            if lead is not None and k != _key(lead):
                flag = self._peel_flags[k] = f"al{len(self._peel_flags)}_"
                out.append(f"{flag} = {self._addr(s)} % {self._itemsize(s) * V} == 0")
        return out

    def peel_index(self, j: str, inner: list) -> str:
        """The position of unit ``j`` of a peeled row: ``h_`` elements in, ``vec`` a unit."""
        return f"{self.n(f'i{inner[-1]}')} = h_ + {j} * {self.v.vec}"

    def peel_flag(self, s) -> str | None:
        """The row's alignment flag of vector access ``s`` (None: aligned as the lead, or no peel)."""
        return self._peel_flags.get(_key(s)) if self.v.peel else None

    def peel_rest(self, ph: K.Phase, inner: list) -> list[str]:
        """After a pass's units: the row's head and tail elements, one a thread (a packed row's
        lanes), each through the pass's body and accumulator steps."""
        v, last = self.v, f"i{inner[-1]}"
        start, step = ("lane_", str(v.lanes)) if v.packed else ("tid_", "bdim_")
        self.sfx = ""
        lines = [f"{last} = t_ if t_ < h_ else t_ + units_ * {v.vec}"]
        for s in ph.body:
            line = self.stmt(s)
            if line:
                lines += self._spare_guard(line) if isinstance(s, K.Store) else [line]
        for a in ph.accs:
            lines += self.acc_step(a)
        return [f"t_ = {start}", "while t_ < rem_:"] + ["    " + x for x in lines + [f"t_ += {step}"]]
