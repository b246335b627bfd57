"""Size forms: the integers of a structure (a graph's shapes and size-valued constants, a kernel's
size parameters) as functions of the arguments' sizes, learnt from two observations of it and
evaluated at new sizes without building it again.

The arguments' dims other than 1 fall into *size classes* (dims of equal value are one class;
the pattern of which dims are equal is part of what the forms hold for). A structure is observed
at the call's sizes ``v`` and at *probe* sizes ``q`` (:func:`probe_sizes`: a distinct prime per
class, above the class's value) and every integer site is classified by :func:`learn_site`:

- the same value at both: a literal (``1``, an axis, ``x ** 3``'s constant);
- else the probe value factors over the probe primes into a product of classes whose value at
  ``v`` is the observed one: that monomial (``n``, ``n * m``: an extent, a mean's count, a
  stride); as ``q_c > v_c``, a monomial can never equal a literal at both;
- else the site is no monomial of the sizes (``n - 1``, ``1 / n``): no form, the caller builds
  as before.

Two observations prove the forms only for code that computes its integers from sizes by
products alone, without a comparison on sizes (a clamp ``min(4, n)`` is literal at both and
wrong at ``n = 3``): callers restrict forms to such code (``GENERIC_OPS``; dims of 0 excluded).

:class:`GraphForm` holds a graph (and its optimized form) this way and rebuilds its nodes at new
sizes (``instantiate``): interned nodes, so the rebuilt graph is the very objects a trace at
those sizes would make.
"""
from __future__ import annotations

from typing import Any

from .graph import Graph, Node, toposort
from .ops import BINARY, COMPLEX_PARTS, LEAF, REDUCE, SCAN, TERNARY, UNARY, Op

# the ops whose builders and rewrites compute sizes by products of the arguments' dims only,
# with no size-valued attribute (a slice's bounds, a reshape's shape: clamps and sums of sizes)
GENERIC_OPS = frozenset(LEAF | UNARY | BINARY | TERNARY | COMPLEX_PARTS | REDUCE | SCAN
                        | {Op.CAST, Op.BROADCAST, Op.PERMUTE})

Site = Any      # an int (a literal) or a tuple of class indices (their product)


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    k = 2
    while k * k <= n:
        if n % k == 0:
            return False
        k += 1
    return True


def probe_sizes(values: tuple[int, ...]) -> tuple[int, ...]:
    """A distinct prime above each class's value (near it: the probe stays in the sizes'
    planning regime)."""
    used: set[int] = set()
    out = []
    for v in values:
        q = v + 1
        while not _is_prime(q) or q in used:
            q += 1
        used.add(q)
        out.append(q)
    return tuple(out)


def _monomial(x: int, probe: tuple[int, ...]) -> tuple | None:
    """``x`` as a product of probe primes (class indices, repeated by exponent), or None."""
    if x < 2:
        return None
    classes = []
    for c, q in enumerate(probe):
        while x % q == 0:
            x //= q
            classes.append(c)
    return tuple(classes) if x == 1 and classes else None


def value(site: Site, sizes: tuple[int, ...]) -> int:
    """A site's integer at the class values ``sizes``."""
    if site.__class__ is int:
        return site
    n = 1
    for c in site:
        n *= sizes[c]
    return n


def learn_site(real: Any, probe_value: Any, sizes: tuple[int, ...], probe: tuple[int, ...]):
    """The form of one integer site seen as ``real`` at ``sizes`` and ``probe_value`` at
    ``probe`` (see the module docstring); ``None`` when it has none. Floats holding integers (a
    mean's count) are forms of their integer; anything else must be equal at both."""
    if real.__class__ is not probe_value.__class__:
        return None
    if repr(real) == repr(probe_value):
        return real if real.__class__ is int else ("lit", real)
    if real.__class__ is float:
        if not (real.is_integer() and probe_value.is_integer()):
            return None
        real, probe_value = int(real), int(probe_value)
        m = _monomial(probe_value, probe)
        return ("float", m) if m is not None and value(m, sizes) == real else None
    if real.__class__ is int:
        m = _monomial(probe_value, probe)
        return m if m is not None and value(m, sizes) == real else None
    return None


def const_value(form, sizes: tuple[int, ...]) -> Any:
    """A constant's value from its form (``learn_site`` of a CONST's value)."""
    if form.__class__ is int or form.__class__ is tuple and form[0] not in ("lit", "float"):
        return value(form, sizes)
    if form[0] == "lit":
        return form[1]
    return float(value(form[1], sizes))


class GraphForm:
    """Graphs over one node set (a traced graph and its optimized form) whose nodes are rebuilt
    at new sizes: per node its op, dtype, shape sites, input positions, attributes and, for a
    constant, its value's form."""

    __slots__ = ("rows", "graphs")

    def __init__(self, rows: list, graphs: list):
        self.rows = rows            # (op, dtype, shape sites, input positions, attrs, value form, loc,
        #                             the dtype's str, the attrs' repr)
        self.graphs = graphs        # (name, input positions, output positions, out_tree, writebacks,
        #                             the positions of its nodes in its topological order)

    @classmethod
    def learn(cls, real: list[Graph], probe: list[Graph], sizes: tuple[int, ...],
              probe_sizes_: tuple[int, ...]) -> "GraphForm | None":
        """The form of ``real`` (graphs at ``sizes``) given the same graphs traced and optimized
        at ``probe_sizes_``; None where they differ otherwise than by monomial sites, hold an op
        outside ``GENERIC_OPS``, checks or array constants."""
        for g in (*real, *probe):
            if g.checks or g.host_checks or g.constants:
                return None
        order_r = toposort(tuple(n for g in real for n in (*g.inputs, *g.outputs)))
        order_p = toposort(tuple(n for g in probe for n in (*g.inputs, *g.outputs)))
        if len(order_r) != len(order_p):
            return None
        pos_r = {n: k for k, n in enumerate(order_r)}
        pos_p = {n: k for k, n in enumerate(order_p)}
        rows = []
        for r, p in zip(order_r, order_p):
            if r.op is not p.op or r.op not in GENERIC_OPS or r.dtype != p.dtype or len(r.shape) != len(p.shape):
                return None
            ins = tuple(pos_r[i] for i in r.inputs)
            if ins != tuple(pos_p[i] for i in p.inputs):
                return None
            shape = tuple(learn_site(a, b, sizes, probe_sizes_) for a, b in zip(r.shape, p.shape))
            if None in shape:
                return None
            vform = None
            attrs = r.attrs
            if r.op is Op.CONST:
                vform = learn_site(r.attr("value"), p.attr("value"), sizes, probe_sizes_)
                if vform is None:
                    return None
                rest = tuple(kv for kv in attrs if kv[0] != "value")
                if rest != tuple(kv for kv in p.attrs if kv[0] != "value"):
                    return None
                if vform.__class__ is int or vform[0] == "lit":
                    vform = None        # the same value at every size: the real node's attrs
                else:
                    attrs = rest
            elif repr(attrs) != repr(p.attrs):
                return None
            rows.append((r.op, r.dtype, shape, ins, attrs, vform, r.loc, r.dtype.str, repr(attrs)))
        graphs = []
        for g, h in zip(real, probe):
            ins, outs = tuple(pos_r[n] for n in g.inputs), tuple(pos_r[n] for n in g.outputs)
            if (ins != tuple(pos_p[n] for n in h.inputs) or outs != tuple(pos_p[n] for n in h.outputs)
                    or repr(g.out_tree) != repr(h.out_tree) or g.writebacks != h.writebacks or g.name != h.name):
                return None
            graphs.append((g.name, ins, outs, g.out_tree, g.writebacks, tuple(pos_r[n] for n in g.nodes())))
        return cls(rows, graphs)

    def instantiate(self, sizes: tuple[int, ...]) -> list[Graph]:
        """The graphs at the class values ``sizes``."""
        nodes: list[Node] = []
        normal = Node.normal
        for op, dtype, shape, ins, attrs, vform, loc, dstr, arepr in self.rows:
            shape = tuple([s if s.__class__ is int else value(s, sizes) for s in shape])
            if vform is not None:       # a constant's value: normalised as a trace's node is
                attrs = (*attrs, ("value", const_value(vform, sizes)))
                nodes.append(Node(op, dtype, shape, [nodes[k] for k in ins], attrs, loc))
            else:                       # (attrs as a real node held them: sorted and frozen)
                nodes.append(normal(op, dtype, dstr, shape, tuple([nodes[k] for k in ins]), attrs, arepr, loc))
        out = []
        for name, ins, outs, tree, wb, order in self.graphs:
            g = Graph(name, tuple([nodes[k] for k in ins]), tuple([nodes[k] for k in outs]), tree, writebacks=wb)
            object.__setattr__(g, "_order", tuple([nodes[k] for k in order]))   # (nodes(): no toposort)
            out.append(g)
        return out
