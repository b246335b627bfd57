"""np.einsum: subscripts read as NumPy reads them, lowered to ops kfuse already has.

The subscripts (``"ij,jk->ik"``, implicit output, ``...`` broadcast dimensions, or the sublist
form ``einsum(a, [0, 1], b, [1, 2])``) become one list of labels per operand. Then:

* a label repeated within an operand takes the diagonal: both axes moved last, merged by a
  reshape and sliced with step ``n + 1``;
* a label found in one operand only and not in the output is summed over at once;
* operands are combined left to right, two at a time: with no label to contract, a broadcast
  multiply; with contracted labels but no free label on one side (a dot product, a matrix-vector
  product), a broadcast multiply then a sum; otherwise one matmul of the operands permuted to
  (batch..., free, contracted) and (batch..., contracted, free);
* the result is permuted to the output's order and broadcast where a label had size 1.

Everything is computed in the operands' result dtype (or ``dtype=``, cast under ``casting``),
as NumPy's einsum does; only the order of the additions differs from NumPy's loop.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import at
from ..ir.graph import Node
from ..ir.ops import Op
from .core import Tracer, as_node, broadcast, cast, loc, mk, unsupported
from .elementwise import apply_ufunc
from .linalg import matmul
from .movement import permute_node, reshape_node
from .reductions import sum as reduce_sum

_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False) -> Tracer:
    """``np.einsum``; ``order`` and ``optimize`` change only memory layout and the order of the
    additions, so they are accepted and ignored."""
    if out is not None:
        raise unsupported("np.einsum with out=", "return the result instead")
    subscripts, arrays = _subscripts(operands)
    nodes = [as_node(a, "operand of einsum") for a in arrays]
    labels, out_labels = _parse(subscripts, [n.ndim for n in nodes])
    dt = np.result_type(*[n.dtype for n in nodes]) if dtype is None else np.dtype(dtype)
    for i, n in enumerate(nodes):
        if not np.can_cast(n.dtype, dt, casting):
            raise TypeError(f"einsum: operand {i} cannot be cast from {n.dtype} to {dt} according "
                            f"to the rule {casting!r}{at(loc())}")
    sizes = _label_sizes(nodes, labels)
    terms = [_diagonal(cast(n, dt), ls, i) for i, (n, ls) in enumerate(zip(nodes, labels))]
    while len(terms) > 1:
        (a, la), (b, lb) = terms[:2]
        keep = set(out_labels).union(*(ls for _, ls in terms[2:]))
        a, la = _sum_over(a, la, keep | set(lb))
        b, lb = _sum_over(b, lb, keep | set(la))
        terms = [_pair(a, la, b, lb, keep, sizes)] + terms[2:]
    node, ls = _sum_over(*terms[0], set(out_labels))
    node = permute_node(node, [ls.index(label) for label in out_labels])
    return Tracer(broadcast(node, tuple(sizes[label] for label in out_labels)))


# ---- subscripts ------------------------------------------------------------------------------

def _subscripts(operands) -> tuple[str, list]:
    """(subscripts string, operands) from either calling form."""
    if not operands:
        raise TypeError(f"einsum: no subscripts given{at(loc())}")
    if isinstance(operands[0], str):
        return operands[0], list(operands[1:])
    rest = list(operands)                   # a, sublist, b, sublist, ..., [output sublist]
    out = rest.pop() if len(rest) % 2 else None
    text = ",".join(_sublist(s) for s in rest[1::2])
    return (text if out is None else text + "->" + _sublist(out)), rest[0::2]


def _sublist(sub) -> str:
    """A sublist ([0, 1, Ellipsis]) as subscripts: 0-25 are 'A'-'Z', 26-51 'a'-'z' (NumPy's)."""
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
            continue
        s = int(s)
        if not 0 <= s < 52:
            raise ValueError(f"einsum: subscript {s} is not within the valid range [0, 52){at(loc())}")
        out.append(chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26))
    return "".join(out)


def _parse(subscripts: str, ndims: list[int]) -> tuple[list[list[str]], list[str]]:
    """Per operand its labels and the output's, an ellipsis's dimensions named ``...k`` counting
    from the right (they broadcast against each other as NumPy's shapes do)."""
    text = subscripts.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    specs = lhs.split(",")
    if len(specs) != len(ndims):
        raise ValueError(f"einsum: the subscripts {subscripts!r} name {len(specs)} operand(s), "
                         f"{len(ndims)} given{at(loc())}")
    labels, widest = [], 0
    for i, (spec, ndim) in enumerate(zip(specs, ndims)):
        head, dots, tail = spec.partition("...")
        named = _letters(head + tail)
        extra = ndim - len(named)
        if extra < 0 or (extra and not dots):
            raise ValueError(f"einsum: operand {i} has {ndim} dimension(s), its subscripts "
                             f"{spec!r} name {len(named)}{at(loc())}")
        widest = max(widest, extra)
        labels.append(_letters(head) + [f"...{k}" for k in reversed(range(extra))] + _letters(tail))
    dims = [f"...{k}" for k in reversed(range(widest))]
    if not arrow:          # implicit output: the broadcast dimensions, then labels seen once, sorted
        counts = {}
        for ls in labels:
            for label in ls:
                counts[label] = counts.get(label, 0) + 1
        return labels, dims + sorted(s for s, c in counts.items() if c == 1 and s[0] != ".")
    head, dots, tail = rhs.partition("...")
    out = _letters(head) + (dims if dots else []) + _letters(tail)
    seen = set().union(*labels) if labels else set()
    for label in out:
        if out.count(label) > 1:
            raise ValueError(f"einsum: output subscript {label!r} appears more than once{at(loc())}")
        if label not in seen:
            raise ValueError(f"einsum: output subscript {label!r} is in no operand{at(loc())}")
    if widest and not dots:
        raise ValueError(f"einsum: the operands have broadcast dimensions ('...') but the output "
                         f"has no '...'{at(loc())}")
    return labels, out


def _letters(text: str) -> list[str]:
    for ch in text:
        if ch not in _LETTERS:
            raise ValueError(f"einsum: invalid subscript {ch!r}, subscripts must be letters{at(loc())}")
    return list(text)


def _label_sizes(nodes: list[Node], labels: list[list[str]]) -> dict[str, int]:
    """Each label's size: equal across operands, or 1 where it broadcasts."""
    sizes: dict[str, int] = {}
    for n, ls in zip(nodes, labels):
        for label, size in zip(ls, n.shape):
            have = sizes.setdefault(label, size)
            if size != have:
                if 1 not in (size, have):
                    raise ValueError(f"einsum: operands could not be broadcast together: subscript "
                                     f"{label!r} has sizes {have} and {size}{at(loc())}")
                sizes[label] = size if have == 1 else have
    return sizes


# ---- lowering --------------------------------------------------------------------------------

def _diagonal(node: Node, labels: list[str], i: int) -> tuple[Node, list[str]]:
    """The diagonal over each label repeated within one operand (``'ii->i'``)."""
    labels = list(labels)
    while len(set(labels)) < len(labels):
        label = next(s for s in labels if labels.count(s) > 1)
        p, q = [k for k, s in enumerate(labels) if s == label][:2]
        n = node.shape[p]
        if node.shape[q] != n:
            raise ValueError(f"einsum: dimensions in operand {i} for collapsing subscript {label!r} "
                             f"don't match ({n} != {node.shape[q]}){at(loc())}")
        rest = [k for k in range(node.ndim) if k not in (p, q)]
        node = reshape_node(permute_node(node, rest + [p, q]),
                            tuple(node.shape[k] for k in rest) + (n * n,))
        node = mk(Op.SLICE, node.dtype, node.shape[:-1] + (n,), [node],
                  {"starts": (0,) * node.ndim, "steps": (1,) * (node.ndim - 1) + (n + 1,)})
        labels = [labels[k] for k in rest] + [label]
    return node, labels


def _sum_over(node: Node, labels: list[str], keep: set) -> tuple[Node, list[str]]:
    """Sums over the axes whose labels are not in ``keep``, in the node's dtype."""
    axes = tuple(k for k, s in enumerate(labels) if s not in keep)
    if not axes:
        return node, labels
    node = as_node(reduce_sum(Tracer(node), axis=axes, dtype=node.dtype))
    return node, [s for s in labels if s in keep]


def _pair(a: Node, la: list[str], b: Node, lb: list[str], keep: set, sizes) -> tuple[Node, list[str]]:
    """The product of two operands, contracted over their shared labels not in ``keep``."""
    shared = [s for s in la if s in lb]
    batch = [s for s in shared if s in keep]
    contract = [s for s in shared if s not in keep]
    fa = [s for s in la if s not in lb]
    fb = [s for s in lb if s not in la]
    nb, nfa, nfb = len(batch), len(fa), len(fb)
    a = _arrange(a, la, batch + fa + contract, shared, sizes)
    if contract and fa and fb and a.dtype != np.bool_:       # a matrix product: one matmul
        b = _arrange(b, lb, batch + contract + fb, shared, sizes)
        k = math.prod(a.shape[nb + nfa:])
        a2 = reshape_node(a, a.shape[:nb] + (math.prod(a.shape[nb:nb + nfa]), k))
        b2 = reshape_node(b, b.shape[:nb] + (k, math.prod(b.shape[-nfb:])))
        prod = as_node(matmul(Tracer(a2), Tracer(b2)))
        return reshape_node(prod, a.shape[:nb + nfa] + b.shape[-nfb:]), batch + fa + fb
    # a broadcast multiply over (batch, fa, fb, contract), then a sum over the contracted labels
    b = _arrange(b, lb, batch + fb + contract, shared, sizes)
    a = reshape_node(a, a.shape[:nb + nfa] + (1,) * nfb + a.shape[nb + nfa:])
    b = reshape_node(b, b.shape[:nb] + (1,) * nfa + b.shape[nb:])
    prod = as_node(apply_ufunc("multiply", Tracer(a), Tracer(b)))
    return _sum_over(prod, batch + fa + fb + contract, set(batch + fa + fb))


def _arrange(node: Node, labels: list[str], order: list[str], shared: list[str], sizes) -> Node:
    """``node`` permuted to ``order``, its shared labels broadcast to their full sizes."""
    node = permute_node(node, [labels.index(s) for s in order])
    full = tuple(sizes[s] if s in shared else d for s, d in zip(order, node.shape))
    return broadcast(node, full)
