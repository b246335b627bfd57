"""The tuner on the CPU backend: modes, failure = infinitely slow, budgets, apply."""
import math
import time

import numpy as np
import pytest

from kfuse.autotune import apply, tune_program, tuner
from kfuse.autotune.space import TileConfig
from kfuse.autotune.targets import CpuTarget
from tests.autotune.helpers import FakeStore
from tests.tolerance import assert_matches_numpy

SEQ = TileConfig.make("cpu", variant="seq", threads=1)


def _tune(small, mode="on", store=None, **kw):
    plan, prog, arrays, _ = small
    reports = []
    tiles = tune_program(plan, arrays, "cpu", mode, store, program=prog, reports=reports,
                         progress=False, **kw)
    return tiles, reports


def test_mode_off_is_heuristic_and_touches_no_store(small):
    store = FakeStore()
    tiles, reps = _tune(small, "off", store)
    assert tiles == {0: SEQ} and reps[0].source == "heuristic"
    assert store.gets == store.puts == 0 and tuner.STATS["measured"] == 0


def test_mode_cached_miss_then_hit(small):
    store = FakeStore()
    tiles, reps = _tune(small, "cached", store)
    assert tiles == {0: SEQ} and reps[0].source == "heuristic"
    assert store.gets == 1 and store.puts == 0 and tuner.STATS["measured"] == 0
    # a stored result is used as is
    key = next(iter(store.data), None)
    assert key is None
    _tune(small, "on", store, max_threads=2)
    assert store.puts == 1
    (k, v), = store.data.items()
    v["config"] = TileConfig.make("cpu", variant="par", threads=2).as_dict()
    tuner.reset()
    measured = tuner.STATS["measured"]
    tiles, reps = _tune(small, "cached", store)
    assert reps[0].source == "stored" and tiles[0] == TileConfig.make("cpu", variant="par", threads=2)
    assert tuner.STATS["measured"] == measured


def test_mode_on_measures_every_candidate_and_stores(small, capsys):
    store = FakeStore()
    tiles, reps = _tune(small, "on", store, print_autotuning=True)
    r = reps[0]
    assert r.source == "tuned" and r.measurements and all(m.ok for m in r.measurements)
    assert tiles[0] == min(r.measurements, key=lambda m: m.seconds).config
    assert store.puts == 1
    err = capsys.readouterr().err
    assert "kfuse autotune: kernel 0" in err and "chose" in err
    # the same bucket again: the process memo, no new measurement
    n = tuner.STATS["measured"]
    tiles2, reps2 = _tune(small, "on", store)
    assert reps2[0].source == "memo" and tiles2 == tiles and tuner.STATS["measured"] == n


@pytest.mark.parametrize("failure", ["raise", "wrong"])
def test_failing_candidate_is_infinitely_slow(small, monkeypatch, failure):
    plan, prog, arrays, expected = small
    real = CpuTarget.call

    def call(self, i, cfg, ins, outs):
        if cfg["variant"] == "par":
            if failure == "raise":
                raise RuntimeError("out of resources (simulated)")
            outs[0][...] = 42.0      # fast and wrong
            return
        time.sleep(0.002)            # the correct candidate is the slow one
        real(self, i, cfg, ins, outs)
    monkeypatch.setattr(CpuTarget, "call", call)
    tiles, reps = _tune(small, "on", FakeStore(), max_threads=4)
    ms = {m.config: m for m in reps[0].measurements}
    bad = [m for c, m in ms.items() if c["variant"] == "par"]
    assert bad and all(math.isinf(m.seconds) and not m.ok for m in bad)
    assert all(("wrong result" in m.error) if failure == "wrong" else ("RuntimeError" in m.error)
               for m in bad)
    assert tiles[0] == SEQ
    apply(prog, tiles)
    assert_matches_numpy(prog(arrays)[0], expected)


def test_per_kernel_budget_stops_early(small, monkeypatch):
    def slow(self, i, cfg, ins, outs):
        time.sleep(0.05)
    monkeypatch.setattr(CpuTarget, "call", slow)
    t0 = time.perf_counter()
    tiles, reps = _tune(small, "on", FakeStore(), budget=0.3, max_threads=64)
    spent = time.perf_counter() - t0
    r = reps[0]
    assert r.stopped_early
    assert len(r.measurements) < 7                      # seq + par 2..64: 7 candidates
    assert spent < 1.0 and r.seconds < 0.3 + 0.2        # overshoot at most ~one call + a timing
    assert tiles[0] == r.config


def test_total_budget_spent_means_no_tuning(small, monkeypatch):
    called = []
    monkeypatch.setattr(CpuTarget, "call", lambda *a: called.append(1))
    store = FakeStore()
    tiles, reps = _tune(small, "on", store, process_budget=tuner.Budget(0.0))
    assert tiles == {0: SEQ} and "budget" in reps[0].note
    assert store.puts == 0 and tuner.STATS["measured"] == 0


def test_tuning_error_falls_back_to_heuristic(small, monkeypatch):
    def boom(*a, **k):
        raise MemoryError("simulated")
    monkeypatch.setattr(CpuTarget, "__init__", boom)
    tiles, reps = _tune(small, "on", FakeStore())
    assert tiles == {0: SEQ} and reps[0].source == "fallback"


def test_apply_sets_variant_and_threads(small):
    plan, prog, arrays, expected = small
    k = prog.kernels[0]
    fns, par = k.fns, k.parallel
    try:
        apply(prog, {0: TileConfig.make("cpu", variant="par", threads=1)})
        assert k.parallel and prog.tiles[0]["threads"] == 1
        assert_matches_numpy(prog(arrays)[0], expected)
        apply(prog, {0: SEQ})
        assert not k.parallel
        assert_matches_numpy(prog(arrays)[0], expected)
    finally:
        k.fns, k.parallel = fns, par
