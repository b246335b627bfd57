"""The chunk plan of a call on Dask arrays, as ``kfuse.explain`` prints it: per layer its kind,
the kfuse ops its tasks run, its shape, its number of tasks and the bytes it moves between
workers. Moved bytes are estimates: a rechunk moves its array once; a blockwise layer copies an
input with fewer chunks than its output to each task reading it; a reduction moves its chunks'
partials to the combine tasks; a blocked product sends each block of one operand to every block
column (row) of the other."""
from __future__ import annotations

import dataclasses

from ..logs import fmt_bytes


@dataclasses.dataclass(frozen=True)
class ChunkPlan:
    name: str
    layers: tuple

    @property
    def tasks(self) -> int:
        return sum(layer.tasks for layer in self.layers)

    @property
    def rechunks(self) -> int:
        return sum(layer.kind == "rechunk" for layer in self.layers)

    @property
    def moved(self) -> int:
        return sum(layer.moved for layer in self.layers)

    def __str__(self) -> str:
        lines = [f"chunk plan for {self.name}: {len(self.layers)} Dask layer(s), {self.tasks} task(s), "
                 f"{self.rechunks} rechunk(s), ~{fmt_bytes(self.moved)} moved between workers",
                 f"  {'layer':<6}{'kind':<11}{'tasks':>7}  {'moved':>10}  {'shape':<18}ops"]
        for k, layer in enumerate(self.layers):
            lines.append(f"  {k:<6}{layer.kind:<11}{layer.tasks:>7}  {fmt_bytes(layer.moved):>10}  "
                         f"{str(list(layer.shape)):<18}{layer.what}")
        return "\n".join(lines)
