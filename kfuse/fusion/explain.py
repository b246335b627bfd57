"""The one text form of a plan (``kfuse explain``, ``str(plan)``, the ``fused`` stage): per kernel
its kind, ops, arrays read and written (and arguments written in place), bytes, FLOPs, intensity,
predicted time and whether it is memory- or compute-bound; then every refused fusion and why.
:func:`brief` is the short label of a kernel's ops that refusals name it by.

``plan.Plan.__str__`` calls :func:`format_plan`; this module reads plans and groups by their
attributes and imports nothing from ``plan`` (which imports it).
"""
from __future__ import annotations

from collections import Counter

from ..ir.dtypes import short_name
from .cost import _fmt_bytes
from .kinds import GroupKind


def _ops(g, limit: int = 12) -> str:
    ops = g.ops
    if not ops:
        return "copy"
    if len(ops) <= limit:
        return " ".join(ops)
    counts = Counter(ops)
    return " ".join(f"{k}x{v}" if v > 1 else k for k, v in counts.items())


def brief(ops, first=None) -> str:
    """``[op/op/...] (file:line)``: up to six op names and the source line of the first node."""
    loc = f" ({first.loc})" if first is not None and first.loc else ""
    return "[" + "/".join(ops[:6]) + ("/..." if len(ops) > 6 else "") + "]" + loc


def _arrays(nodes) -> str:
    return ", ".join(f"{short_name(n.dtype)}{list(n.shape)}" for n in nodes) or "-"


def format_kernel(g) -> list[str]:
    """The lines of one ``plan.KernelGroup``."""
    head = f"kernel {g.id}: {g.kind}"
    if g.kind == GroupKind.SCAN:
        head += f" along axis {g.axes[0]} of {list(g.domain)}"
    elif g.kind == GroupKind.REDUCE:
        head += f" over axes {g.axes} of {list(g.domain)}"
    elif g.domain:
        head += f" over {list(g.domain)}"
    head += "".join(f" (writes {b.attr('name')!r} in place)" for _, b in g.in_place)
    lines = [head, f"    ops:    {_ops(g)}",
             f"    reads:  {_arrays(g.inputs)}", f"    writes: {_arrays(g.outputs)}"]
    c = g.cost
    if c is not None:
        lines.append(f"    bytes:  {_fmt_bytes(c.bytes_read)} read + {_fmt_bytes(c.bytes_written)} "
                     f"written" + (f" (row re-read {c.passes}x)" if c.passes > 1 else ""))
        lines.append(f"    flops:  {c.flops:.4g}   intensity {c.intensity:.3g} FLOP/B")
        lines.append(f"    time:   {c.seconds * 1e6:.2f} us predicted, {c.bound}-bound "
                     f"(memory {c.memory_seconds * 1e6:.2f} us, compute {c.compute_seconds * 1e6:.2f} us)")
    if c is not None and getattr(c, "impl", ""):
        lines.append(f"    impl:   {c.impl} (" + ", ".join(f"{k} {v * 1e6:.2f} us" for k, v in c.candidates)
                     + (f"; {c.impl_note}" if c.impl_note else "") + ")")
    if g.reason:
        lines.append(f"    why:    {g.reason}")
    return lines


def format_plan(plan) -> str:
    """The text of a ``plan.Plan`` (``str(plan)``)."""
    dev = plan.device
    lines = [f"plan for {plan.graph.name} on {getattr(dev, 'name', dev)}: {len(plan.groups)} kernel(s)"]
    if dev is not None and hasattr(dev, "describe"):
        lines.append(f"  device: {dev.describe()}")
    total = 0.0
    for g in plan.groups:
        lines += ["  " + s for s in format_kernel(g)]
        total += g.cost.seconds if g.cost is not None else 0.0
    if plan.passthrough:
        lines.append(f"  passthrough (returned inputs, no kernel): {_arrays(plan.passthrough)}")
    if plan.views:
        lines.append(f"  views (returned reshapes of kernel outputs, no copy): {_arrays(plan.views)}")
    lines.append(f"  total predicted: {total * 1e6:.2f} us")
    if plan.refused:
        lines.append("  refused fusions:")
        lines += [f"    - {r.what}: {r.reason}" for r in plan.refused]
    else:
        lines.append("  refused fusions: none")
    lines += [f"  {note}" for note in getattr(plan, "notes", ())]
    return "\n".join(lines)

