"""An attention group (``fusion.attention``) lowered to what its one kernel needs.

:func:`lower_attention` gives a KernelIR of kind ``attention``: the group's buffers, no phases,
and in ``attention`` an :class:`AttentionIR`: the kernel's spec (``codegen.attention_cuda``) and
where q, k, v and the score's arrays are among the group's inputs. The score function is the
first product's group lowered as any matmul group is (``lower.lower_group``): its statements after
the contraction, the product's load becoming the accumulator, over ``(b, m, n)``: the last two
domain dims are the query and key, the leading ones the batch (flattened to one ``b``; a score
array may vary along it only when there is one).
"""
from __future__ import annotations

import dataclasses

from ..errors import UnsupportedError
from . import kernel_ir as K
from ..fusion.attention import operands
from .attention_cuda import AttentionSpec, ScoreFn

_SHORT = {"float16": "f16", "bfloat16": "bf16"}


@dataclasses.dataclass(frozen=True)
class AttentionIR:
    """``q``, ``k``, ``v``: their slots in the group's inputs; ``perms``: the transposes of them
    the products read (``fusion.attention.view_of``; k's gives k^T, (..., d, n)), then broadcast
    to q's batch dims; ``score_inputs``: per score array its slot and, for the batch, query and key
    coords, the array's axis along which it varies (None: broadcast along that coord)."""
    spec: AttentionSpec
    q: int
    k: int
    v: int
    perms: tuple = ()
    score_inputs: tuple = ()
    causal_offset: int = 0

    def __str__(self) -> str:
        s = self.spec
        views = ", ".join(f"{n}=in{i}" + (f".transpose{p}" if p != tuple(range(len(p))) else "")
                          for n, i, p in zip(("q", "k^T", "v"), (self.q, self.k, self.v), self.perms))
        lines = [f"attention {s.dtype} head dim {s.head_dim}: {views}"
                 + (f", causal: keys n <= m + {self.causal_offset}" if s.causal else "")]
        lines.append("  score(b, m, n):")
        lines.append(f"    {s.score.product}: float32 = q[b, m] . k[b, n]")
        lines += [f"    {st}" for st in s.score.body]
        lines.append(f"    -> {s.score.result}")
        return "\n".join(lines)


def _coords(rank: int) -> dict:
    names = {f"i{rank - 2}": "m", f"i{rank - 1}": "n"}
    if rank == 3:
        names["i0"] = "b"
    return names


def _rename(e, names: dict):
    if isinstance(e, K.IVar):
        if e.name not in names:
            raise UnsupportedError("kfuse: attention: the score reads an index along more than one batch dim")
        return K.IVar(names[e.name])
    if isinstance(e, K.IBin):
        return K.IBin(e.op, _rename(e.lhs, names), _rename(e.rhs, names))
    return e


def _score(kir1, slot_of: list, rank: int, known: dict):
    """``(ScoreFn, score_inputs)`` from the scores' KernelIR (``slot_of[k]``: the group slot of
    its input ``k``; ``known``: group slot -> the value every load of it is taken as, a causal
    mask the kernel tests by index instead)."""
    c = kir1.contraction
    names = _coords(rank)
    body, inputs, where, product, result = [], [], [], None, None
    ph = kir1.phases[0] if len(kir1.phases) == 1 and not kir1.phases[0].has_loop else None
    if ph is None:
        raise UnsupportedError("kfuse: attention: the score is not one elementwise phase")
    for s in ph.pre:
        if isinstance(s, K.Load) and s.buf == c.result:
            product = s.dst
        elif isinstance(s, K.Load) and slot_of[s.buf] in known:
            body.append(K.Const(s.dst, s.dtype, known[slot_of[s.buf]]))
        elif isinstance(s, K.Load) and slot_of[s.buf] is None:
            raise UnsupportedError("kfuse: attention: the score reads an operand view the kernel does not pass")
        elif isinstance(s, K.Load):
            axes = {"b": None, "m": None, "n": None}
            for ax, e in enumerate(s.index):
                if isinstance(e, K.IVar):
                    axes[_rename(e, names).name] = ax
                elif not (isinstance(e, K.ILit) and e.value == 0):
                    raise UnsupportedError("kfuse: attention: a score array is read other than broadcast")
            where.append((slot_of[s.buf], axes["b"], axes["m"], axes["n"]))
            inputs.append(s.dtype)
            index = tuple(K.lit(0) if axes[x] is None else K.IVar(x) for x in "bmn")
            body.append(K.Load(s.dst, s.dtype, len(inputs) - 1, index))
        elif isinstance(s, K.Index):
            body.append(dataclasses.replace(s, expr=_rename(s.expr, names)))
        elif isinstance(s, (K.Const, K.Op)):
            body.append(s)
        elif isinstance(s, K.Store) and not s.combine and result is None:
            result = s.src
        else:
            raise UnsupportedError(f"kfuse: attention: no score rule for {s}")
    if product is None or result is None:
        raise UnsupportedError("kfuse: attention: the score kernel has no product or no result")
    return ScoreFn(tuple(body), result, tuple(inputs), 0, product), tuple(where)


def lower_attention(group, lower_group) -> K.KernelIR:
    """The KernelIR of attention group ``group`` (``lower_group`` lowers its first part)."""
    g1, _, g3 = group.attention.parts
    (q, q_perm), (k, kt_perm), (v, v_perm) = operands(g1.anchor, g3.anchor)
    kir1 = lower_group(g1)
    slot = {n: i for i, n in enumerate(group.inputs)}
    match = group.attention
    known = {slot[match.mask]: match.keep} if match.causal is not None else {}
    # (the products' operands are no score loads: a k broadcast over heads is read as k itself)
    score, where = _score(kir1, [slot.get(n) for n in g1.inputs], len(g1.anchor.shape), known)
    causal = match.causal
    out = group.outputs[0]
    spec = AttentionSpec(_SHORT[q.dtype.name], q.shape[-1], score, causal is not None,
                         _SHORT.get(out.dtype.name, "f32"))
    ir = AttentionIR(spec, slot[q], slot[k], slot[v], (q_perm, kt_perm, v_perm), where, causal or 0)
    inputs = tuple(K.Buffer(f"in{i}", n.dtype.name, n.ndim, n.shape) for i, n in enumerate(group.inputs))
    return K.KernelIR(name=f"k{group.id}", kind=group.kind, inputs=inputs,
                      outputs=(K.Buffer("out0", out.dtype.name, out.ndim, out.shape),), sizes=(),
                      domain=tuple(K.lit(e) for e in out.shape), outer=(), inner=(), phases=(),
                      attention=ir)
