"""Scatter kernels (``x[i] = v``, ``ufunc.at``, ``np.put``, ``np.put_along_axis``) on the two GPU
backends.

Without a GPU: each program's scatter kernel as CUDA C, compiled by NVRTC to PTX for sm_80 and
sm_90 that ptxas accepts, with the store the emitter must pick (a plain store, one hardware atomic,
or a compare-and-swap loop on the element's word); as Numba-CUDA source compiled to PTX where
numba's atomics compute the combine exactly, and refused (``UnsupportedError``, when the program is
compiled) where they do not; the launch shape (scalar, 64-bit index math when the output is large
even if the domain is small).

With a GPU (``gpu`` marked, skipped without one): the same programs on backends "cuda" and
"numba-cuda" against NumPy, the argument written included: exact for plain stores to distinct
positions, integer and boolean combines, max and min (NaN included); float add and multiply within
the tolerance table (the atomics' order is not NumPy's)."""
import dataclasses
import os
import subprocess
import types

import numpy as np
import pytest

import kfuse
from kfuse.autotune.space import TileConfig
from kfuse.codegen import cuda, cuda_shapes, numba_cuda
from kfuse.codegen import kernel_ir as K
from kfuse.errors import CompileError, UnsupportedError
from kfuse.runtime import cuda_tiles
from tests.codegen.ptx_backends import PTXAS
from tests.tolerance import assert_matches_numpy

N = 37              # slots of the written axis: odd, so a narrow element's word may end past the array
M = 1000            # values: each slot is hit about 27 times
FEW = 30            # fewer values than slots: a sub-word add stays a compare-and-swap (not summed wide)


def set_1d(x, i, v):
    x[i] = v
    return x


def set_cols(x, j, v):
    x[:, j] = v
    return x


def set_pairs(x, i, j, v):
    x[i, j] = v * 2
    return x


def add_at(x, i, v):
    np.add.at(x, i, v)
    return x


def or_at(x, i, v):
    np.logical_or.at(x, i, v)
    return x


def maximum_at(x, i, v):
    np.maximum.at(x, i, v)
    return x


def minimum_at(x, i, v):
    np.minimum.at(x, i, v)
    return x


def multiply_at(x, i, v):
    np.multiply.at(x, i, v)
    return x


def subtract_at(x, i, v):
    np.subtract.at(x, i, v)
    return x


def and_at(x, i, v):
    np.logical_and.at(x, i, v)
    return x


def xor_at(x, i, v):
    np.logical_xor.at(x, i, v)
    return x


def bitwise_or_at(x, i, v):
    np.bitwise_or.at(x, i, v)
    return x


def bitwise_and_at(x, i, v):
    np.bitwise_and.at(x, i, v)
    return x


def bitwise_xor_at(x, i, v):
    np.bitwise_xor.at(x, i, v)
    return x


def divide_at(x, i, v):
    np.true_divide.at(x, i, v)
    return x


def put(x, i, v):
    np.put(x, i, v)
    return x


def put_along_axis(x, i, v):
    np.put_along_axis(x, i, v, axis=1)
    return x


def _rng(seed: int = 0):
    return np.random.default_rng(seed)


def _base(dtype: str, shape=(N,)):
    rng = _rng(1)
    if dtype == "bool":
        return rng.random(shape) < 0.3
    if np.dtype(dtype).kind == "f":
        return (rng.integers(-8, 9, shape) * 0.5).astype(dtype)
    lo = 0 if dtype.startswith("u") else -100
    return rng.integers(lo, 100, shape).astype(dtype)


def _values(dtype: str, n: int = M, kind: str = "any"):
    """``n`` values: "any" (floats normal), "quarters" (floats with exact sums), "nonzero" (no
    zero, so no +0.0/-0.0 ties in max/min; a NaN), "factors" (exact products)."""
    rng = _rng(2)
    if dtype == "bool":
        return rng.random(n) < 0.1
    if kind == "factors":
        return rng.choice(np.array([0.5, 2.0, -1.0, 1.5]), n).astype(dtype)
    if kind == "integral":
        return rng.integers(-3, 4, n).astype(dtype)
    if np.dtype(dtype).kind == "f":
        if kind == "quarters":
            return (rng.integers(-8, 9, n) * 0.25).astype(dtype)
        v = rng.standard_normal(n)
        if kind == "nonzero":
            v = (rng.integers(1, 9, n) * 0.5 * rng.choice([-1, 1], n))
            v[n // 2] = np.nan
        return v.astype(dtype)
    lo = 0 if dtype.startswith("u") else -100
    return rng.integers(lo, 100, n).astype(dtype)


def _repeated(n: int = M, slots: int = N):
    """Positions with repeats, negative ones counted from the end."""
    return _rng(3).integers(-slots, slots, n)


def _distinct(n: int = 20, slots: int = N):
    """Distinct positions (a plain store's result is then NumPy's), some negative."""
    rng = _rng(4)
    p = rng.permutation(slots)[:n]
    return np.where(rng.random(n) < 0.3, p - slots, p)


@dataclasses.dataclass(frozen=True)
class Case:
    fn: object
    args: tuple
    store: str          # what the CUDA C store must contain ("" for a plain store)
    numba: str          # the numba atomic used ("" plain, None: refused)
    exact: bool = True  # the GPU result is NumPy's bit for bit


def _cases() -> dict:
    f32, f64 = "float32", "float64"
    rows = np.argsort(_rng(5).random((6, 8)), axis=1)[:, :3]      # distinct positions in each row
    return {
        "set_1d": Case(set_1d, (_base(f32), _distinct(), _values(f32, 20)), "", ""),
        "set_cols": Case(set_cols, (_base(f64, (5, N)), _distinct(12), _values(f64, 60).reshape(5, 12)), "", ""),
        "set_pairs": Case(set_pairs, (_base("float16", (N, 9)), _distinct(9), _distinct(9, 9), _values("float16", 9)),
                          "", ""),
        "add_at_float32": Case(add_at, (_base(f32), _repeated(), _values(f32)), "atomicAdd((float*)", "add", False),
        "add_at_float64": Case(add_at, (_base(f64), _repeated(), _values(f64)), "atomicAdd((double*)", "add", False),
        "add_at_rows_float32": Case(add_at, (_base(f32, (N, 5)), _repeated(200), _values(f32, 1000).reshape(200, 5)),
                                    "atomicAdd((float*)", "add", False),
        "add_at_int8": Case(add_at, (_base("int8"), _repeated(FEW), _values("int8", FEW)), "atomicCAS", None),
        "add_at_uint8": Case(add_at, (_base("uint8"), _repeated(FEW), _values("uint8", FEW)), "atomicCAS", None),
        "add_at_int32": Case(add_at, (_base("int32"), _repeated(), _values("int32")), "atomicAdd((int*)", "add"),
        "add_at_int64": Case(add_at, (_base("int64"), _repeated(), _values("int64")),
                             "atomicAdd((unsigned long long*)", "add"),
        "add_at_float16": Case(add_at, (_base("float16"), _repeated(), _values("float16", kind="quarters")),
                               "red.add.noftz.f16", None, False),
        "or_at_bool": Case(or_at, (_base("bool"), _repeated(), _values("bool")), "atomicOr(w_, acc_)", None),
        "and_at_bool": Case(and_at, (_base("bool"), _repeated(), ~_values("bool")), "atomicAnd(w_, acc_)", None),
        "xor_at_bool": Case(xor_at, (_base("bool"), _repeated(), _values("bool")), "atomicXor(w_, acc_)", None),
        "add_at_int8_int64_values": Case(add_at, (_base("int8"), _repeated(FEW), _values("int64", FEW)), "atomicCAS", None),
        "add_at_int16": Case(add_at, (_base("int16"), _repeated(FEW), _values("int16", FEW)), "atomicCAS", None),
        "subtract_at_uint16": Case(subtract_at, (_base("uint16"), _repeated(FEW), _values("uint16", FEW)), "atomicCAS", None),
        # as many values as slots or more (a histogram): summed in int32 with atomicAdd, then added
        # to the array once (kfuse/trace/scatter.py _summed_wide)
        "add_at_int8_hist": Case(add_at, (_base("int8"), _repeated(), _values("int8")), "atomicAdd((int*)", "add"),
        "subtract_at_uint16_hist": Case(subtract_at, (_base("uint16"), _repeated(), _values("uint16")),
                                        "atomicAdd((int*)", "add"),
        "multiply_at_int8": Case(multiply_at, (_base("int8"), _repeated(), _values("int8")), "atomicCAS", None),
        "subtract_at_int32": Case(subtract_at, (_base("int32"), _repeated(), _values("int32")),
                                  "atomicAdd((unsigned int*)", None),
        "subtract_at_float32": Case(subtract_at, (_base(f32), _repeated(), _values(f32)), "atomicAdd((float*)",
                                    None, False),
        "multiply_at_int32": Case(multiply_at, (_base("int32"), _repeated(), _values("int32", kind="integral")),
                                  "atomicCAS", None),
        "bitwise_or_at_int8": Case(bitwise_or_at, (_base("int8"), _repeated(), _values("int8")),
                                   "atomicOr(w_, acc_)", None),
        "bitwise_and_at_uint16": Case(bitwise_and_at, (_base("uint16"), _repeated(), _values("uint16")),
                                      "atomicAnd(w_, acc_)", None),
        "bitwise_xor_at_int64": Case(bitwise_xor_at, (_base("int64"), _repeated(), _values("int64")),
                                     "atomicXor((unsigned long long*)", None),
        "maximum_at_float16": Case(maximum_at, (_base("float16"), _repeated(), _values("float16", kind="nonzero")),
                                   "atomicCAS", None),
        "divide_at_float32": Case(divide_at, (_base(f32), _repeated(), _values(f32, kind="factors")), "atomicCAS",
                                  None, False),
        "maximum_at_float64": Case(maximum_at, (_base(f64), _repeated(), _values(f64, kind="nonzero")),
                                   "atomicCAS", None),
        "minimum_at_float32": Case(minimum_at, (_base(f32), _repeated(), _values(f32, kind="nonzero")),
                                   "atomicCAS", None),
        "maximum_at_int32": Case(maximum_at, (_base("int32"), _repeated(), _values("int32")), "atomicMax((int*)", "max"),
        "minimum_at_int64": Case(minimum_at, (_base("int64"), _repeated(), _values("int64")),
                                 "atomicMin((long long*)", "min"),
        "maximum_at_uint8": Case(maximum_at, (_base("uint8"), _repeated(), _values("uint8")), "atomicCAS", None),
        "multiply_at_float64": Case(multiply_at, (_base(f64), _repeated(), _values(f64, kind="factors")),
                                    "atomicCAS", None, False),
        "subtract_at_float64_into_int32": Case(subtract_at, (_base("int32"), _repeated(), _values(f64, kind="integral")),
                                               "atomicCAS", None),
        "put": Case(put, (_base(f32, (N, 3)), _distinct(30, 3 * N), _values(f32, 30)), "", ""),
        "put_along_axis": Case(put_along_axis, (_base("int32", (6, 8)), rows, _values("int32", 18).reshape(6, 3)),
                               "", ""),
    }


CASES = _cases()
ARCHS = ["sm_80", "sm_90"]


def _scatter_kernels(case: Case, backend: str = "cuda") -> list:
    kernels = kfuse.jit(case.fn, backend=backend).lower(*case.args).kernels(for_gpu=True)
    out = [k for k in kernels if k.kind == "scatter"]
    assert len(out) == 1, [k.kind for k in kernels]
    return out


def _ptxas(ptx: str, arch: str, path) -> None:
    """Assemble ``ptx`` for ``arch`` with the machine's ptxas (skipped where there is none)."""
    if not PTXAS:
        return
    from kfuse.codegen.nvrtc import for_installed
    path.write_text(for_installed(ptx))
    r = subprocess.run([PTXAS, f"-arch={arch}", str(path), "-o", os.devnull], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


# ------------------------------------------------------------------------------ CUDA C, no GPU


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_c_compiles_to_ptx_ptxas_accepts(name, arch, tmp_path):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kfuse.codegen import nvrtc
    (kir,) = _scatter_kernels(CASES[name])
    ptx = nvrtc.compile(cuda.emit(kir), arch=arch).ptx
    assert ".entry" in ptx
    if CASES[name].store:
        assert "atom." in ptx or "red." in ptx
    _ptxas(ptx, arch, tmp_path / f"{name}_{arch}.ptx")


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_c_store_is_plain_one_atomic_or_a_cas_loop(name):
    case = CASES[name]
    (kir,) = _scatter_kernels(case)
    src = cuda.emit(kir)
    body = src[src.index("extern \"C\""):]
    if not case.store:
        assert "atomic" not in body and "out0[" in body
    else:
        assert case.store in body
        assert ("atomicCAS" in body) == (case.store == "atomicCAS")    # one path, not both
    assert "KfVec" not in body              # scalar: no vector access in a scatter kernel


def test_cas_loops_compute_the_combine_as_the_kernel_computes_ops():
    """float16 rounds on the 32-bit word holding the element (its two halves at bits 0 and 16);
    a float max propagates NaN (NumPy's maximum, float16's keeping the first of equal values); a
    cast through ``loop`` converts both ways."""
    half = cuda.emit(_scatter_kernels(CASES["maximum_at_float16"])[0])
    assert "kf_h2f(kf_f2h(kf_maxnan_h<float>(" in half and "(size_t)p_ & 3" in half
    assert "& 0xffffu) << 0)" in half and "& 0xffffu) << 16)" in half
    assert "unsigned int seen_ = *w_" in half
    byte = cuda.emit(_scatter_kernels(CASES["add_at_int8"])[0])
    assert "kf_narrow<signed char>" in byte and "& 0xffu) << 24)" in byte
    fmax = cuda.emit(_scatter_kernels(CASES["maximum_at_float64"])[0])
    assert "kf_maxnan<double>" in fmax and "put_ = (u64)__double_as_longlong(" in fmax
    assert "atomicCAS(w_, want_, put_)" in fmax
    assert "sh_" not in fmax                # an 8-byte element is its own word
    fmin = cuda.emit(_scatter_kernels(CASES["minimum_at_float32"])[0])
    assert "kf_minnan<float>" in fmin and "__float_as_uint(" in fmin
    cast = cuda.emit(_scatter_kernels(CASES["subtract_at_float64_into_int32"])[0])
    assert "((double)v" in cast and "((int)v" in cast and "atomicCAS" in cast


def _store_of(case: Case) -> str:
    """The CUDA C block of the case's combining store."""
    src = cuda.emit(_scatter_kernels(case)[0])
    start = src.index("{  // store")
    depth, k = 0, start
    while True:
        depth += {"{": 1, "}": -1}.get(src[k], 0)
        if depth == 0:
            return src[start:k + 1]
        k += 1


def test_contended_int8_add_aggregates_a_warps_values_per_word_first():
    """``np.add.at`` into int8 with int64 values (a Python int's loop): the values are narrowed to
    int8 first (exact: wrapping), the lanes of a warp on one 32-bit word are found with
    ``__match_any_sync``, their values summed per byte of the word with shuffles every lane of the
    group runs alike, and one compare-and-swap loop of the group's lowest lane updates every byte
    the warp touched, backing off when it loses."""
    body = _store_of(CASES["add_at_int8_int64_values"])
    assert "kf_narrow<signed char>(v" in body
    assert "__activemask()" in body and "__match_any_sync(am_, (unsigned long long)(w_))" in body
    assert "__shfl_sync(peers_, " in body and "if (lead_) {" in body
    assert body.count("atomicCAS(") == 1 and "__nanosleep(" in body
    for k in range(4):                      # each byte of the word: its own sum and update
        assert f"if (has_ & {1 << k}u) {{" in body and f"& 0xffu) << {8 * k})" in body
    assert "__match_any_sync" in _store_of(CASES["add_at_int8"])


def test_bool_or_and_xor_are_one_bit_atomic_on_the_word():
    """bool's or/and/xor (and narrow integers' bitwise ops): the element's bits shifted into its
    32-bit word (and-ed with ones elsewhere), combined over the warp's lanes on that word, one
    hardware atomic: no compare-and-swap loop."""
    for name, fn in (("or_at_bool", "atomicOr"), ("and_at_bool", "atomicAnd"), ("xor_at_bool", "atomicXor"),
                     ("bitwise_or_at_int8", "atomicOr"), ("bitwise_and_at_uint16", "atomicAnd")):
        body = _store_of(CASES[name])
        assert f"if (lead_) {fn}(w_, acc_);" in body, name
        assert "atomicCAS" not in body and "__nanosleep" not in body and "__match_any_sync" in body
    assert "| ~(0xffu << sh_)" in _store_of(CASES["and_at_bool"])       # the word's other bytes kept
    assert "| ~(0xffffu << sh_)" in _store_of(CASES["bitwise_and_at_uint16"])
    assert "~(0xffu << sh_)" not in _store_of(CASES["or_at_bool"])


def test_order_dependent_combines_keep_the_plain_cas_loop():
    """true_divide (and a max computed in a wider loop, a float add through float64) applies each
    value on its own: no aggregation, one compare-and-swap loop a value."""
    def max_wide(x, i, v):
        np.maximum.at(x, i, v)
        return x
    cases = [CASES["divide_at_float32"], CASES["subtract_at_float64_into_int32"],
             Case(max_wide, (_base("int8"), _repeated(), _values("int64")), "atomicCAS", None),
             Case(add_at, (_base("float32"), _repeated(), _values("float64")), "atomicCAS", None)]
    for case in cases:
        body = _store_of(case)
        assert "__match_any_sync" not in body and "__shfl_sync" not in body and "lead_" not in body
        assert body.count("atomicCAS(") == 1 and "__nanosleep(" in body


def test_hardware_atomics_take_the_warps_combined_value():
    body = _store_of(CASES["add_at_float32"])
    assert "__match_any_sync(am_, (unsigned long long)(ep_))" in body
    assert "if (lead_) atomicAdd((float*)(ep_), (float)v0_g);" in body
    sub = _store_of(CASES["subtract_at_int32"])      # x - a - b == x + (0 - (a + b)), wrapping
    assert "atomicAdd((unsigned int*)(ep_), (unsigned int)0 - (unsigned int)" in sub
    fsub = _store_of(CASES["subtract_at_float32"])
    assert "atomicAdd((float*)(ep_), -(float)" in fsub
    half = _store_of(CASES["add_at_float16"])         # float16: each partial sum rounded to float16
    assert "kf_h2f(kf_f2h((v0_g + xv_)))" in half and "red.add.noftz.f16" in half
    assert "atomicXor((unsigned long long*)(ep_)" in _store_of(CASES["bitwise_xor_at_int64"])


@pytest.mark.parametrize("ufunc, out, values, want", [
    ("add", "int8", "int8", ("cas", True)),
    ("add", "int8", "int64", ("cas", True)),            # narrowed: wrapping add commutes with truncation
    ("add", "int32", "int64", ("atomic", True)),
    ("add", "bool", "int64", ("cas", False)),           # int64 -> bool is != 0, not a truncation
    ("subtract", "uint8", "int64", ("cas", True)),
    ("multiply", "int16", "int16", ("cas", True)),
    ("maximum", "int8", "int8", ("cas", True)),
    ("maximum", "int8", "int64", ("cas", False)),       # max in int64, then truncated: order matters
    ("maximum", "int32", "int32", ("atomic", True)),
    ("maximum", "float32", "float32", ("cas", True)),
    ("fmin", "float64", "float64", ("cas", True)),
    ("add", "float16", "float16", ("atomic", True)),
    ("add", "float32", "float64", ("cas", False)),      # float64 sum rounded to float32 each time
    ("multiply", "float32", "float32", ("cas", True)),
    ("logical_or", "bool", "bool", ("bits", True)),
    ("logical_xor", "bool", "bool", ("bits", True)),
    ("maximum", "bool", "bool", ("bits", True)),
    ("logical_or", "int8", "int8", ("cas", False)),     # computed in bool, cast back
    ("bitwise_xor", "uint16", "int64", ("bits", True)),
    ("bitwise_and", "int32", "int32", ("atomic", True)),
    ("true_divide", "float32", "float32", ("cas", False)),
    ("power", "int8", "int8", ("cas", False)),
    ("floor_divide", "int16", "int16", ("cas", False)),
    ("left_shift", "uint8", "uint8", ("cas", False)),
])
def test_which_combines_aggregate_and_which_use_a_hardware_atomic(ufunc, out, values, want):
    from kfuse.codegen.cuda_scatter import strategy
    u = getattr(np, ufunc)

    def f(x, i, v):
        u.at(x, i, v)
        return x
    (kir,) = _scatter_kernels(Case(f, (np.zeros(N, out), _repeated(FEW), np.ones(FEW, values)), "", ""))
    (st,) = [s for s in kir.phases[0].pre if isinstance(s, K.Store)]
    assert strategy(st, kir.outputs[0].dtype) == want


@pytest.mark.parametrize("arch", ARCHS)
def test_aggregated_stores_compile_in_every_launch_shape(arch, tmp_path):
    """Several elements a thread (the unrolled unit loop, its guard), the exact grid (no guard),
    64-bit index math: the warp's groups are formed inside each, and NVRTC and ptxas accept them."""
    pytest.importorskip("cuda.bindings.nvrtc")
    from kfuse.codegen import nvrtc
    for name in ("add_at_int8_int64_values", "or_at_bool", "maximum_at_float16", "add_at_float32",
                 "multiply_at_int32"):
        (kir,) = _scatter_kernels(CASES[name])
        v = cuda_shapes.default_variant(kir)
        for variant in (dataclasses.replace(v, ept=2), dataclasses.replace(v, ept=4, exact=True),
                        dataclasses.replace(v, idx64=True)):
            src = cuda.emit(kir, variant)
            assert "__match_any_sync" in src
            ptx = nvrtc.compile(src, arch=arch).ptx
            _ptxas(ptx, arch, tmp_path / f"{name}_{arch}.ptx")


def test_warp_aggregation_can_be_switched_off(monkeypatch):
    from kfuse.codegen import cuda_scatter
    monkeypatch.setattr(cuda_scatter, "WARP_AGGREGATE", False)
    byte = _store_of(CASES["add_at_int8"])
    assert "__match_any_sync" not in byte and "atomicCAS(w_, want_, put_)" in byte and "sh_)" in byte
    assert "atomicOr(w_, bits_);" in _store_of(CASES["or_at_bool"])
    assert "atomicAdd((float*)(ep_), (float)v0);" in _store_of(CASES["add_at_float32"])


def test_plain_store_writes_at_the_position_through_the_output_strides():
    """``x[:, j] = v``: the row is the loop's, the column the clamped position read from ``j``."""
    (kir,) = _scatter_kernels(CASES["set_cols"])
    (st,) = [s for s in kir.phases[0].pre if isinstance(s, K.Store)]
    assert st.index[0] == K.IVar("i0") and isinstance(st.index[1], K.IVal) and not st.combine
    src = cuda.emit(kir)
    assert f"out0[i0 * (IDX)st_out0_0 + (IDX){st.index[1].name} * (IDX)st_out0_1] = (double)(" in src


def test_scatter_kernels_are_scalar_and_refuse_vectors():
    (kir,) = _scatter_kernels(CASES["add_at_rows_float32"])       # rows: a contiguous last index
    assert not cuda_shapes.vector_ok(kir)
    v = cuda_shapes.default_variant(kir)
    assert (v.mode, v.vec) == ("elementwise", 1)
    with pytest.raises(CompileError, match="does not fit"):
        cuda.emit(kir, dataclasses.replace(v, vec=4))
    tile = TileConfig.make("elementwise", block=512, ept=2, vec=4)
    geom = cuda_tiles.Geometry(units=1000)
    tv, grid, note = cuda_tiles.apply_tile(tile, v, 8, geom)
    assert note is None and (tv.vec, tv.block, tv.ept) == (1, 512, 2) and grid == 1
    assert "for (int k_ = 0; k_ < 2; ++k_)" in cuda.emit(kir, tv)


def test_index_math_is_64_bit_when_the_output_is_large():
    """A few values into an array of over 2^31 elements: the positions reach past 32-bit offsets
    though the domain is small (the emitter's default and the runtime's launch choice)."""
    big = kfuse.jit(add_at).lower("f32[2200000000]", "i64[4]", "f32[4]").kernels(for_gpu=True)
    (kir,) = [k for k in big if k.kind == "scatter"]
    assert cuda_shapes.default_variant(kir).idx64
    assert "typedef long long IDX;" in cuda.emit(kir)
    (small,) = _scatter_kernels(CASES["add_at_float32"])
    assert not cuda_shapes.default_variant(small).idx64

    from kfuse.runtime import cuda as rcuda

    def fake(shape, itemsize):
        strides, step = [], itemsize
        for n in reversed(shape):
            strides.insert(0, step)
            step *= n
        return types.SimpleNamespace(shape=shape, strides=tuple(strides), itemsize=itemsize,
                                     data=types.SimpleNamespace(ptr=0))
    plan = kfuse.jit(add_at).lower("f32[2200000000]", "i64[4]", "f32[4]", backend="cuda").plan
    group = next(g for g in plan.groups if g.kind == "scatter")
    launcher = rcuda._Launcher(group, kir, "sm_90", None)
    ins = [fake((2200000000,), 4), fake((4,), 8), fake((4,), 4)]
    variant, grid = launcher.variant_for(ins, [fake((2200000000,), 4)], {"sm_count": 132, "name": ""})
    assert variant.idx64 and variant.vec == 1 and grid == 1


# ------------------------------------------------------------------------------ Numba-CUDA, no GPU

needs_numba_cuda = pytest.mark.skipif(not numba_cuda.numba_cuda_available()[0], reason="numba-cuda does not import")


@needs_numba_cuda
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.numba is not None))
def test_numba_source_compiles_to_ptx(name, arch, tmp_path):
    case = CASES[name]
    (kir,) = _scatter_kernels(case, "numba-cuda")
    src = numba_cuda.emit(kir)
    if case.numba:
        assert f"cuda.atomic.{case.numba}(element_array(out0, " in src
    else:
        assert "cuda.atomic" not in src and "element_array" not in src
    ptx = numba_cuda.compile_ptx(src, arch=arch)
    assert ".entry" in ptx and (("atom." in ptx) == bool(case.numba))
    _ptxas(ptx, arch, tmp_path / f"numba_{name}_{arch}.ptx")


@needs_numba_cuda
@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.numba is None))
def test_numba_refuses_combines_without_an_exact_atomic(name):
    """Refused by the emitter and when the program is compiled, naming the op and the fix."""
    from kfuse.runtime.numba_cuda import NumbaCudaProgram
    case = CASES[name]
    (kir,) = _scatter_kernels(case, "numba-cuda")
    (st,) = [s for s in kir.phases[0].pre if isinstance(s, K.Store)]
    with pytest.raises(UnsupportedError, match=rf"np\.{st.combine}\.at into a {kir.outputs[0].dtype} array.*use backend='cuda'"):
        numba_cuda.emit(kir)
    plan = kfuse.jit(case.fn, backend="numba-cuda").lower(*case.args).plan
    with pytest.raises(UnsupportedError, match="use backend='cuda'"):
        NumbaCudaProgram(plan)


# ------------------------------------------------------------------------------ on a GPU


def _run(case: Case, backend: str, cupy_for, *, autotune=None):
    """``case.fn`` on ``backend`` with the arguments copied to the GPU: (result, first argument
    after the call) as NumPy arrays."""
    cp = cupy_for(backend)
    dev = [cp.asarray(a) for a in case.args]
    f = kfuse.jit(case.fn, backend=backend, **({"autotune": autotune} if autotune else {}))
    out = f(*dev)
    cp.cuda.get_current_stream().synchronize()
    return cp.asnumpy(out), cp.asnumpy(dev[0])


def _check(case: Case, got, want) -> None:
    for g, w in zip(got, want):
        if case.exact:
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
        else:
            assert_matches_numpy(g, w, reductions=True)


@pytest.mark.backends("cuda", "numba-cuda")
@pytest.mark.parametrize("name", sorted(CASES))
def test_scatter_on_the_gpu_matches_numpy(name, backend, cupy_for):
    case = CASES[name]
    cupy_for(backend)
    if backend == "numba-cuda" and case.numba is None:
        with pytest.raises(UnsupportedError, match="use backend='cuda'"):
            _run(case, backend, cupy_for)
        return
    args = [a.copy() for a in case.args]
    with np.errstate(invalid="ignore"):      # NaN values in max/min
        want = case.fn(*args)
    _check(case, _run(case, backend, cupy_for), (want, args[0]))


@pytest.mark.backends("cuda", "numba-cuda")
def test_repeated_plain_stores_land_one_of_their_values(backend, cupy_for):
    x, i, v = _base("float64"), _repeated(300), _values("float64", 300)
    got, _ = _run(Case(set_1d, (x, i, v), "", ""), backend, cupy_for)
    pos = i % N
    for p in range(N):
        assert got[p] in set(v[pos == p]) if (pos == p).any() else got[p] == x[p]


@pytest.mark.backends("cuda", "numba-cuda")
def test_empty_domain_copies_the_base(backend, cupy_for):
    case = Case(add_at, (_base("int32"), np.zeros(0, np.int64), np.zeros(0, np.int32)), "", "add")
    got, arg = _run(case, backend, cupy_for)
    np.testing.assert_array_equal(got, case.args[0])
    np.testing.assert_array_equal(arg, case.args[0])


@pytest.mark.backends("cuda", "numba-cuda")
def test_strided_base_and_dead_intermediate(backend, cupy_for):
    """A transposed (non-contiguous) base is copied element by element; a base that is an earlier
    kernel's dead output is written in place (``Plan.scatters_in_place``): NumPy's values both."""
    def strided(x, i, v):
        y = x.T
        np.add.at(y, i, v)
        return y * 1
    def dead(x, i, v):
        y = x.T * 2
        np.add.at(y, i, v)
        return y + 1
    x, i, v = _base("int64", (4, N)), _repeated(), _values("int64", M * 4).reshape(M, 4)
    for fn in (strided, dead):
        case = Case(fn, (x, i, v), "", "add")
        want = fn(*[a.copy() for a in case.args])
        got, _ = _run(case, backend, cupy_for)
        np.testing.assert_array_equal(got, want)


@pytest.mark.gpu
def test_torch_tensors_go_through_the_same_copy(cupy_for):
    torch = pytest.importorskip("torch")
    cupy_for("cuda")
    case = CASES["add_at_int64"]
    x, i, v = (torch.as_tensor(a, device="cuda") for a in case.args)
    got = kfuse.jit(add_at, backend="cuda")(x, i, v).cpu().numpy()
    np.testing.assert_array_equal(got, add_at(*[a.copy() for a in case.args]))


@pytest.mark.gpu
def test_autotuned_scatter_matches_numpy(cupy_for, tmp_path, monkeypatch):
    from kfuse import config
    monkeypatch.setenv("KFUSE_CACHE_DIR", str(tmp_path))
    config.reload()
    try:
        for name in ("add_at_int32", "maximum_at_float64"):
            case = CASES[name]
            with np.errstate(invalid="ignore"):
                want = case.fn(*[a.copy() for a in case.args])
            got, _ = _run(case, "cuda", cupy_for, autotune="on")
            np.testing.assert_array_equal(got, want)
    finally:
        monkeypatch.undo()
        config.reload()


# ------------------------------------------------------------------------------ contention, on a GPU

def _contended(ufunc: str, out: str, values: str, slots: int, n: int = 1 << 20):
    """``n`` values into ``slots`` positions (every warp's lanes collide), base and values of the
    given dtypes; or/and/xor values sparse enough (and the odd positions untouched where that
    matters) that the result is not all ones or all zeros."""
    rng = _rng(7)
    idx = rng.integers(-slots, slots, n)
    odd = (idx % slots) % 2 == 1
    if out == "bool":
        base = rng.random(slots) < 0.5
    else:
        info = np.iinfo(out)
        base = rng.integers(max(info.min, -100), min(info.max, 100), slots).astype(out)
    if values == "bool":
        v = rng.random(n) < 0.5
        v = v & ~odd if ufunc == "logical_or" else v | odd if ufunc == "logical_and" else v
    elif ufunc.startswith("bitwise_"):
        bits = 8 * np.dtype(out).itemsize
        one = (np.int64(1) << rng.integers(0, bits, n)) * (rng.random(n) < 3.0 * slots / n)
        v = (~one if ufunc == "bitwise_and" else one).astype(values)
    elif ufunc == "multiply":
        v = rng.choice(np.array([1, 1, 1, 3, 5, 7, 255]), n).astype(values)     # odd: no collapse to 0
    else:
        info = np.iinfo(values)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        v = rng.integers(lo, hi, n)
        limit = rng.permutation(np.linspace(lo, hi - 1, slots).astype(np.int64))[idx % slots]   # a max (min) each
        v = np.minimum(v, limit) if ufunc == "maximum" else np.maximum(v, limit) if ufunc == "minimum" else v
        v = v.astype(values)
    u = getattr(np, ufunc)

    def f(x, i, w):
        u.at(x, i, w)
        return x
    return f, (base, idx, v)


CONTENDED = [
    ("add", "int8", "int8", 37), ("add", "int8", "int64", 3), ("add", "uint8", "uint8", 3),
    ("add", "uint8", "int64", 40), ("add", "int16", "int16", 5), ("add", "uint16", "int64", 33),
    ("subtract", "int8", "int8", 7), ("subtract", "uint16", "uint16", 3), ("multiply", "uint8", "uint8", 6),
    ("multiply", "int16", "int64", 9), ("maximum", "int8", "int8", 3), ("minimum", "uint16", "uint16", 11),
    ("maximum", "int32", "int32", 3), ("minimum", "int64", "int64", 40), ("maximum", "uint8", "uint8", 40),
    ("logical_or", "bool", "bool", 3), ("logical_or", "bool", "bool", 40), ("logical_and", "bool", "bool", 5),
    ("logical_xor", "bool", "bool", 7), ("bitwise_or", "uint8", "uint8", 5), ("bitwise_and", "int16", "int16", 3),
    ("bitwise_xor", "int8", "int64", 9), ("add", "int32", "int64", 3), ("multiply", "int32", "int32", 4),
]


@pytest.mark.gpu
@pytest.mark.parametrize("ufunc, out, values, slots", CONTENDED)
def test_contended_combines_are_exact_on_the_gpu(ufunc, out, values, slots, cupy_for):
    """1M values into 3 to 40 positions: each warp's lanes hit a few words many times over, the
    warp's aggregate and the other warps' updates interleave; NumPy's result bit for bit."""
    fn, args = _contended(ufunc, out, values, slots)
    want = fn(*[a.copy() for a in args])
    got, arg = _run(Case(fn, args, "", ""), "cuda", cupy_for)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(arg, want)


@pytest.mark.gpu
def test_contended_float_combines_on_the_gpu(cupy_for):
    """float16 adds through ``red.add.noftz.f16`` (every partial sum, in any order, an integer of at
    most 2048 in magnitude: exact), float32 max with NaN, a float64 product of powers of two (exact
    in any order): NumPy's values bit for bit."""
    rng = _rng(8)
    n = 1 << 20
    cases = [(add_at, (np.zeros(16, np.float16), rng.integers(0, 16, 16 * 1900),
                       rng.integers(-1, 2, 16 * 1900).astype(np.float16)), True),
             (maximum_at, (np.zeros(3, np.float32), rng.integers(0, 3, n), rng.standard_normal(n).astype(np.float32)),
              True),
             (multiply_at, (np.ones(7), rng.integers(0, 7, 4000), rng.choice([0.5, 2.0, -1.0], 4000)), True)]
    cases[1][1][2][12345] = np.nan
    for fn, args, exact in cases:
        with np.errstate(invalid="ignore"):
            want = fn(*[a.copy() for a in args])
        got, _ = _run(Case(fn, args, "", ""), "cuda", cupy_for)
        np.testing.assert_array_equal(got, want) if exact else assert_matches_numpy(got, want, reductions=True)


@pytest.mark.gpu
def test_contended_int8_add_into_three_slots_completes(cupy_for):
    """The compare-and-swap loop under the worst contention: 1M int8 adds into 3 positions of one
    32-bit word (a Python int's loop, int64). Before warp aggregation this took seconds (31 s for
    uint8 on an H100); it must now take a small fraction of a second, which a slow test shows."""
    rng = _rng(9)
    base = np.zeros(3, np.int8)
    idx, v = rng.integers(0, 3, 1 << 20), np.ones(1 << 20, np.int64)
    want = add_at(base.copy(), idx, v)
    for _ in range(3):      # the first call compiles
        got, _ = _run(Case(add_at, (base, idx, v), "", ""), "cuda", cupy_for)
        np.testing.assert_array_equal(got, want)


def _add_rows_at(t, i, g):
    np.add.at(t, i, g)
    return t


def _add_columns_at(t, i, g):
    np.add.at(t, (slice(None), i), g)
    return t


@pytest.mark.parametrize("arch", ARCHS)
def test_rows_written_across_the_lanes_take_one_atomic_each(arch, tmp_path):
    """An embedding gradient (``np.add.at(table, ids, g)`` of rows) writes ``out[v, i1]``: a warp's
    lanes update consecutive elements of a row, so no warp groups are formed (one hardware atomic
    a value); the same scatter along columns (``out[i0, v]``) and a 1-D one keep them."""
    pytest.importorskip("cuda.bindings.nvrtc")
    from kfuse.codegen import nvrtc
    rows = Case(_add_rows_at, (np.zeros((N, 64), np.float32), _repeated(), np.ones((M, 64), np.float32)), "", "")
    cols = Case(_add_columns_at, (np.zeros((64, N), np.float32), _repeated(), np.ones((64, M), np.float32)), "", "")
    store = _store_of(rows)
    assert "__match_any_sync" not in store and "atomicAdd((float*)(ep_), (float)v" in store
    assert "__match_any_sync" in _store_of(cols) and "__match_any_sync" in _store_of(CASES["add_at_float32"])
    for case in (rows, cols):
        (kir,) = _scatter_kernels(case)
        _ptxas(nvrtc.compile(cuda.emit(kir), arch=arch).ptx, arch, tmp_path / f"{case.fn.__name__}_{arch}.ptx")


@pytest.mark.gpu
def test_rows_scatter_without_warp_groups_matches_numpy(cupy_for):
    """The rows case on the GPU: integer sums exact, float sums within a sum's tolerance."""
    cp = cupy_for("cuda")
    rng = np.random.default_rng(7)
    ids = rng.integers(-N, N, 4 * M)
    for dt in ("int32", "float32"):
        t0 = rng.integers(-9, 9, (N, 40)).astype(dt)
        g = rng.integers(-9, 9, (4 * M, 40)).astype(dt)
        want = _add_rows_at(t0.copy(), ids, g)
        t = cp.asarray(t0)
        got = kfuse.jit(_add_rows_at, backend="cuda")(t, cp.asarray(ids), cp.asarray(g))
        assert got is t
        np.testing.assert_array_equal(cp.asnumpy(t), want)     # small integers: exact in float32 too


def _max_at_f16_of_f32(x, i, v):
    np.maximum.at(x, i, v)
    return x


def _min_at_f16_of_a_python_float(x, i):
    np.minimum.at(x, i, -0.0)
    return x


@pytest.mark.parametrize("arch", ARCHS)
def test_float16_extremes_in_a_wider_loop_compile(arch, tmp_path):
    """Bug 41: float16 maximum/minimum ``at`` with float32 or Python float values compute in the
    wider loop (no narrowing): a compare-and-swap on the element's word, cast there and back."""
    pytest.importorskip("cuda.bindings.nvrtc")
    from kfuse.codegen import nvrtc
    cases = [Case(_max_at_f16_of_f32, (np.zeros(N, np.float16), _repeated(), np.ones(M, np.float32)), "", None),
             Case(_min_at_f16_of_a_python_float, (np.zeros(N, np.float16), _repeated()), "", None)]
    for case in cases:
        (kir,) = _scatter_kernels(case)
        (st,) = [s for s in kir.phases[0].pre if isinstance(s, K.Store)]
        assert st.loop in ("float32", "float64") and "atomicCAS" in _store_of(case)
        _ptxas(nvrtc.compile(cuda.emit(kir), arch=arch).ptx, arch, tmp_path / f"{case.fn.__name__}_{arch}.ptx")
