"""Functions that write into their arguments (``x += y``, ``x[:, 0] = v``, ``np.add(a, b,
out=x)``) and may return nothing, as NumPy code such as an optimizer step is written.

An elementwise kernel that computes an argument's final value writes it into the caller's array
itself (``KernelGroup.in_place``, ``plan.with_argument_writes``) where that is safe: the kernel
reads the old value only at the element it writes, no later kernel reads the old value, and the
index checks run first. Elsewhere (``x[1:] = x[:-1]``, ``x[...] = x[::-1]``) the value goes
through a new buffer and is copied back, as before. Checked here: the plans, the CUDA C signature
(the aliased pair without ``__restrict__``, so NVRTC emits coherent loads, and every load before
any store), and the results against NumPy on every backend, the caller's arrays included."""
import numpy as np
import pytest

import kfuse
from tests.codegen.ptx_backends import compile_to_ptx
from tests.tolerance import assert_matches_numpy


def adam_step(p, g, m, v):
    m *= 0.9
    m += 0.1 * g
    v *= 0.999
    v += 0.001 * g * g
    p -= 1e-3 * (m / 0.6513) / (np.sqrt(v / 0.00995) + 1e-8)


def keeps_old_value(x, y):
    z = x * 2 + y                   # the old x, read in the kernel that writes the new one
    x += y
    return z


def reversed_into_itself(x):
    x[...] = x[::-1] * 2            # NumPy reads every old element first: not in place


def shifted(x):
    x[1:] = x[:-1] + 1


def add_out(x, a, b):
    np.add(a, b, out=x)             # the old x is not read at all


def column(x):
    x[:, 0] = -1                    # a region scatter: one kernel over the column, in place


def kv_update(cache, k, t):
    cache[:, t] = k                 # t a Python int: a scatter at a traced position, in place


def reversed_rows(x, v):
    x[::-2, 1:3] = v * 2            # a region with a negative step


def centred(x):
    x -= x.mean()                   # the old value is reduced first


def write_then_reduce(x, y):
    x *= y
    return x.sum(axis=0)            # a later kernel reads the new value (the argument's buffer)


def returns_written(x):
    x += 1
    return x, x * 2


def gather_add(x, y, idx):
    x += y[idx]                     # an index check: computed (and passed) before x is written


def nothing(x):
    pass


CASES = {   # function -> (argument shapes, names of the arguments written in place)
    adam_step: ([(64, 33)] * 4, {"m", "v", "p"}),
    keeps_old_value: ([(50,), (50,)], {"x"}),
    reversed_into_itself: ([(41,)], set()),
    shifted: ([(41,)], set()),
    add_out: ([(8, 9), (8, 9), (9,)], {"x"}),
    column: ([(6, 7)], {"x"}),
    kv_update: ([(3, 9, 4), (3, 4), 5], {"cache"}),
    reversed_rows: ([(7, 5), (2,)], {"x"}),
    centred: ([(300,)], None),           # (in place or not: the planner's choice of kernels)
    write_then_reduce: ([(20, 30), (30,)], None),    # (fused into the reduction here)
    returns_written: ([(17,)], {"x"}),
}


def _arrays(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.1, 2.0, s).astype(dtype) if isinstance(s, tuple) else s for s in shapes]


def _in_place_names(fn, args, backend="cpu"):
    """The arguments some kernel of the plan writes in place: an elementwise kernel computing its
    final value, or a scatter into it."""
    plan = kfuse.jit(fn).lower(*args, backend=backend).plan
    return ({base.attr("name") for g in plan.groups for _, base in g.in_place}
            | {g.anchor.inputs[0].attr("name") for g in plan.groups if plan.scatters_into_argument(g)})


@pytest.mark.parametrize("fn", list(CASES), ids=lambda f: f.__name__)
def test_which_writes_go_into_the_argument(fn):
    shapes, want = CASES[fn]
    if want is not None:
        assert _in_place_names(fn, _arrays(shapes, np.float32, 0)) == want


def test_a_slice_write_is_one_kernel_over_the_slice():
    """``x[:, 0] = v`` into an argument: a region scatter, whose kernel's domain is the column (not
    the array) and whose stores go to ``start + i * step`` (size parameters, so another slice of the
    same shape reuses the kernel)."""
    plan = kfuse.jit(reversed_rows).lower(*_arrays(CASES[reversed_rows][0], np.float32, 0)).plan
    (g,) = plan.groups
    assert g.kind == "scatter" and g.domain == (4, 2) and plan.scatters_into_argument(g)
    assert g.anchor.attr("starts") == (0, 1) and g.anchor.attr("steps") == (2, 1)   # (the piece reversed)
    kir = kfuse.jit(reversed_rows).lower(*_arrays(CASES[reversed_rows][0], np.float32, 0)).kernels()[0]
    assert [s.what for s in kir.sizes if "region" in s.what] == [
        "region start, dim 0", "region step, dim 0", "region start, dim 1", "region step, dim 1"]


def test_the_plan_says_which_argument_a_kernel_writes():
    args = _arrays(CASES[adam_step][0], np.float32, 0)
    plan = kfuse.jit(adam_step).lower(*args).plan
    assert len(plan.groups) == 1
    text = plan.groups[0].describe()
    for name in ("m", "v", "p"):
        assert f"(writes {name!r} in place)" in text


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("fn", list(CASES), ids=lambda f: f.__name__)
def test_argument_writes_match_numpy(backend, dtype, fn, cupy_for):
    shapes, _ = CASES[fn]
    args = _arrays(shapes, dtype, 1)
    arrays = [k for k, a in enumerate(args) if isinstance(a, np.ndarray)]

    def fresh(to=np.array):
        return [to(a.copy()) if k in arrays else a for k, a in enumerate(args)]
    want_args = fresh()
    want = fn(*want_args)
    f = kfuse.jit(fn, backend=backend)
    if backend == "cpu":
        got_args = fresh()
        got = f(*got_args)
        host = got_args
    else:
        cp = cupy_for(backend)
        got_args = fresh(cp.asarray)
        got = f(*got_args)
        host = [cp.asnumpy(a) if k in arrays else a for k, a in enumerate(got_args)]
    if want is None:
        assert got is None
    elif fn is returns_written:
        assert got[0] is got_args[0]                    # the caller's array itself, as in NumPy
    for k in arrays:
        assert_matches_numpy(host[k], want_args[k])
    if want is not None and fn is not returns_written:
        assert_matches_numpy(np.asarray(got if backend == "cpu" else cp.asnumpy(got)), want)


def test_a_failed_index_check_writes_nothing(backend, cupy_for):
    x, y = _arrays([(5, 4), (3, 4)], np.float32, 2)
    idx = np.array([0, 2, 1, 0, 2])
    assert _in_place_names(gather_add, [x, y, idx]) == {"x"}
    bad = np.array([0, 2, 3, 0, 1])
    f = kfuse.jit(gather_add, backend=backend)
    xp = np if backend == "cpu" else cupy_for(backend)
    dx = xp.asarray(x.copy())
    with pytest.raises(IndexError):
        f(dx, xp.asarray(y), xp.asarray(bad))
    np.testing.assert_array_equal(dx if xp is np else xp.asnumpy(dx), x)     # nothing half-written
    assert f(dx, xp.asarray(y), xp.asarray(idx)) is None
    np.testing.assert_array_equal(dx if xp is np else xp.asnumpy(dx), x + y[idx])


def test_a_strided_argument_is_written_in_place(backend, cupy_for):
    """A transposed, sliced argument (any layout whose elements are distinct memory) is written
    as it is; its parent array sees the write, as in NumPy."""
    base = _arrays([(12, 10)], np.float32, 3)[0]
    want = base.copy()
    keeps_old_value(want.T[::2], np.float32(3))
    xp = np if backend == "cpu" else cupy_for(backend)
    got = xp.asarray(base.copy())
    kfuse.jit(keeps_old_value, backend=backend)(got.T[::2], 3.0)
    assert_matches_numpy(got if xp is np else xp.asnumpy(got), want)


def test_a_function_returning_none():
    x = np.ones(3)
    assert kfuse.jit(nothing)(x) is None
    assert kfuse.jit(lambda x: (x + 1, None))(x)[1] is None


def test_cuda_source_of_an_in_place_kernel(tmp_path):
    """The CUDA C of the in-place Adam step: the three written arguments and their outputs carry
    no ``__restrict__`` (coherent loads, kept before the stores), the gradient keeps it, every
    load comes before the first store, and NVRTC's PTX for it assembles."""
    src = compile_to_ptx(adam_step, "cuda", ["f32[4096]"] * 4, tmp_path, "adam_in_place")
    kir = kfuse.jit(adam_step).lower(*_arrays([(4096,)] * 4, np.float32, 0),
                                     backend="cuda").kernels(for_gpu=True)[0]
    shared = {f"out{o}" for o, _ in kir.in_place} | {f"in{i}" for _, i in kir.in_place}
    assert len(kir.in_place) == 3 and len(shared) == 6
    (grad,) = {f"in{k}" for k in range(4)} - shared
    for name in shared:
        assert f"* {name}" in src and f"__restrict__ {name}" not in src
    assert f"__restrict__ {grad}" in src
    body = kir.phases[0].pre
    first_store = min(k for k, st in enumerate(body) if type(st).__name__ == "Store")
    assert all(type(st).__name__ != "Load" for st in body[first_store:])
