"""Where-arms as branches in the CUDA emitter (codegen.cuda_branches), without a GPU: which wheres
branch (an index-only condition, an arm with its own loads or ops), which statements move into an
arm (those feeding it alone), the rendered C, and NVRTC's acceptance of it. The values themselves
are checked on the GPU (tests/gpu, the concatenate and pad cases of the op tests)."""
import numpy as np
import pytest

pytest.importorskip("cuda.bindings.nvrtc")

import kfuse  # noqa: E402
from kfuse.codegen import kernel_ir as K  # noqa: E402
from kfuse.codegen.cuda_branches import render, sink  # noqa: E402


def _kernel(fn, *specs):
    low = kfuse.jit(fn).lower(*specs, backend="cuda")
    (kir,) = low.compile().kirs
    src = low.as_text("cuda")
    return kir, src[src.index("__global__"):]          # (the kernel: the prelude has branches of its own)


def test_concatenate_pieces_branch_and_compile():
    kir, src = _kernel(lambda x, z: np.concatenate([x, x * x, np.sin(z)], axis=1), "f32[64,96]", "f32[64,32]")
    plan = sink(kir.phases[0].pre)
    assert plan is not None and len(plan) >= 2
    stmts = list(kir.phases[0].pre)
    sin_at = next(k for k, s in enumerate(stmts) if isinstance(s, K.Op) and s.op == "sin")
    assert any(sin_at in then | other for then, other in plan.values())   # sin runs in its own piece only
    assert "if (" in src and "} else {" in src and "sinf(" in src
    ptx = kfuse.jit(lambda x, z: np.concatenate([x, x * x, np.sin(z)], axis=1)).lower(
        "f32[64,96]", "f32[64,32]", backend="cuda").as_text("ptx")
    assert ".entry" in ptx and "bra" in ptx


def test_cheap_arms_stay_selects():
    """Rotary's halves (a load negated, a load): no branch a lane."""
    def rotary(x, c, s):
        h = x.shape[-1] // 2
        return x * c + np.concatenate((-x[..., h:], x[..., :h]), axis=-1) * s
    kir, src = _kernel(rotary, "f32[4,16,128]", "f32[16,128]", "f32[16,128]")
    assert sink(kir.phases[0].pre) is None and "if (" not in src


def test_data_dependent_where_stays_a_select():
    kir, src = _kernel(lambda x: np.where(x > 0, np.exp(x), x * 0.5), "f32[64,96]")
    assert sink(kir.phases[0].pre) is None and "if (" not in src


def _op(dst, op, dtype, *args):
    return K.Op(dst, op, dtype, args, tuple("float32" for _ in args))


def test_only_values_feeding_one_arm_move():
    i = K.IVar("i0")
    stmts = [
        K.Index("c0", "int64", i),
        K.Const("k", "int64", 3),
        _op("c", "less", "bool", "c0", "k"),
        K.Load("a", "float32", 0, (i,)),                    # both arms read it: stays
        _op("t", "exp", "float32", "a"),                    # then arm only: moves
        K.Load("b", "float32", 1, (i,)),                    # else arm and a store: stays
        _op("e", "sin", "float32", "b"),                    # else arm only: moves
        _op("t2", "add", "float32", "t", "a"),
        _op("e2", "add", "float32", "e", "a"),
        _op("w", "where", "float32", "c", "t2", "e2"),
        K.Store(0, (i,), "w"),
        K.Store(1, (i,), "b"),
    ]
    plan = sink(stmts)
    (at, (then, other)), = plan.items()
    names = lambda ks: {stmts[k].dst for k in ks}
    assert stmts[at].dst == "w" and names(then) == {"t", "t2"} and names(other) == {"e", "e2"}
    lines = render(stmts, plan, str, lambda w: f"decl {w.dst}")
    text = "\n".join(lines)
    assert text.index("decl w") < text.index("if (c)") < text.index("t: float32 = exp(a)") < text.index("} else {")
    assert text.index("} else {") < text.index("e: float32 = sin(b)")
    assert text.index("a: float32 = load") < text.index("decl w")          # shared values before the branch


def test_condition_read_from_memory_does_not_branch():
    i = K.IVar("i0")
    stmts = [K.Load("m", "bool", 0, (i,)), K.Load("a", "float32", 1, (i,)), _op("t", "exp", "float32", "a"),
             K.Const("z", "float32", 0.0), _op("w", "where", "float32", "m", "t", "z"), K.Store(0, (i,), "w")]
    assert sink(stmts) is None


def test_a_position_read_outside_the_arm_stays_outside():
    """A value that feeds an arm and also serves as a gathered position (an IVal in a load's
    index) outside it is computed before the branch."""
    i = K.IVar("i0")
    stmts = [
        K.Index("c0", "int64", i),
        K.Const("k", "int64", 3),
        _op("c", "less", "bool", "c0", "k"),
        K.Load("p", "int64", 2, (i,)),
        _op("t", "exp", "float32", "p"),                    # then arm
        K.Load("g", "float32", 1, (K.IVal("p", frozenset({"i0"})),)),   # p as a position, outside
        _op("w", "where", "float32", "c", "t", "g"),
        K.Store(0, (i,), "w"),
    ]
    (at, (then, other)), = sink(stmts).items()
    assert {stmts[k].dst for k in then} == {"t"} and {stmts[k].dst for k in other} == {"g"}   # p in neither
