"""Simplification passes over the IR: each a named pure function ``Graph -> Graph``.

Every rewrite here is *exact*: the optimized graph gives the same bits as NumPy on the original.
* CSE is free (nodes are hash-consed); DCE is rebuilding from the outputs.
* ``fold_constants``: CONST-only elementwise subtrees computed with NumPy in the node's dtypes;
  an elementwise op over broadcast constants becomes the broadcast of the folded scalar.
* ``identities``: ``x*1``, ``x/1``, ``x-0.0``, ``x+(-0.0)`` (ints: ``x+0``, ``x-0``) -> x;
  ``x+0.0`` is NOT rewritten (it turns -0.0 into 0.0); a power of a constant exponent becomes
  products where ``ir.power.product_exponent`` says they give NumPy's bits (``x**1``, ``x**2``;
  integer ``x**3``/``x**4``: wraparound is associative), the policy every emitter follows too
  (float ``x**3`` stays a power); ``-(-x) -> x``.
* ``movement``: identity broadcasts/reshapes/permutes/slices dropped, chains merged.
* ``casts``: identity casts dropped; ``cast(cast(x, a), b) -> cast(x, b)`` when the first is
  lossless.
* ``empty``: a computed node with no elements becomes a broadcast constant.
* ``outer``: a matmul over K = 1 becomes ``a * b + 0.0`` (NumPy's sum starts from +0.0).
* ``gathers``: a GATHER of an elementwise op becomes the op of the gathered operands, and a
  GATHER of a broadcast reads the broadcast's input, when the gather has no more elements than
  its source: ``(x - lse)[rows, y]`` computes ``x[rows, y] - lse[rows, 0]``, not ``x - lse``.
* ``sink_reshapes``: an elementwise op of a computed value's reshape is computed in the value's
  shape and reshaped after (the same elements in the same order: exact), so a row kernel keeps
  its consumers across a reshape (GroupNorm's per-channel affine after per-group statistics).
* ``keepdims_twins``: a reduction with ``keepdims=True`` whose twin without it is in the graph
  becomes the twin's reshape (``x - x.mean(0)`` and ``x.var(0)``'s own mean of ``keepdims=True``:
  one mean, not two kernels summing the same columns); ``sink_reshapes`` then merges their chains.
* ``read_back``: a slice of a slice write's result reads the written piece (inside the written
  region) or the array before the write (apart from it): a recurrence of item assignments in a
  Python loop stays linear.
* ``region_writes``: an argument's final value that overwrites a slice of it, where nothing else
  reads the old value, becomes a region SCATTER of the written piece (written in place).
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Callable

import numpy as np

from ..ir.dtypes import BF16, is_float
from ..ir.graph import Graph, Node
from ..ir.ops import ELEMENTWISE, LEAF, MOVEMENT, REDUCE, Op
from ..ir.power import product_exponent


@dataclasses.dataclass(frozen=True)
class Pass:
    name: str
    run: Callable[[Graph], Graph]
    # False where the pass cannot change the graph (none of the ops it rewrites is there): the
    # pass is skipped, the same graph (a new size traces and optimizes again: ``shape_class``)
    applies: Callable[[Graph], bool] | None = None

    def __call__(self, graph: Graph) -> Graph:
        if self.applies is not None and not self.applies(graph):
            return graph
        return self.run(graph)


def _having(*ops: Op) -> Callable[[Graph], bool]:
    """``applies`` of a pass whose node function returns None for every node of other ops."""
    wanted = frozenset(ops)
    return lambda g: not wanted.isdisjoint(g.ops())


def rewrite(graph: Graph, fn: Callable[[Node], Node | None]) -> Graph:
    """Rebuild ``graph`` bottom-up, replacing each node by ``fn(node)`` when that is not None.
    ``fn`` sees the node with its inputs already rewritten; replacements keep dtype and shape."""
    new: dict[Node, Node] = {}
    changed = False             # until a node is replaced, every node's inputs are its own
    for n in graph.nodes():
        if n.op is Op.INPUT:
            new[n] = n
            continue
        m = n
        if changed:
            ins = tuple([new[i] for i in n.inputs])
            if ins != n.inputs:
                m = n.replace(inputs=ins)
        r = fn(m)
        if r is not None and r is not m:
            assert r.dtype == n.dtype and r.shape == n.shape, (n, r)
            m = r
        if m is not n:
            changed = True
        new[n] = m
    if not changed:
        return graph
    outputs = tuple([new[o] for o in graph.outputs])
    # unchanged: the same graph (its node order already computed; ``optimize`` skips a pass
    # that left this graph as it was)
    return graph if outputs == graph.outputs else graph.with_outputs(outputs)


# -- helpers ---------------------------------------------------------------------------------------

def const_value(n: Node):
    """The scalar of a CONST, or of a BROADCAST/RESHAPE chain over one; else None."""
    while n.op in (Op.BROADCAST, Op.RESHAPE):
        n = n.inputs[0]
    if n.op is Op.CONST:
        return n.attr("value")
    return None


def _const_root(n: Node) -> Node | None:
    while n.op in (Op.BROADCAST, Op.RESHAPE):
        n = n.inputs[0]
    return n if n.op is Op.CONST else None


def make_const(value, dtype, shape=(), loc=None) -> Node:
    c = Node(Op.CONST, dtype, (), (), {"value": value}, loc)
    if tuple(shape) != ():
        c = Node(Op.BROADCAST, dtype, shape, (c,), {}, loc)
    return c


def _is_value(v, target: float) -> bool:
    """``v == target`` with the sign of zero significant."""
    if isinstance(v, bool):
        return float(v) == target
    if v != target:
        return False
    if target == 0:
        return np.signbit(float(v)) == np.signbit(target)
    return True


def _np_eval(n: Node, values: list):
    """Evaluate elementwise ``n`` on 0-d operands with NumPy; the Python scalar, or None."""
    args = [np.array(v, dtype=i.dtype) for v, i in zip(values, n.inputs)]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if n.op is Op.CAST:
                out = args[0].astype(n.dtype)
            elif n.op is Op.WHERE:
                out = np.where(*args)
            else:
                out = getattr(np, n.op.value)(*args)
        except Exception:   # noqa: BLE001 - leave anything NumPy refuses to run time
            return None
    out = np.asarray(out)
    if out.dtype != n.dtype or out.shape != ():
        return None
    return out.item()


# -- passes ----------------------------------------------------------------------------------------

def _fold(n: Node) -> Node | None:
    if n.op not in ELEMENTWISE or not n.inputs:
        return None
    roots = [_const_root(i) for i in n.inputs]
    if any(r is None for r in roots):
        return None
    val = _np_eval(n, [r.attr("value") for r in roots])
    if val is None:
        return None
    return make_const(val, n.dtype, n.shape, n.loc)


fold_constants = Pass("fold_constants", lambda g: rewrite(g, _fold), _having(Op.CONST))   # (operands all constants)


def _identity(n: Node) -> Node | None:
    op = n.op
    if n.dtype.kind == "c":     # complex x * 1 is NaN for infinite parts, x + 0 loses -0.0 parts
        return None
    if op in (Op.MULTIPLY, Op.ADD, Op.SUBTRACT, Op.TRUE_DIVIDE, Op.POWER) and len(n.inputs) == 2:
        a, b = n.inputs
        va, vb = const_value(a), const_value(b)
        isfloat = is_float(n.dtype)
        if op is Op.MULTIPLY:
            if vb is not None and _is_value(vb, 1.0) and a.dtype == n.dtype:
                return a
            if va is not None and _is_value(va, 1.0) and b.dtype == n.dtype:
                return b
        elif op is Op.ADD:
            zero = -0.0 if isfloat else 0
            if n.dtype.kind == "b":
                return None
            if vb is not None and _is_value(vb, zero) and a.dtype == n.dtype:
                return a
            if va is not None and _is_value(va, zero) and b.dtype == n.dtype:
                return b
        elif op is Op.SUBTRACT:
            if vb is not None and _is_value(vb, 0.0) and a.dtype == n.dtype and n.dtype.kind != "b":
                return a
        elif op is Op.TRUE_DIVIDE:
            if vb is not None and _is_value(vb, 1.0) and a.dtype == n.dtype:
                return a
        elif op is Op.POWER and vb is not None and a.dtype == n.dtype:
            return _power_products(n, a, product_exponent(vb, n.dtype))
    if op is Op.NEGATIVE and n.inputs[0].op is Op.NEGATIVE:
        inner = n.inputs[0].inputs[0]
        if inner.dtype == n.dtype:
            return inner
    return None


def _power_products(n: Node, a: Node, k: int | None) -> Node | None:
    """``a ** k`` as products of ``a`` (``ir.power``'s policy decides ``k``), or None."""
    if k is None:
        return None
    if k == 1:
        return a
    sq = Node(Op.MULTIPLY, n.dtype, n.shape, (a, a), {}, n.loc)
    if k == 2:
        return sq
    return Node(Op.MULTIPLY, n.dtype, n.shape, (sq, a if k == 3 else sq), {}, n.loc)


identities = Pass("identities", lambda g: rewrite(g, _identity),
                  _having(Op.MULTIPLY, Op.ADD, Op.SUBTRACT, Op.TRUE_DIVIDE, Op.POWER, Op.NEGATIVE))


def _movement(n: Node) -> Node | None:
    x = n.inputs[0] if n.inputs else None
    if n.op is Op.BROADCAST:
        if x.shape == n.shape:
            return x
        if x.op is Op.BROADCAST:
            return n.replace(inputs=x.inputs)
        if (x.op is Op.RESHAPE and x.size == 1 and x.inputs[0].size == 1
                and x.inputs[0].ndim <= n.ndim):
            # broadcast of a reshaped scalar: broadcast the scalar (right-aligned, all ones)
            return n.replace(inputs=x.inputs)
        if x.op is Op.RESHAPE and _leading_ones(x.inputs[0].shape, x.shape):
            return n.replace(inputs=x.inputs)       # (NumPy right-aligns: the same elements)
    elif n.op is Op.RESHAPE:
        if x.shape == n.shape:
            return x
        if x.op is Op.RESHAPE:
            return n.replace(inputs=x.inputs) if x.inputs[0].shape != n.shape else x.inputs[0]
        if x.op is Op.CONST:
            return Node(Op.BROADCAST, n.dtype, n.shape, (x,), {}, n.loc)
        if x.op is Op.BROADCAST and x.inputs[0].op is Op.CONST:
            return n.replace(op=Op.BROADCAST, inputs=x.inputs)     # (one value everywhere)
    elif n.op is Op.PERMUTE:
        perm = tuple(n.attr("perm"))
        if perm == tuple(range(len(perm))):
            return x
        if x.op is Op.PERMUTE:
            p1 = tuple(x.attr("perm"))
            comp = tuple(p1[i] for i in perm)
            inner = x.inputs[0]
            if comp == tuple(range(len(comp))):
                return inner
            return n.replace(inputs=(inner,), attrs={"perm": comp})
    elif n.op is Op.SLICE:
        starts, steps = n.attr("starts"), n.attr("steps")
        if x.shape == n.shape and all(s == 0 for s in starts) and all(s == 1 for s in steps):
            return x
    return None


def _leading_ones(inner: tuple, outer: tuple) -> bool:
    """Whether ``outer`` is ``inner`` with ones put in front."""
    k = len(outer) - len(inner)
    return k > 0 and outer[k:] == inner and all(d == 1 for d in outer[:k])


movement = Pass("movement", lambda g: rewrite(g, _movement), _having(Op.BROADCAST, Op.RESHAPE, Op.PERMUTE, Op.SLICE))


def _computed(n: Node) -> bool:
    """Whether ``n`` is computed (not an argument or constant seen through movement)."""
    while n.op in MOVEMENT:
        n = n.inputs[0]
    return n.op not in LEAF


def _sink_reshape(n: Node) -> Node | None:
    """An elementwise op of a computed value's reshape computes in the value's shape and is
    reshaped after: ``(y - m).reshape(N, C, H, W) * g[:, None, None]`` (GroupNorm's affine after
    its per-group statistics) becomes ``((y - m) * g4.reshape(y.shape)).reshape(N, C, H, W)``, so the
    row kernel that computes ``y - m`` also applies the affine (its other operands read through the
    inverse reshape's index math) instead of a second kernel re-reading the normalised array."""
    if n.op not in ELEMENTWISE or any(i.shape != n.shape for i in n.inputs):
        return None
    r = [i for i in n.inputs if i.op is Op.RESHAPE and _computed(i.inputs[0])]
    if not r or len({i.inputs[0].shape for i in r}) != 1:
        return None
    # the other operands arguments or constants seen through movement (g[:, None, None]): a
    # computed one (a statistic's broadcast) would move the work into the reshaped shape, where
    # ``x.astype(np.float32).reshape(n, groups, -1) - mean`` would leave the row kernel's domain
    # (and the movement pass would fold it back: the optimizer went round 20 times)
    if any(_computed(i) for i in n.inputs if i not in r):
        return None
    a = r[0].inputs[0]
    ins = tuple(i.inputs[0] if i in r else Node(Op.RESHAPE, i.dtype, a.shape, (i,), {}, i.loc) for i in n.inputs)
    inner = Node(n.op, n.dtype, a.shape, ins, n.attrs, n.loc)
    return Node(Op.RESHAPE, n.dtype, n.shape, (inner,), {}, n.loc)


sink_reshapes = Pass("sink_reshapes", lambda g: rewrite(g, _sink_reshape), _having(Op.RESHAPE))


# (significand bits, exponent bits) of each float dtype
_FLOAT_BITS = {np.dtype(np.float16): (11, 5), BF16: (8, 8), np.dtype(np.float32): (24, 8), np.dtype(np.float64): (53, 11)}


def _lossless(src: np.dtype, dst: np.dtype) -> bool:
    """Every value of ``src`` is exactly representable in ``dst``."""
    if src == dst or src.kind == "b":
        return True
    if dst.kind == "b":
        return False
    if is_float(src):
        return is_float(dst) and all(d >= s for d, s in zip(_FLOAT_BITS[dst], _FLOAT_BITS[src]))
    if is_float(dst):
        bits = src.itemsize * 8 - (1 if src.kind == "i" else 0)
        return bits <= _FLOAT_BITS[dst][0]
    if src.kind == dst.kind:
        return dst.itemsize >= src.itemsize
    if src.kind == "u" and dst.kind == "i":
        return dst.itemsize > src.itemsize
    return False


def _cast(n: Node) -> Node | None:
    if n.op is not Op.CAST:
        return None
    x = n.inputs[0]
    if x.dtype == n.dtype:
        return x
    if x.op is Op.CAST and _lossless(x.inputs[0].dtype, x.dtype):
        inner = x.inputs[0]
        return inner if inner.dtype == n.dtype else n.replace(inputs=(inner,))
    return None


casts = Pass("casts", lambda g: rewrite(g, _cast), _having(Op.CAST))

def _empty(n: Node) -> Node | None:
    """A computed value with no elements is a broadcast constant: nothing to compute, and index
    maps through empty shapes (a reshape of (2, 0, 1) to (2, 0)) never reach the code generators."""
    if n.size == 0 and n.op is not Op.BROADCAST and n.op is not Op.CONST:
        return make_const(0, n.dtype, n.shape, n.loc)
    return None


empty = Pass("empty", lambda g: rewrite(g, _empty), lambda g: any(0 in n.shape for n in g.nodes()))

def _outer(n: Node) -> Node | None:
    """A matmul over K = 1 is an outer product: a broadcast multiply, which fuses with its
    neighbours instead of taking a GEMM. A float one adds +0.0 as NumPy's loop and BLAS do (their
    sum starts from +0.0), so a -0.0 product comes out +0.0 (cuBLAS gave -0.0: cuda fuzz seed 51
    #894, bug 15's class); float16 products are exact in float32 and rounded once either way."""
    if n.op is not Op.MATMUL or n.inputs[0].shape[-1] != 1 or n.dtype == np.bool_:
        return None
    a, b = (i if i.shape == n.shape else Node(Op.BROADCAST, i.dtype, n.shape, (i,), {}, loc=n.loc)
            for i in n.inputs)
    prod = Node(Op.MULTIPLY, n.dtype, n.shape, (a, b), {}, loc=n.loc)
    if not is_float(n.dtype):
        return prod
    return Node(Op.ADD, n.dtype, n.shape, (prod, make_const(0.0, n.dtype, n.shape, n.loc)), {}, loc=n.loc)


outer = Pass("outer", lambda g: rewrite(g, _outer), _having(Op.MATMUL))

dce = Pass("dce", lambda g: g)   # a graph's nodes are those reachable from its outputs

def _gather(n: Node) -> Node | None:
    if n.op is not Op.GATHER:
        return None
    src, index, dims = n.inputs[0], n.inputs[1:], n.attr("dims")
    if n.size > src.size or n.size == 0:
        return None

    def gathered(x: Node) -> Node:
        return Node(Op.GATHER, x.dtype, n.shape, (x,) + index, {"dims": dims}, n.loc)
    if src.op in ELEMENTWISE:
        return src.replace(inputs=tuple(gathered(i) if i.shape == src.shape else i for i in src.inputs),
                           shape=n.shape)
    if src.op is Op.BROADCAST:         # a broadcast dim (extent 1 in its input) is read at 0
        a = src.inputs[0]
        padded = (1,) * (src.ndim - a.ndim) + a.shape
        a = a if a.shape == padded else Node(Op.RESHAPE, a.dtype, padded, (a,), {}, a.loc)
        return Node(Op.GATHER, n.dtype, n.shape, (a,) + index, {"dims": dims}, n.loc)
    return None


gathers = Pass("gathers", lambda g: rewrite(g, _gather), _having(Op.GATHER))


def _written_region(w: Node) -> tuple[Node, tuple, tuple] | None:
    """(piece, starts, steps) where ``w`` has the form a slice write traces to,
    ``WHERE(PAD(True), PAD(piece), base)`` with both pads over one region; else None."""
    if w.op is not Op.WHERE:
        return None
    mask, placed = w.inputs[0], w.inputs[1]
    if mask.op is not Op.PAD or placed.op is not Op.PAD or mask.attr("fill") is not False:
        return None
    starts, steps, piece = placed.attr("starts"), placed.attr("steps"), placed.inputs[0]
    if (mask.attr("starts"), mask.attr("steps")) != (starts, steps):
        return None
    true = mask.inputs[0]
    while true.op is Op.BROADCAST:
        true = true.inputs[0]
    if mask.inputs[0].shape != piece.shape or true.op is not Op.CONST or true.attr("value") is not True:
        return None
    return piece, tuple(starts), tuple(steps)


def _region_scatter(w: Node, base: Node) -> Node | None:
    """``w``, an argument's final value, as a region SCATTER of the piece it writes into ``base``
    when it has the form a slice write traces to (``WHERE(region mask, PAD(piece), base)``);
    else None."""
    region = _written_region(w)
    if region is None or w.inputs[2] is not base:
        return None
    piece, starts, steps = region
    attrs = {"dims": tuple(range(base.ndim)), "mode": "set", "loop": base.dtype.name,
             "starts": starts, "steps": steps}
    return Node(Op.SCATTER, base.dtype, base.shape, (base, piece), attrs, w.loc)


def _region_writes(graph: Graph) -> Graph:
    """An argument's final value that is its old value with a slice overwritten (``x[:, 0] = v``,
    ``cache[:, t] = k``), where nothing else reads the old value, becomes a region SCATTER of the
    piece (``kfuse/ir/ops.py``): one kernel over the piece writing into the argument in place
    (``Plan.scatters_into_argument``), instead of one reading and writing the whole array."""
    readers: dict[Node, int] = {}
    for n in graph.nodes():
        for i in n.inputs:
            readers[i] = readers.get(i, 0) + 1
    swap = {}
    for i, o in graph.writebacks:
        base, w = graph.inputs[i], graph.outputs[o]
        if readers.get(base) == 1 and base not in graph.outputs:
            s = _region_scatter(w, base)
            if s is not None:
                swap[w] = s
    return rewrite(graph, swap.get) if swap else graph


region_writes = Pass("region_writes", _region_writes)


def _read_back(n: Node) -> Node | None:
    """A SLICE of a slice write's result (``s[t] = v`` then ``s[t - 1]``) reads the written piece
    where the slice lies inside the written region, and the array before the write where it
    misses it: a recurrence written as a loop of item assignments (``s[t] = a * x[t] + b * s[t - 1]``)
    reads each step's value, not the whole chain of writes again at every position."""
    if n.op is not Op.SLICE or n.size == 0:
        return None
    out = n
    while out.op is Op.SLICE and (region := _written_region(out.inputs[0])) is not None:
        piece, pstarts, psteps = region
        starts, steps = out.attr("starts"), out.attr("steps")
        dims = [_within(out.shape[d], starts[d], steps[d], piece.shape[d], pstarts[d], psteps[d])
                for d in range(out.ndim)]
        if "apart" in dims:             # nothing it reads was written: the array before the write
            out = out.replace(inputs=(out.inputs[0].inputs[2],))
        elif all(isinstance(d, tuple) for d in dims):
            out = Node(Op.SLICE, out.dtype, out.shape, (piece,),
                       {"starts": tuple(d[0] for d in dims), "steps": tuple(d[1] for d in dims)}, out.loc)
            break
        else:
            break
    return out if out is not n else None


def _within(count: int, start: int, step: int, wcount: int, wstart: int, wstep: int):
    """Where ``count`` positions ``start + i * step`` of one dim lie against the written positions
    ``wstart + k * wstep``: all written ((first k, k step)), "apart" (none written: bounds
    apart, or a few positions each checked), else None (some, or not known)."""
    written = range(wstart, wstart + wcount * wstep, wstep)
    last = start + (count - 1) * step
    if start in written and last in written and (count == 1 or step % wstep == 0):
        return (start - wstart) // wstep, (step // wstep if count > 1 else 1)
    if max(start, last) < written[0] or min(start, last) > written[-1]:
        return "apart"
    if count <= 64 and all(start + i * step not in written for i in range(count)):
        return "apart"
    return None


read_back = Pass("read_back", lambda g: rewrite(g, _read_back), _having(Op.SLICE))


def _twin_key(n: Node) -> tuple:
    return n.op, n.inputs, n.dtype, tuple(a for a in n.attrs if a[0] != "keepdims")


def _keepdims_twins(graph: Graph) -> Graph:
    plain = {_twin_key(n): n for n in graph.nodes() if n.op in REDUCE and not n.attr("keepdims")}
    if not plain:
        return graph

    def twin(n: Node) -> Node | None:
        t = plain.get(_twin_key(n)) if n.op in REDUCE and n.attr("keepdims") else None
        return None if t is None else Node(Op.RESHAPE, n.dtype, n.shape, (t,), {}, n.loc)
    return rewrite(graph, twin)


keepdims_twins = Pass("keepdims_twins", _keepdims_twins, lambda g: not REDUCE.isdisjoint(g.ops()))
PASSES: tuple[Pass, ...] = (region_writes, empty, outer, fold_constants, identities, keepdims_twins, movement,
                            read_back, sink_reshapes, casts, gathers, dce)
