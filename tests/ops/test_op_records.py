"""Every row of the op-record table (``op_records.RECORDS``) over its shape cases x dtypes x backend
through ``kfuse.jit``, against NumPy with ``kfuse.testing``'s tolerances.

One test per row, dtype, shape case and backend, so a failure names its op. The rows of one dtype
and shape case are traced together as one function (one compile for all of them: Numba's compiles
dominate the CPU side); where that batch fails to build, each row runs on its own, so the error
still lands on the row that caused it."""
import functools
import inspect
import zlib

import numpy as np
import pytest

from kfuse import backends
from kfuse.backends import Feature

from backends import jit_on
from op_records import DTYPES, RECORDS, SHAPES, values
from tolerance import assert_matches_numpy


def _cases():
    for rec in RECORDS:
        for dtype in DTYPES:
            if rec.accepts(dtype):
                for shape in rec.shapes:
                    yield pytest.param(rec, dtype, shape, id=f"{rec.name}-{dtype}-{shape}")


def _operands(rec, dtype: str, shape: str) -> list[np.ndarray]:
    """The row's operands: one array per (domain, position), the same for every row of a batch."""
    return [values(rec.domain_of(k), dtype, SHAPES[shape][k],
                   seed=zlib.crc32(f"{rec.domain_of(k)}/{k}/{dtype}/{shape}".encode()))
            for k in range(rec.arity)]


def _apply(rows, dtype: str, shape: str):
    """(the function computing every variant of every row, its arguments): rows that take the same
    operand read the same argument."""
    slots: dict[tuple, int] = {}
    args, picks = [], []
    for rec in rows:
        pick = []
        for k, a in enumerate(_operands(rec, dtype, shape)):
            key = (rec.domain_of(k), k)
            if key not in slots:
                slots[key] = len(args)
                args.append(a)
            pick.append(slots[key])
        picks.append(pick)

    def ops(*arrays):
        return tuple(rec.fn(*(arrays[i] for i in pick), **kw)
                     for rec, pick in zip(rows, picks) for kw in rec.variants)
    # kfuse binds named parameters (``*arrays`` would be one argument): a0, a1, ...
    ops.__signature__ = inspect.Signature(
        [inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD) for i in range(len(args))])
    return ops, args


@functools.cache
def _batch(backend: str, dtype: str, shape: str) -> dict:
    """Row name -> kfuse's results (one per variant) for every row of this dtype and shape case;
    empty where the batch fails to build (each row then runs alone)."""
    rows = [r for r in RECORDS if r.accepts(dtype) and shape in r.shapes]
    fn, args = _apply(rows, dtype, shape)
    try:
        got = iter(jit_on(fn, backend, *args))
    except Exception:      # noqa: BLE001 -- the rows' own runs report it
        return {}
    return {rec.name: [next(got) for _ in rec.variants] for rec in rows}


@pytest.mark.parametrize("rec, dtype, shape", list(_cases()))
def test_op_matches_numpy(rec, dtype, shape, backend):
    if dtype.startswith("complex") and Feature.COMPLEX not in backends.get(backend).features:
        pytest.skip(f"the {backend} backend has no complex numbers yet (Feature.COMPLEX)")
    fn, args = _apply([rec], dtype, shape)
    got = _batch(backend, dtype, shape).get(rec.name)
    if got is None:
        got = list(jit_on(fn, backend, *args))
    with np.errstate(all="ignore"):
        want = fn(*args)
    for g, w, kw in zip(got, want, rec.variants):
        assert_matches_numpy(g, w, reductions=rec.reduction, err_msg=f"np.{rec.name} {dtype} {shape} {kw}")
