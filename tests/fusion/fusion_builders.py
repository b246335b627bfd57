"""Hand-built IR for the fusion tests (the tracer is written in parallel), and a small NumPy
evaluator of graphs used to check that optimize() keeps values bit-for-bit."""
from __future__ import annotations

import numpy as np

from kfuse.ir.graph import Graph, Node
from kfuse.ir.ops import BINARY, REDUCE, TERNARY, UNARY, Op


class B:
    def __init__(self):
        self.inputs: list[Node] = []

    def inp(self, name, dtype, shape):
        n = Node(Op.INPUT, dtype, shape, (), {"index": len(self.inputs), "name": name})
        self.inputs.append(n)
        return n

    @staticmethod
    def const(value, dtype):
        return Node(Op.CONST, dtype, (), (), {"value": value})

    @staticmethod
    def bcast(x, shape):
        shape = tuple(shape)
        return x if x.shape == shape else Node(Op.BROADCAST, x.dtype, shape, (x,))

    @staticmethod
    def cast(x, dtype):
        dtype = np.dtype(dtype)
        return x if x.dtype == dtype else Node(Op.CAST, dtype, x.shape, (x,))

    def ew(self, op: Op, *args):
        uf = getattr(np, op.value)
        dts = tuple(a.dtype if isinstance(a, Node) else type(a) for a in args)
        loop = uf.resolve_dtypes(dts + (None,))
        shape = np.broadcast_shapes(*[a.shape for a in args if isinstance(a, Node)])
        ins = []
        for a, dt in zip(args, loop[:len(args)]):
            if not isinstance(a, Node):
                a = self.const(np.array(a, dtype=dt).item(), dt)
            ins.append(self.bcast(self.cast(a, dt), shape))
        return Node(op, loop[len(args)], shape, ins)

    def where(self, c, a, b):
        shape = np.broadcast_shapes(c.shape, a.shape, b.shape)
        dt = np.result_type(a.dtype, b.dtype)
        return Node(Op.WHERE, dt, shape, (self.bcast(c, shape), self.bcast(self.cast(a, dt), shape),
                                          self.bcast(self.cast(b, dt), shape)))

    def reduce(self, op: Op, x, axes, keepdims=False):
        axes = tuple(sorted(a % x.ndim for a in ((axes,) if isinstance(axes, int) else axes)))
        shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape)) if keepdims else \
            tuple(s for d, s in enumerate(x.shape) if d not in axes)
        return Node(op, x.dtype, shape, (x,), {"axes": axes, "keepdims": keepdims})

    def mean(self, x, axes, keepdims=False):
        s = self.reduce(Op.SUM, x, axes, keepdims)
        n = x.size // max(s.size, 1)
        return self.ew(Op.TRUE_DIVIDE, s, float(n))

    def matmul(self, a, b):
        return Node(Op.MATMUL, a.dtype, a.shape[:-1] + b.shape[-1:], (a, b))

    def graph(self, name, *outs):
        return Graph(name, tuple(self.inputs), tuple(outs), ("tuple", tuple(range(len(outs))))
                     if len(outs) > 1 else 0)


def evaluate(graph: Graph, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """NumPy semantics of every node (the reference the optimized graph must match bitwise)."""
    val: dict[Node, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for n in graph.nodes():
            a = [val[i] for i in n.inputs]
            if n.op is Op.INPUT:
                v = np.asarray(arrays[n.attr("index")])
            elif n.op is Op.CONST:
                v = np.array(n.attr("value"), dtype=n.dtype)
            elif n.op is Op.CAST:
                v = a[0].astype(n.dtype)
            elif n.op is Op.WHERE:
                v = np.where(*a)
            elif n.op in UNARY | BINARY:
                v = getattr(np, n.op.value)(*a)
            elif n.op in REDUCE:
                kw = dict(axis=n.attr("axes"), keepdims=n.attr("keepdims"))
                v = getattr(np, n.op.value)(a[0], **kw)
            elif n.op is Op.BROADCAST:
                v = np.broadcast_to(a[0], n.shape)
            elif n.op is Op.RESHAPE:
                v = a[0].reshape(n.shape)
            elif n.op is Op.PERMUTE:
                v = a[0].transpose(n.attr("perm"))
            elif n.op is Op.MATMUL:
                v = np.matmul(*a)
            else:
                raise NotImplementedError(n.op)
            v = np.asarray(v)
            assert v.dtype == n.dtype and v.shape == n.shape, (n, v.dtype, v.shape)
            val[n] = v
    return [val[o] for o in graph.outputs]


# -- the plan workloads ----------------------------------------------------------------------------

def gelu_tanh(b: B, x):
    inner = b.ew(Op.MULTIPLY, 0.7978845608028654,
                 b.ew(Op.ADD, x, b.ew(Op.MULTIPLY, 0.044715, b.ew(Op.POWER, x, 3))))
    return b.ew(Op.MULTIPLY, b.ew(Op.MULTIPLY, 0.5, x), b.ew(Op.ADD, 1.0, b.ew(Op.TANH, inner)))


def p1(N=4096, M=4096, dt="f4"):
    b = B()
    x, w, bias = b.inp("x", dt, (N, M)), b.inp("w", dt, (M,)), b.inp("b", dt, (M,))
    return b.graph("p1", gelu_tanh(b, b.ew(Op.ADD, b.ew(Op.MULTIPLY, x, w), bias)))


def softmax(N=1024, M=4096, dt="f4"):
    b = B()
    x = b.inp("x", dt, (N, M))
    m = b.reduce(Op.MAX, x, -1, keepdims=True)
    e = b.ew(Op.EXP, b.ew(Op.SUBTRACT, x, m))
    s = b.reduce(Op.SUM, e, -1, keepdims=True)
    return b.graph("softmax", b.ew(Op.TRUE_DIVIDE, e, s))


def log_softmax(N=1024, M=4096, dt="f4"):
    b = B()
    x = b.inp("x", dt, (N, M))
    m = b.reduce(Op.MAX, x, -1, keepdims=True)
    xs = b.ew(Op.SUBTRACT, x, m)
    lse = b.ew(Op.LOG, b.reduce(Op.SUM, b.ew(Op.EXP, xs), -1, keepdims=True))
    return b.graph("log_softmax", b.ew(Op.SUBTRACT, xs, lse))


def layernorm(N=1024, M=4096, dt="f4"):
    b = B()
    x, g, be = b.inp("x", dt, (N, M)), b.inp("g", dt, (M,)), b.inp("b", dt, (M,))
    mu = b.mean(x, -1, keepdims=True)
    xc = b.ew(Op.SUBTRACT, x, mu)
    var = b.mean(b.ew(Op.POWER, xc, 2), -1, keepdims=True)
    y = b.ew(Op.TRUE_DIVIDE, xc, b.ew(Op.SQRT, b.ew(Op.ADD, var, 1e-5)))
    return b.graph("layernorm", b.ew(Op.ADD, b.ew(Op.MULTIPLY, y, g), be))


def rownorm(N=1024, M=512, dt="f4"):
    b = B()
    x = b.inp("x", dt, (N, M))
    return b.graph("p4", b.ew(Op.SQRT, b.reduce(Op.SUM, b.ew(Op.MULTIPLY, x, x), 1)))


def matmul_bias_gelu(M=1024, K=1024, N=1024, dt="f2"):
    b = B()
    x, w, bias = b.inp("x", dt, (M, K)), b.inp("w", dt, (K, N)), b.inp("b", dt, (N,))
    return b.graph("p5", gelu_tanh(b, b.ew(Op.ADD, b.matmul(x, w), bias)))


def adam(n=1 << 24, dt="f4", b1=0.9, b2=0.999, lr=1e-3, eps=1e-8, t=3):
    b = B()
    p, g, m, v = (b.inp(k, dt, (n,)) for k in "pgmv")
    m2 = b.ew(Op.ADD, b.ew(Op.MULTIPLY, b1, m), b.ew(Op.MULTIPLY, 1 - b1, g))
    v2 = b.ew(Op.ADD, b.ew(Op.MULTIPLY, b2, v), b.ew(Op.MULTIPLY, b.ew(Op.MULTIPLY, 1 - b2, g), g))
    mhat = b.ew(Op.TRUE_DIVIDE, m2, 1 - b1 ** t)
    vhat = b.ew(Op.TRUE_DIVIDE, v2, 1 - b2 ** t)
    upd = b.ew(Op.TRUE_DIVIDE, b.ew(Op.MULTIPLY, lr, mhat), b.ew(Op.ADD, b.ew(Op.SQRT, vhat), eps))
    return b.graph("adam", b.ew(Op.SUBTRACT, p, upd), m2, v2)


def adam_runtime_scalars(n=1 << 20, dt="f4"):
    """Adam with b1, b2, t, lr as run-time 0-d inputs: the scalar math is recomputed per element."""
    b = B()
    p, g, m, v = (b.inp(k, dt, (n,)) for k in "pgmv")
    b1, b2, lr, t = (b.inp(k, dt, ()) for k in ("b1", "b2", "lr", "t"))
    m2 = b.ew(Op.ADD, b.ew(Op.MULTIPLY, b1, m), b.ew(Op.MULTIPLY, b.ew(Op.SUBTRACT, 1.0, b1), g))
    v2 = b.ew(Op.ADD, b.ew(Op.MULTIPLY, b2, v),
              b.ew(Op.MULTIPLY, b.ew(Op.MULTIPLY, b.ew(Op.SUBTRACT, 1.0, b2), g), g))
    mhat = b.ew(Op.TRUE_DIVIDE, m2, b.ew(Op.SUBTRACT, 1.0, b.ew(Op.POWER, b1, t)))
    vhat = b.ew(Op.TRUE_DIVIDE, v2, b.ew(Op.SUBTRACT, 1.0, b.ew(Op.POWER, b2, t)))
    upd = b.ew(Op.TRUE_DIVIDE, b.ew(Op.MULTIPLY, lr, mhat), b.ew(Op.ADD, b.ew(Op.SQRT, vhat), 1e-8))
    return b.graph("adam_rt", b.ew(Op.SUBTRACT, p, upd), m2, v2)


def rmsnorm_residual(N=1024, M=4096, dt="f4"):
    b = B()
    x, r, w = b.inp("x", dt, (N, M)), b.inp("r", dt, (N, M)), b.inp("w", dt, (M,))
    h = b.ew(Op.ADD, x, r)
    ms = b.mean(b.ew(Op.MULTIPLY, h, h), -1, keepdims=True)
    y = b.ew(Op.MULTIPLY, b.ew(Op.TRUE_DIVIDE, h, b.ew(Op.SQRT, b.ew(Op.ADD, ms, 1e-6))), w)
    return b.graph("rmsnorm", y, h)


def diamond(N=256, dt="f4"):
    """y = exp(x); z = y @ w; out = y + z. Fusing exp with the add would put the matmul between
    two parts of one kernel (a cycle)."""
    b = B()
    x, w = b.inp("x", dt, (N, N)), b.inp("w", dt, (N, N))
    y = b.ew(Op.EXP, x)
    return b.graph("diamond", b.ew(Op.ADD, y, b.matmul(y, w)))
