"""The tuner on scatter kernels (``np.add.at`` here). The CPU runs a scatter in C order in one
thread (its writes may hit one position), so its only candidate is the sequential variant; a GPU
scatter tunes its scalar grid-stride loop (threads a block, elements a thread, ``vec`` 1). Every
measured run starts from a fresh copy of the base, so a ``ufunc.at`` run again gives the same values,
and tuning through ``kfuse.jit`` gives NumPy's."""
import numpy as np

import kfuse
from kfuse import config
from kfuse.autotune import prune, space, tune_program
from kfuse.autotune.space import TileConfig
from kfuse.autotune.targets import CpuTarget
from kfuse.fusion.cost import get_device_spec
from kfuse.runtime.cpu import compile_plan
from tests.autotune.helpers import FakeStore, make_plan

SEQ = TileConfig.make("cpu", variant="seq", threads=1)


def add_at(x, i, v):
    np.add.at(x, i, v * 2)
    return x


def _args():
    rng = np.random.default_rng(0)
    return np.zeros(37), rng.integers(-37, 37, 5000), rng.standard_normal(5000)


def _scatter(plan):
    return next(g for g in plan.groups if g.kind == "scatter")


def test_cpu_candidates_are_the_sequential_variant():
    g = _scatter(make_plan(add_at, *_args()))
    assert space.space_for(g, "cpu", max_threads=8) == [SEQ]
    assert prune.heuristic(g, "cpu") == SEQ
    par = TileConfig.make("cpu", variant="par", threads=2)
    assert "C order" in prune.check(par, g, get_device_spec("cpu"), max_threads=8)


def test_gpu_candidates_are_the_scalar_loop():
    g = _scatter(make_plan(add_at, *_args(), device="h100"))
    cands = space.space_for(g, "cuda")
    heur = prune.heuristic(g, "cuda", "h100")
    assert cands and all(c.kind == "elementwise" and c["vec"] == 1 for c in cands)
    assert heur.kind == "elementwise" and heur["vec"] == 1 and heur in cands
    dropped: list = []
    kept = prune.prune(cands + space.elementwise_space(8), g, get_device_spec("h100"), top_k=100, keep=heur,
                       dropped=dropped)
    assert kept[0] == heur and all(c["vec"] == 1 for c in kept)
    assert any("data-dependent" in why for c, why in dropped if c["vec"] > 1)


def test_each_measured_run_starts_from_the_base():
    args = _args()
    plan = make_plan(add_at, *args)
    target = CpuTarget(compile_plan(plan), list(args), {g.id: SEQ for g in plan.groups})
    g = _scatter(plan)
    run = target.prepare(target.group_index(g.id), SEQ)
    run(1)
    want = add_at(*[a.copy() for a in args])
    np.testing.assert_allclose(run(2)[0], want, rtol=0, atol=0)


def test_tuning_a_scatter_keeps_numpys_values(tmp_path, monkeypatch):
    args = _args()
    plan = make_plan(add_at, *args)
    reports: list = []
    tune_program(plan, list(args), "cpu", "on", FakeStore(), program=compile_plan(plan), reports=reports,
                 progress=False)
    rep = next(r for r in reports if r.kind == "scatter")
    assert rep.source == "tuned" and rep.config == SEQ and all(m.ok for m in rep.measurements)
    monkeypatch.setenv("KFUSE_CACHE_DIR", str(tmp_path))
    config.reload()
    try:
        got = kfuse.jit(add_at, backend="cpu", autotune="on")(*[a.copy() for a in args])
    finally:
        monkeypatch.undo()
        config.reload()
    np.testing.assert_array_equal(got, add_at(*[a.copy() for a in args]))
