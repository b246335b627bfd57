"""One pass for a variance's two (codegen.variance): which kernels it rewrites, the statements it
writes, its accuracy on data far from zero (the shifted-data algorithm), and that the CPU's
column order and the CUDA C variants that re-read memory render it."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda as ce
from kfuse.codegen.variance import one_pass_variance

RNG = np.random.default_rng(9)


def _kir(fn, shape, dtype=np.float32):
    return kfuse.jit(fn).lower(np.zeros(shape, dtype)).kernels()[0]


def _loops(kir):
    return sum(1 for ph in kir.phases if ph.accs or ph.body)


STATS = {
    "standardise": lambda x: (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5),
    "written_out": lambda x: ((x - x.mean(0)) ** 2).mean(0),
    "layernorm_rows": lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(((x - x.mean(-1, keepdims=True)) ** 2).mean(-1, keepdims=True) + 1e-5),
    "std_middle": lambda x: x.std(axis=1),
}


@pytest.mark.parametrize("name", list(STATS))
def test_second_pass_joins_the_first(name):
    shape = (30, 40, 50) if name == "std_middle" else (300, 70)
    kir = _kir(STATS[name], shape)
    new = one_pass_variance(kir)
    assert _loops(new) == _loops(kir) - 1
    accs = [a for ph in new.phases for a in ph.accs]
    assert sum(a.acc_dtype == "float64" and a.src_dtype == "float64" for a in accs) == 2      # P and Q
    assert one_pass_variance(new) == new                                                       # a fixpoint


def test_left_alone_where_it_does_not_apply():
    for fn, dt in [(lambda x: x.var(0), np.float64),                 # float64 data: NumPy's two passes kept
                   (lambda x: ((x - x.max(0)) ** 2).sum(0), np.float32),   # not a deviation from the mean
                   (lambda x: (x - x.mean(0)) * x.sum(0), np.float32)]:
        kir = _kir(fn, (64, 8), dt)
        assert one_pass_variance(kir) == kir


@pytest.mark.parametrize("name", ["standardise", "std_middle"])
def test_cpu_column_order_is_accurate_far_from_zero(name):
    """Data of mean 1e4 and deviation 1: the float64 shifted sums beat NumPy's own float32 pairs."""
    fn = STATS[name]
    shape = (30, 401, 50) if name == "std_middle" else (4001, 70)
    x = (RNG.standard_normal(shape) + 1e4).astype(np.float32)
    f = kfuse.jit(fn, backend="cpu")
    got = f(x)
    cpu = list(f._programs.values())[-1].program.stages["cpu"]
    assert "order=cols" in cpu and "_wq" in cpu          # the folded sums, in the column order
    ref = fn(x.astype(np.float64))
    assert np.max(np.abs(got - ref)) <= max(2 * np.max(np.abs(fn(x) - ref)), 1e-4 * np.max(np.abs(ref)))


nvrtc = pytest.importorskip("kfuse.codegen.nvrtc")


@pytest.mark.parametrize("variant", [ce.Variant("col", 1, False, 0, 128, min_blocks=16, split=9, grid_sync=True),
                                     ce.Variant("row", 4, False, 0, 256)])
def test_cuda_variants_render_the_folded_kernel(variant):
    kir = one_pass_variance(_kir(STATS["standardise"] if variant.mode == "col" else STATS["layernorm_rows"], (300, 64)))
    src = ce.emit(kir, variant)
    assert "v" in src and src.count("kf_grid_sync(") == (2 if variant.grid_sync else 0) + src.count("__device__ __forceinline__ void kf_grid_sync")
    nvrtc.compile(src, "sm_90")
