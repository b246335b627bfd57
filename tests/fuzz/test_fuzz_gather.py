"""The generator's ``gather`` kind (kfuse/fuzz/gen_gather.py): its programs index with integer
arrays in every supported form, are valid NumPy (indices in range for mode='raise', wrapped ones
small enough for NumPy's wrap loop), print as standalone regression files, and a few run through
kfuse on the CPU backend like every other fuzz program."""
import functools
import re

import numpy as np

from kfuse.fuzz import gen_gather, generator
from kfuse.fuzz.runner import run_numpy, run_program
from tests.fuzz.writer_check import check_written

SEED, N = 13, 600


@functools.cache
def _programs():
    # gathers about half the steps (kfuse fuzz --kind gather): the forms below do not hang on the
    # other kinds' weights (a new kind changes every seed's programs)
    return [generator.generate(SEED, i, favor="gather") for i in range(N)]


@functools.cache
def _gather_programs():
    return [p for p in _programs() if gen_gather.gather_steps(p)]


def test_gathers_appear():
    assert len(_gather_programs()) >= N // 10, len(_gather_programs())


def test_every_form_is_drawn():
    text = "\n".join(s.expr for p in _gather_programs() for s in p.steps)
    forms = {
        "take": "np.take(", "method take": ".take(", "wrap": "mode='wrap'", "clip": "mode='clip'",
        "take_along_axis": "np.take_along_axis(", "flat take_along_axis": "axis=None)",
        "argmax along": "keepdims=True), axis=", "modulo": " % ", "negative": " - ",
        "columns": "[:, ", "ellipsis": "[..., ", "broadcast": "[:, None]", "typed": "dtype=np.",
        "bool list": "[True", "arange": "np.arange(", "clip index": "np.clip(",
    }
    missing = [k for k, v in forms.items() if v not in text]
    assert not missing, missing
    assert re.search(r"\[[^]]*, :, [^]]*\]", text), "no advanced indices split by a slice"
    assert re.search(r"\.(argmax|argmin)\(axis=\d\)\]|np\.arg(max|min)\(\w+, axis=\d\)\]", text)


def test_index_arguments_are_in_range():
    """An integer argument the generator adds for a dim of size n holds values in [-n, n)
    ([0, n) unsigned); at most MAX_INDEX_INPUTS a program."""
    g = generator._Gen(3, 0, 5)
    g.inputs, g.env = [], {}
    names = [gen_gather._index_input(g, 5) for _ in range(4)]
    assert names[:2] == ["a0", "a1"] and names[2:] == [None, None]
    for spec in g.inputs:
        v = spec.build()
        assert v.dtype.kind in "iu" and v.min() >= -5 and v.max() < 5
    added = [p for p in _gather_programs() if any(
        re.search(rf"\b{i.name}\b", s.expr) and i.dtype.startswith(("int", "uint"))
        for i in p.inputs for s in p.steps)]
    assert added


def test_gather_programs_are_valid_numpy():
    """Only the generator's rare error programs raise in NumPy (their last step)."""
    bad = [p for p in _gather_programs() if run_numpy(p)[1] is not None]
    assert len(bad) <= len(_gather_programs()) // 10, [p.describe() for p in bad[:3]]


def test_wrapped_indices_stay_small():
    """np.take(..., mode='wrap') walks an index into range by steps of n: -2**63 never ends."""
    for p in _gather_programs():
        env = {i.name: i.build() for i in p.inputs}
        for s in p.steps:
            m = re.search(r"(?:np\.take\([^,]+, |(?<!np)\.take\()(\w+), .*mode='wrap'", s.expr)   # the indices
            if m and m.group(1) in env:
                v = np.asarray(env[m.group(1)]).astype(np.intp)
                assert np.all(np.abs(v.astype(float)) < 2 ** 20), s.expr
            try:
                env[s.out] = np.asarray(s.run(env))
            except Exception:
                break


def test_writer_prints_gather_programs(tmp_path):
    check_written(_gather_programs()[:20], tmp_path)


def test_a_few_gather_programs_run_through_kfuse():
    ps = _gather_programs()[:6]
    results = [(p, run_program(p, "cpu")) for p in ps]
    bad = [f"{p.describe()}\n{r.status}: {r.detail[:400]}" for p, r in results if r.status != "ok"]
    assert not bad, "\n\n".join(bad)
