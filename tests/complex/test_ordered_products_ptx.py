"""Complex products and max/min redone in NumPy's order where the GPU's tree result is
non-finite (``codegen.accs.redo_ops``), without a GPU: the redo is emitted in every kernel shape
that combines a row as a tree (row, packed row, two-stage and grid-synchronised rows and columns,
vector loads, a where= mask, a dtype=), not where the row already runs in order (a column a
thread) nor for sums; a complex cumprod scan checks each segment and never splits; all of it
compiles (NVRTC, numba-cuda's ``compile_ptx``). Values: test_gpu_ordered_products.py."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import accs, cuda as ce, nvrtc as _nvrtc
from tests.codegen.ptx_backends import compile_to_ptx

pytest.importorskip("cuda.bindings.nvrtc")
MARK = "NumPy's order"


def _kir(fn, *arrays):
    return kfuse.jit(fn).lower(*arrays).kernels()[-1]


def _compiles(kir, v) -> str:
    src = ce.emit(kir, v)
    assert ".entry" in _nvrtc.compile(src, "sm_90").ptx
    return src[src.index('extern "C"'):]


ROWS = np.zeros((6, 300), np.complex64)


@pytest.mark.parametrize("v", [
    ce.Variant("row", 1, False, 0, 128),                                 # re-read rows
    ce.Variant("row", 2, False, 4, 128),                                 # vector loads, a row in registers
    ce.Variant("row", 1, False, 0, 128, lanes=8, packed=True),           # short rows, lanes a row
    ce.Variant("row", 1, False, 0, 128, split=7, stage=2),               # a block combining a row's chunks
    ce.Variant("row", 1, False, 0, 128, 2, min_blocks=8, split=5, grid_sync=True),
    ce.Variant("col", 1, False, 0, 128, min_blocks=8, split=5, grid_sync=True),
], ids=lambda v: v.tag)
@pytest.mark.parametrize("kind", ["prod", "max", "min"])
def test_tree_rows_are_redone_in_order_where_non_finite(kind, v):
    kir = _kir(lambda x: getattr(x, kind)(axis=-1), ROWS)
    body = _compiles(kir, v)
    assert body.count(MARK) == 1
    cond = body.split(MARK)[0].rsplit("if (", 1)[1]
    assert ("kf_fin" in cond) == (kind == "prod") and ("kf_cnan" in cond) == (kind != "prod")
    redo = body.split(MARK)[1]
    assert "jq_ < row_len" in redo and "in0[" in redo and "out0[" not in redo.split("const kf_c64 v")[0]


@pytest.mark.parametrize("v", [
    ce.Variant("col", 1, False, 0, 128),                                 # a thread a column, in order
    ce.Variant("row", 1, False, 0, 128, split=7, stage=1),               # a chunk's partial product
], ids=lambda v: v.tag)
def test_rows_in_order_and_partials_are_not_redone(v):
    assert MARK not in _compiles(_kir(lambda x: x.prod(axis=-1), ROWS), v)


@pytest.mark.parametrize("fn", [lambda x: x.sum(axis=-1), lambda x: x.real.prod(axis=-1),
                                lambda x: np.argmax(x, axis=-1)])
def test_other_accumulators_keep_their_tree(fn):
    assert MARK not in _compiles(_kir(fn, ROWS), ce.Variant("row", 1, False, 0, 128))


def test_where_dtype_and_epilogue_are_in_the_redo():
    """The masked, cast factors are recomputed in the redo; a later phase reads the redone value."""
    x = np.zeros((5, 300), np.complex128)
    kir = _kir(lambda x: x / np.prod(x, axis=1, keepdims=True, where=(x > 0), dtype=np.complex64), x)
    body = _compiles(kir, ce.Variant("row", 1, False, 0, 128))
    redo = body.split(MARK)[1].split("\n}")[0]
    assert "kf_clt" in redo or "kf_cle" in redo       # the mask's comparison
    assert "kf_c64" in redo and "kf_c128" in redo     # the cast to the dtype=
    assert body.index(MARK) < body.rindex("out0[")


def test_in_place_kernels_are_not_redone():
    """A kernel writing an input's buffer may have overwritten the row the redo would re-read."""
    import dataclasses
    x = np.zeros((6, 300), np.complex64)
    kir = _kir(lambda x: x * x.prod(axis=-1, keepdims=True), x)
    v = ce.Variant("row", 1, False, 0, 128)
    assert MARK in ce.emit(kir, v)
    assert MARK not in ce.emit(dataclasses.replace(kir, in_place=((0, 0),)), v)


def test_redo_ops_say_which_values():
    assert [s.op for s in accs.redo_ops("prod", "complex64", "a")] == ["isfinite", "logical_not"]
    assert [s.op for s in accs.redo_ops("max", "complex128", "a")] == ["isnan"]
    assert accs.redo_ops("sum", "complex64", "a") == [] and accs.redo_ops("prod", "float64", "a") == []


@pytest.mark.parametrize("shape", [(8, 1000), (64, 10)], ids=["rows", "packed"])
def test_complex_cumprod_segments_are_redone_and_never_split(shape):
    kir = _kir(lambda x: np.cumprod(x, axis=-1), np.zeros(shape, np.complex64))
    assert not ce.scan_split_ok(kir)
    assert ce.scan_split_ok(_kir(lambda x: np.cumsum(x, axis=-1), np.zeros(shape, np.complex64)))
    v = ce.default_variant(kir)
    body = _compiles(kir, v)
    assert body.count(MARK) == 1 and "__any_sync" in body and "p_ <= sl_" in body
    assert MARK not in _compiles(_kir(lambda x: np.cumsum(x, axis=-1), np.zeros(shape, np.complex64)), v)


def test_a_split_complex_cumprod_is_refused():
    import dataclasses
    from kfuse.errors import CompileError
    kir = _kir(lambda x: np.cumprod(x, axis=-1), np.zeros((2, 100000), np.complex64))
    v = dataclasses.replace(ce.default_variant(kir), split=8, stage=1)
    with pytest.raises(CompileError, match="do not split"):
        ce.emit(kir, v)


def test_max_scans_keep_their_tree():
    """A shuffle-up tree combines contiguous ranges, earlier on the left: the first NaN already."""
    kir = _kir(lambda x: np.maximum.accumulate(x, axis=-1), np.zeros((8, 1000), np.complex64))
    assert MARK not in _compiles(kir, ce.default_variant(kir))


def _fuzz_1060(a0):
    return (a0.prod(axis=1, keepdims=True, where=(a0 > 0)), np.prod(a0, axis=(0,), dtype=np.complex64))


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("fn,specs", [
    (lambda a: a.prod(axis=2), ("c128[2,3,4]",)),
    (lambda a: a.prod(axis=(1,)), ("c64[4,3]",)),
    (_fuzz_1060, ("c128[3,5]",)),
    (lambda a: np.cumsum(a, axis=1).max(axis=1, keepdims=True), ("c128[5,5]",)),
    (lambda a: (a.max(axis=-1), a.min(axis=0), a.prod()), ("c64[40,700]",)),
], ids=["s42p1643", "s41p424", "s42p1060", "s42p191", "mixed"])
def test_fuzz_programs_compile_with_the_redo(fn, specs, backend, tmp_path):
    src = compile_to_ptx(fn, backend, specs, tmp_path, "ordered")
    assert MARK in src
