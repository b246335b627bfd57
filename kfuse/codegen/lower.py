"""Lowering of a fusion :class:`~kfuse.fusion.plan.KernelGroup` to a :class:`KernelIR`.

Each group node is evaluated at an *index* (a tuple of index expressions, one per dim of the node):
group inputs become loads, movement nodes (BROADCAST, RESHAPE, PERMUTE, SLICE) only rewrite the
index, elementwise nodes become statements. Values are memoised per (node, index), so shared
subexpressions are computed once. Every concrete extent/start becomes a run-time size parameter.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..errors import CompileError
from ..ir.dtypes import is_float
from ..ir.graph import Node
from ..ir.ops import ELEMENTWISE, MOVEMENT, Op, REDUCE, SCAN, SCAN_UFUNC
from . import kernel_ir as K
from ..fusion.kinds import ROW_KINDS, GroupKind

_ACC_KIND = {Op.SUM: "sum", Op.PROD: "prod", Op.MAX: "max", Op.MIN: "min", Op.ANY: "any",
             Op.ALL: "all", Op.ARGMAX: "argmax", Op.ARGMIN: "argmin"}


def _dt(node: Node) -> str:
    return _dtype_name(node.dtype)


@functools.cache
def _dtype_name(dt: np.dtype) -> str:
    return dt.name                  # (NumPy computes the name in Python each time)


def host_scalar_input(node: Node) -> bool:
    """A graph input holding a Python or NumPy scalar argument, on the host: not complex (the
    Numba-CUDA ABI splits a complex parameter in two, CUDA C's does not: they keep a 0-d buffer)."""
    return (node.op is Op.INPUT and node.shape == () and node.dtype.kind != "c"
            and bool(node.attr("weak") or node.attr("numpy_scalar")))


def host_scalar(node: Node, group) -> bool:
    """Whether group input ``node`` is passed to the GPU kernel by value (``Buffer.host``): a
    :func:`host_scalar_input` (so no device buffer and no upload a call) read by a kernel that is
    not a product (cuBLAS and the GEMM read device memory) and written by none (a scatter's base,
    an argument written in place)."""
    return (host_scalar_input(node) and group.kind != GroupKind.MATMUL
            and all(node is not base for _, base in group.in_place)
            and not (group.kind == GroupKind.SCATTER and node is group.anchor.inputs[0]))


class _Lowerer:
    def __init__(self, group, tile, sized=frozenset()):
        self.group = group
        self.tile = tile
        self.sized = sized
        self.inputs = list(group.inputs)
        self.in_index = {n: k for k, n in enumerate(self.inputs)}
        self.members = set(group.nodes)
        self.sizes: list[K.SizeParam] = []
        self._size_memo: dict = {}
        self.nvar = 0
        self.memo: dict = {}                # (node, index) -> (var, inner?)
        self.inner_vars: set[str] = set()
        self.deps: dict[str, frozenset] = {}  # var -> the loop/size variables its value depends on
        self.pre: list = []
        self.body: list = []
        self.domain_shape = tuple(group.domain)
        self.axes = tuple(group.axes) if group.kind in ROW_KINDS else ()
        nd = len(self.domain_shape)
        self.domain = tuple(K.lit(1) if s == 1 else self.size(("domain", d), s, f"extent of i{d}")
                            for d, s in enumerate(self.domain_shape))
        self.full_index = tuple(K.lit(0) if s == 1 else K.IVar(f"i{d}")
                                for d, s in enumerate(self.domain_shape))
        self.inner_loop_vars = {f"i{d}" for d in self.axes if self.domain_shape[d] != 1}
        self.outer = tuple(d for d in range(nd) if d not in self.axes)

    # -- helpers -----------------------------------------------------------------------------
    def size(self, key, value: int, what: str) -> K.Expr:
        if key in self._size_memo:
            return self._size_memo[key]
        p = K.SizeParam(f"s{len(self.sizes)}", int(value), what)
        self.sizes.append(p)
        e = K.IVar(p.name)
        self._size_memo[key] = e
        return e

    def count_expr(self, node: Node) -> str | None:
        """A constant read from the size parameters instead of compiled in, so that a new size
        reuses the kernel, with the same value (the int64 cast to the constant's dtype, rounded
        once): one of ``sized`` (its absolute value a parameter), or in a reduce kernel one
        equal to the number of elements it reduces (a mean's or variance's count, NumPy's
        ``intp`` count folded to the loop dtype)."""
        if node in self.sized:
            value = int(node.attr("value"))
            v = self.new_var()
            self.emit(K.Index(v, self.size(("const", node), abs(value), "a size-dependent constant")), False)
            if value < 0:
                n = self.new_var()
                self.emit(K.Op(n, "negative", "int64", (v,), ("int64",)), False)
                v = n
            return self._cast_index(v, node)
        if not self.axes or node.dtype.kind not in "iuf" or node.shape != ():
            return None
        dims = [d for d in self.axes if self.domain_shape[d] != 1]
        count = math.prod([self.domain_shape[d] for d in dims])
        if not dims or count <= 1 or node.attr("value") != count:
            return None
        expr = self.domain[dims[0]]
        for d in dims[1:]:
            expr = K.IBin("*", expr, self.domain[d])
        v = self.new_var()
        self.emit(K.Index(v, expr), False)
        return self._cast_index(v, node)

    def _cast_index(self, v: str, node: Node) -> str:
        """Int64 value ``v`` as the constant ``node``'s dtype."""
        if _dt(node) == "int64":
            return v
        c = self.new_var()
        self.emit(K.Op(c, "cast", _dt(node), (v,), ("int64",)), False)
        return c

    def new_var(self) -> str:
        v = f"v{self.nvar}"
        self.nvar += 1
        return v

    def emit(self, stmt, inner: bool) -> None:
        (self.body if inner else self.pre).append(stmt)
        if inner and hasattr(stmt, "dst"):
            self.inner_vars.add(stmt.dst)
        if isinstance(stmt, K.Op):
            deps = self.deps
            self.deps[stmt.dst] = frozenset().union(*[deps.get(a, ()) for a in stmt.args])
        elif isinstance(stmt, (K.Load, K.Index)):
            self.deps[stmt.dst] = frozenset().union(*map(K.expr_vars, K.stmt_index(stmt)))
        elif isinstance(stmt, K.Search):
            self.deps[stmt.dst] = self.deps.get(stmt.key, frozenset()) | K.expr_vars(stmt.n)

    def _index_inner(self, index) -> bool:
        names = set()
        for e in index:
            names |= K.expr_vars(e)
        return bool(names & self.inner_loop_vars)

    # -- evaluation ---------------------------------------------------------------------------
    def value(self, node: Node, index: tuple) -> tuple[str, bool]:
        key = (node, () if node.op is Op.CONST else index if type(index) is tuple else tuple(index))
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        res = self._value(node, index)
        self.memo[key] = res
        return res

    def _value(self, node: Node, index: tuple) -> tuple[str, bool]:
        if node in self.in_index:
            v = self.new_var()
            inner = self._index_inner(index)
            self.emit(K.Load(v, _dt(node), self.in_index[node], index), inner)
            return v, inner
        if node not in self.members:
            raise CompileError(f"kfuse: node {node!r} is neither computed in kernel {self.group.id} "
                               "nor one of its inputs")
        op = node.op
        if op is Op.CONST:
            count = self.count_expr(node)
            if count is not None:
                return count, False
            v = self.new_var()
            self.emit(K.Const(v, _dt(node), node.attr("value")), False)
            return v, False
        if op is Op.PAD:
            return self.pad_value(node, index)
        if op is Op.GATHER:
            return self.gather_value(node, index)
        if op is Op.SEARCHSORTED:
            return self.search_value(node, index)
        if op is Op.RANDOM:
            return self.random_value(node, index)
        if op in MOVEMENT:
            return self.value(node.inputs[0], self.move_index(node, index))
        if op in REDUCE:
            return self.reduce_value(node, index)
        if op in SCAN:
            return self.scan_value(node, index)
        if op in ELEMENTWISE:
            args, inner = [], False
            for i in node.inputs:
                a, ai = self.value(i, index if i.ndim == node.ndim else ())
                args.append(a)
                inner |= ai
            v = self.new_var()
            name = "cast" if op is Op.CAST else ("where" if op is Op.WHERE else op.value)
            self.emit(K.Op(v, name, _dt(node), tuple(args), tuple([_dt(i) for i in node.inputs])), inner)
            return v, inner
        raise CompileError(f"kfuse: cannot lower {op.value} inside a {self.group.kind} kernel")

    def derived(self, key, inner: bool, stmt_of) -> tuple[str, bool]:
        """A value no graph node names (a PAD's bounds test), emitted once per ``key``."""
        if key not in self.memo:
            v = self.new_var()
            self.emit(stmt_of(v), inner)
            self.memo[key] = (v, inner)
        return self.memo[key]

    def pad_value(self, node: Node, index: tuple) -> tuple[str, bool]:
        """``where(in the input's region, input at the region's index, fill)``. Outside the region
        the input is read at a wrapped, in-bounds index (so any fused producer of it runs on valid
        indices). Along dim d, with start s, step t, length L and ``u = i + (M - s)`` (M the least
        multiple of t*L >= s, so u >= 0): i is in the region iff ``u // (t*L) == M // (t*L)`` and
        ``u % t == 0``, and it reads element ``(u % (t*L)) // t``."""
        src = node.inputs[0]
        starts, steps = node.attr("starts"), node.attr("steps")
        src_index, conds = [], []
        for d, (i, s, t, L) in enumerate(zip(index, starts, steps, src.shape)):
            t = 1 if L == 1 else t
            if (s, t, L) == (0, 1, node.shape[d]):
                src_index.append(i)
                continue
            tl = t * L
            m = -(-s // tl) * tl
            u = K.add(i, self.size((node, "pad-shift", d), m - s, f"pad shift, dim {d}"))
            span = self.size((node, "pad-span", d), tl, f"pad span, dim {d}")
            src_index.append(K.floordiv(K.mod(u, span), K.lit(t)))
            tests = [(K.floordiv(u, span), self.size((node, "pad-q", d), m // tl, f"pad block, dim {d}"))]
            if t > 1:
                tests.append((K.mod(u, K.lit(t)), K.lit(0)))
            for lhs, rhs in tests:
                a, b = (self.index_value(e) for e in (lhs, rhs))
                conds.append(self.op_value("equal", "bool", (a, b), ("int64", "int64")))
        val = self.value(src, tuple(src_index))
        if not conds:
            return val
        cond = conds[0]
        for c in conds[1:]:
            cond = self.op_value("logical_and", "bool", (cond, c), ("bool", "bool"))
        fill = self.derived(("const", _dt(node), repr(node.attr("fill"))), False,
                            lambda v: K.Const(v, _dt(node), node.attr("fill")))
        return self.op_value("where", _dt(node), (cond, val, fill), ("bool", _dt(node), _dt(node)))

    def gather_value(self, node: Node, index: tuple) -> tuple[str, bool]:
        """The source at the positions the index arrays hold (read at ``index``)."""
        return self.value(node.inputs[0], self.positions(node, index, 1))

    def search_value(self, node: Node, index: tuple) -> tuple[str, bool]:
        """A binary search of the key (read at ``index``) in the table, an input buffer."""
        table, key = node.inputs
        if table not in self.in_index:
            raise CompileError(f"kfuse: the table {node!r} searches is computed in kernel {self.group.id}; "
                               "it must be one of its inputs")
        k, inner = self.value(key, index)
        n = self.size((node, "table-n"), table.shape[0], "search table length")
        v = self.new_var()
        self.emit(K.Search(v, self.in_index[table], n, k, _dt(table), node.attr("side")), inner)
        return v, inner

    def random_value(self, node: Node, index: tuple) -> tuple[str, bool]:
        """Philox bits (``ir/philox.py``) of the element's C-order position in the node's own
        shape (Horner over its extents, run-time sizes), the seed read at ``index``, the node's
        stream and word: the value of an element depends on nothing else."""
        flat = K.lit(0)
        for d, (i, n) in enumerate(zip(index, node.shape)):
            if n != 1:
                ext = self.size(("random-n", n), n, f"random extent {n}") if d else K.lit(0)
                flat = K.add(K.mul(flat, ext), i)
        seed = self.value(node.inputs[0], index)
        consts = [self.derived(("const", "uint32", repr(node.attr(a))), False,
                               lambda v, a=a: K.Const(v, "uint32", node.attr(a))) for a in ("stream", "word")]
        return self.op_value("philox", "uint64", (self.index_value(flat), seed, *consts),
                             ("int64", "uint64", "uint32", "uint32"))

    def positions(self, node: Node, index: tuple, first: int) -> tuple:
        """The index into ``node.inputs[0]`` that a GATHER (or SCATTER) ``node``'s element ``index``
        reads (writes), its index arrays being ``node.inputs[first:]`` (a region scatter's position
        along a domain dim is ``start + I * step``, of its ``starts``/``steps``). A position ``x`` along a dim
        of extent n is ``where(x < 0, x + n, x)`` clamped to ``[0, n-1]``: always in bounds (an
        index out of range raises after the call, from the graph's check)."""
        src, dims = node.inputs[0], node.attr("dims")
        starts, steps = node.attr("starts"), node.attr("steps")     # (a region scatter)
        src_index = []
        for d, p in enumerate(dims):
            if src.shape[d] == 1:
                src_index.append(K.lit(0))
                continue
            if p >= 0 and starts is not None:
                start = self.size((node, "region-start", d), starts[d], f"region start, dim {d}")
                step = self.size((node, "region-step", d), steps[d], f"region step, dim {d}")
                src_index.append(K.add(start, K.mul(index[p], step)))
                continue
            if p >= 0:
                src_index.append(index[p])
                continue
            idx = node.inputs[first - 1 - p]
            x = self.value(idx, index)
            if _dt(idx) != "int64":
                x = self.op_value("cast", "int64", (x,), (_dt(idx),))
            ext = self.size((node, "gather-n", d), src.shape[d], f"gather extent, dim {d}")
            n, last = self.index_value(ext), self.index_value(K.sub(ext, K.lit(1)))
            zero = self.derived(("const", "int64", "0"), False, lambda v: K.Const(v, "int64", 0))
            i64 = ("int64", "int64")
            neg = self.op_value("less", "bool", (x, zero), i64)
            w = self.op_value("where", "int64", (neg, self.op_value("add", "int64", (x, n), i64), x),
                              ("bool", "int64", "int64"))
            c = self.op_value("minimum", "int64", (self.op_value("maximum", "int64", (w, zero), i64), last), i64)
            src_index.append(K.IVal(c[0], self.deps[c[0]]))
        return tuple(src_index)

    def index_value(self, expr) -> tuple[str, bool]:
        return self.derived(("index", expr), self._index_inner((expr,)), lambda v: K.Index(v, expr))

    def op_value(self, name: str, dtype: str, args, arg_dtypes) -> tuple[str, bool]:
        names = tuple(a[0] for a in args)
        return self.derived(("op", name, names), any(a[1] for a in args),
                            lambda v: K.Op(v, name, dtype, names, arg_dtypes))

    def move_index(self, node: Node, index: tuple) -> tuple:
        src = node.inputs[0]
        op = node.op
        if op is Op.BROADCAST:
            r, rin = node.ndim, src.ndim
            return tuple(K.lit(0) if src.shape[k] == 1 else index[r - rin + k] for k in range(rin))
        if op is Op.PERMUTE:
            perm = node.attr("perm")
            out = [None] * src.ndim
            for k, p in enumerate(perm):
                out[p] = index[k]
            return tuple(out)
        if op is Op.SLICE:
            starts, steps = node.attr("starts"), node.attr("steps")
            res = []
            for d in range(src.ndim):
                start = K.lit(0) if starts[d] == 0 else self.size((node, "start", d), starts[d],
                                                                   f"slice start, dim {d}")
                res.append(K.add(start, K.mul(index[d], K.lit(steps[d]))))
            return tuple(res)
        if op is Op.RESHAPE:
            return self.reshape_index(node, index)
        raise CompileError(f"kfuse: unknown movement op {op.value}")

    def reshape_index(self, node: Node, index: tuple) -> tuple:
        """Map an index of the reshaped node to its input's index (C order): dims of size 1 are
        dropped, the rest matched in groups of equal products; each group is linearised and
        unravelled with run-time sizes."""
        src = node.inputs[0]
        si, so = src.shape, node.shape
        out = [K.lit(0)] * src.ndim
        if 0 in si or 0 in so:
            return tuple(out)               # an empty node is never evaluated
        oi = [d for d in range(len(so)) if so[d] != 1]
        ii = [d for d in range(len(si)) if si[d] != 1]

        def sz(side, d):
            shape = so if side == "out" else si
            return self.size((node, side, d), shape[d], f"reshape {side} dim {d}")

        a = b = 0
        while a < len(oi) or b < len(ii):
            go, gi = [oi[a]], [ii[b]]
            po, pi = so[oi[a]], si[ii[b]]
            a, b = a + 1, b + 1
            while po != pi:
                if po < pi:
                    go.append(oi[a]); po *= so[oi[a]]; a += 1
                else:
                    gi.append(ii[b]); pi *= si[ii[b]]; b += 1
            if len(go) == 1 and len(gi) == 1:
                out[gi[0]] = index[go[0]]
                continue
            linear = index[go[0]]
            for d in go[1:]:
                linear = K.add(K.mul(linear, sz("out", d)), index[d])
            stride = K.lit(1)
            for k in range(len(gi) - 1, -1, -1):
                d = gi[k]
                q = K.floordiv(linear, stride)
                out[d] = q if k == 0 else K.mod(q, sz("in", d))
                stride = K.mul(stride, sz("in", d))
        return tuple(out)

    # -- reductions ---------------------------------------------------------------------------
    def canonical_index(self, shape: tuple) -> tuple:
        """The index of a reduced-shape value (keepdims or not) at the current outer index."""
        nd = len(self.domain_shape)
        if len(shape) == nd:
            return tuple(K.lit(0) if d in self.axes else self.full_index[d] for d in range(nd))
        if len(shape) == nd - len(self.axes):
            return tuple(self.full_index[d] for d in self.outer)
        raise CompileError(f"kfuse: value of shape {shape} does not match reduce domain "
                           f"{self.domain_shape} over axes {self.axes}")

    def reduce_value(self, node: Node, index: tuple) -> tuple[str, bool]:
        if node not in self.acc_vars:
            raise CompileError(f"kfuse: reduction {node!r} used before it is computed")
        if tuple(index) != self.canonical_index(node.shape):
            raise CompileError(f"kfuse: reduction {node!r} read at an index not aligned with the "
                               f"reduce domain {self.domain_shape} (axes {self.axes})")
        return self.acc_vars[node], False

    def scan_value(self, node: Node, index: tuple) -> tuple[str, bool]:
        """A scan's running value at the current inner index (a scan kernel's domain is the scan's
        shape, its inner dim the scan's axis; the value is read only at the full index)."""
        if tuple(index) != self.full_index or self.axes != (node.attr("axis"),):
            raise CompileError(f"kfuse: scan {node!r} read at an index other than its own in a kernel "
                               f"over {self.domain_shape} (axes {self.axes})")
        src, _ = self.value(node.inputs[0], index)
        v = self.new_var()
        self.emit(K.Scan(v, SCAN_UFUNC[node.op], _dt(node), src, scan_init(node)), True)
        self.deps[v] = frozenset(self.inner_loop_vars) | self.deps.get(src, frozenset())
        return v, True

    def end_phase(self, accs=()) -> K.Phase:
        ph = K.Phase(tuple(self.pre), tuple(accs), tuple(self.body))
        self.pre, self.body = [], []
        # inner-level values do not survive the phase's loop
        self.memo = {k: v for k, v in self.memo.items() if not v[1]}
        return ph

    def acc_for(self, node: Node) -> K.Acc:
        kind = _ACC_KIND[node.op]
        src_node, mask = node.inputs[0], None
        if node.attr("where_skips") and src_node.op is Op.WHERE:    # (trace.reductions.reduce_node)
            mask, _ = self.value(src_node.inputs[0], self.full_index)
            src_node = src_node.inputs[1]
        src, _ = self.value(src_node, self.full_index)
        sdt = src_node.dtype
        dt = node.dtype
        if kind in ("sum", "prod"):
            if dt.kind == "c":       # a sum in complex128; a product in its dtype, as NumPy's (overflows alike)
                acc_dt = "complex128" if kind == "sum" else dt.name
            elif is_float(dt):
                acc_dt = "float64"
            elif dt.kind == "u":
                acc_dt = "uint64"
            elif dt.kind == "b":
                acc_dt = "bool"
                kind = "any" if kind == "sum" else "all"
            else:
                acc_dt = "int64"
            init = (0 if kind == "sum" else 1) if dt.kind != "b" else (kind == "all")
            if is_float(dt) or dt.kind == "c":
                init = complex(init) if dt.kind == "c" else float(init)
        elif kind in ("any", "all"):
            acc_dt, init = "bool", kind == "all"
        else:
            acc_dt = sdt.name
            hi = kind in ("max", "argmax")
            if is_float(sdt):
                init = float("-inf") if hi else float("inf")
            elif sdt.kind == "c":       # below (above) every value lexicographically
                init = complex(*(2 * [float("-inf") if hi else float("inf")]))
            elif sdt.kind == "b":
                init = not hi
            else:
                import numpy as np
                info = np.iinfo(sdt)
                init = int(info.min) if hi else int(info.max)
        pos = None
        if kind in ("argmax", "argmin"):
            pos = K.lit(0)
            for d in self.axes:
                pos = K.add(K.mul(pos, self.domain[d]), self.full_index[d])
        v = self.new_var()
        self.acc_vars[node] = v
        return K.Acc(v, kind, dt.name, acc_dt, src, sdt.name, init, pos, mask)

    # -- kinds --------------------------------------------------------------------------------
    def store_outputs(self, outputs, full_level: bool) -> None:
        for node in outputs:
            k = self.out_index[node]
            idx = self.full_index if full_level else self.canonical_index(node.shape)
            v, inner = self.value(node, idx)
            self.emit(K.Store(k, idx, v), inner or self._index_inner(idx))

    def run(self) -> K.KernelIR:
        g = self.group
        self.out_index = {n: k for k, n in enumerate(g.outputs)}
        self.acc_vars: dict = {}
        phases = []
        contraction, init_from = None, ()
        inputs = [K.Buffer(f"in{k}", _dt(n), n.ndim, n.shape, host_scalar(n, g)) for k, n in enumerate(self.inputs)]
        if g.kind in (GroupKind.ELEMENTWISE, GroupKind.MATMUL):
            for o in g.outputs:
                if tuple(o.shape) != self.domain_shape:
                    raise CompileError(f"kfuse: output {o!r} of {g.kind} kernel {g.id} does not have "
                                       f"the kernel's domain shape {self.domain_shape}")
            if g.kind == GroupKind.MATMUL:
                contraction = self.contraction(inputs)
            self.store_outputs(g.outputs, True)
            if g.in_place:      # an output may be an input's buffer: every load before any store
                self.pre.sort(key=lambda st: isinstance(st, K.Store))
            phases.append(self.end_phase())
            outer, inner = tuple(range(len(self.domain_shape))), ()
        elif g.kind in ROW_KINDS:
            same = {}     # a reduction computed once: x.mean(0) and x.var(0)'s own mean differ only in keepdims
            for node in g.nodes:
                if node.op in REDUCE:
                    if tuple(node.inputs[0].shape) != self.domain_shape or tuple(node.attr("axes")) != self.axes:
                        raise CompileError(f"kfuse: reduction {node!r} does not match the group's "
                                           f"domain {self.domain_shape} / axes {self.axes}")
                    key = (node.op, node.dtype, node.inputs[0],
                           tuple((k, repr(v)) for k, v in node.attrs if k != "keepdims"))
                    if key in same:
                        self.acc_vars[node] = self.acc_vars[same[key]]
                        continue
                    same[key] = node
                    acc = self.acc_for(node)
                    phases.append(self.end_phase([acc]))
            # a value of the domain's shape is full-level (if the reduced extents are all 1 the
            # keepdims and full-level indices coincide anyway)
            full = [o for o in g.outputs if tuple(o.shape) == self.domain_shape]
            rest = [o for o in g.outputs if o not in full]
            self.store_outputs(rest, False)
            self.store_outputs(full, True)
            phases.append(self.end_phase())
            outer, inner = self.outer, self.axes
        elif g.kind == GroupKind.SCATTER:
            sc = g.anchor
            k, idx = self.out_index[sc], self.full_index
            self.store_outputs([o for o in g.outputs if o is not sc], True)   # producers read elsewhere
            v, inner = self.value(sc.inputs[1], idx)
            mode = sc.attr("mode")
            self.emit(K.Store(k, self.positions(sc, idx, 2), v, "" if mode == "set" else mode,
                              "" if mode == "set" else sc.attr("loop")), inner)
            phases.append(self.end_phase())
            outer, inner = tuple(range(len(self.domain_shape))), ()
            init_from = ((k, self.in_index[sc.inputs[0]]),)
        else:
            raise CompileError(f"kfuse: unknown kernel kind {g.kind!r}")
        outputs = [K.Buffer(f"out{k}", _dt(n), n.ndim, n.shape) for k, n in enumerate(g.outputs)]
        if contraction is not None:
            inputs = inputs + [K.Buffer(f"in{contraction.result}", contraction.dtype,
                                        g.anchor.ndim, g.anchor.shape)]
        return K.KernelIR(name=f"k{g.id}", kind=g.kind, inputs=tuple(inputs), outputs=tuple(outputs),
                          sizes=tuple(self.sizes), domain=self.domain, outer=outer, inner=inner,
                          phases=tuple(phases), contraction=contraction, tile=self.tile,
                          init_from=init_from,
                          in_place=tuple((o, self.in_index[b]) for o, b in g.in_place if b in self.in_index))

    def contraction(self, inputs) -> K.Contraction:
        mm = self.group.anchor
        if mm is None or mm.op is not Op.MATMUL:
            raise CompileError(f"kfuse: matmul kernel {self.group.id} has no MATMUL anchor")

        def operand(n: Node):
            steps = []
            while n not in self.in_index:
                if n.op is Op.CAST:
                    steps.append(("cast", n.dtype.name))
                elif n.op is Op.PERMUTE:
                    steps.append(("permute", tuple(n.attr("perm"))))
                else:
                    raise CompileError(f"kfuse: matmul operand {n!r} ({n.op.value}) is not supported "
                                       "on the CPU; only casts and permutes of kernel inputs")
                n = n.inputs[0]
            return self.in_index[n], tuple(reversed(steps))

        (la, ls), (ra, rs) = operand(mm.inputs[0]), operand(mm.inputs[1])
        slot = len(self.inputs)
        self.in_index = dict(self.in_index)
        self.in_index[mm] = slot
        return K.Contraction(la, ra, mm.dtype.name, slot, ls, rs)


def scan_init(node: Node):
    """The running value a scan starts from, so that its first step gives the first element
    exactly: -0.0 for a float sum (-0.0 + x is x, -0.0 included), 1, -inf/+inf or the integer
    limits; for booleans False (add, maximum) or True (multiply, minimum)."""
    dt, op = node.dtype, node.op
    if dt.kind == "b":
        return op in (Op.CUMPROD, Op.CUMMIN)
    if dt.kind == "c":
        v = {Op.CUMSUM: -0.0, Op.CUMPROD: 1.0, Op.CUMMIN: float("inf"), Op.CUMMAX: float("-inf")}[op]
        return complex(v, -0.0 if op is Op.CUMSUM else 0.0 if op is Op.CUMPROD else v)
    if op is Op.CUMSUM:
        return -0.0 if is_float(dt) else 0
    if op is Op.CUMPROD:
        return 1.0 if is_float(dt) else 1
    hi = op is Op.CUMMIN
    if is_float(dt):
        return float("inf") if hi else float("-inf")
    info = np.iinfo(dt)
    return int(info.max) if hi else int(info.min)


def lower_group(group, tile=None, sized: frozenset = frozenset()) -> K.KernelIR:
    """Lower one fusion group (``elementwise``, ``reduce`` or ``matmul``) to a KernelIR.
    ``sized``: integer CONST nodes read from size parameters instead of compiled in (constants
    that change with the arguments' sizes, such as an index check's bound: ``runtime.shape_class``).
    An ``attention`` group: ``codegen.attention_lower``."""
    if group.kind == GroupKind.ATTENTION:
        from .attention_lower import lower_attention
        return lower_attention(group, lower_group)
    return _Lowerer(group, tile, sized).run()
