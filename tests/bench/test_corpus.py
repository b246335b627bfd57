"""The real-workload corpus (kfuse/bench/corpus, issue 30): its shape (entries, categories, tags,
the issue's patterns at the issue's sizes), every entry through kfuse's CPU backend at the tiny size
against NumPy within the tolerance table (entries kfuse refuses are listed, with the reason), the
corpus runner's logic with --device cpu (a missing peer, a failing peer, the report, the geometric
mean), and per-kernel predicted vs measured times (kernel_timing, ``kfuse explain --measure``).
Timings are never asserted."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import kfuse
from kfuse.bench import corpus_report, corpus_suite
from kfuse.bench.corpus import BY_NAME, CATEGORIES, ENTRIES, SIZES, TOLERANCE_CLASSES, select
from kfuse.bench.peers import KfusePeer, NumpyPeer, Peer, PeerUnavailable
from kfuse.errors import KfuseError
from tolerance import assert_matches_numpy

# Entries kfuse's CPU backend refuses today, and why (the sweep below checks that it still does).
EXPECTED_REFUSALS = {
    "rmsnorm_bf16": "bfloat16 runs on the CUDA C backend with torch tensors only",
    "swiglu_bf16": "bfloat16 runs on the CUDA C backend with torch tensors only",
    "gelu_bf16": "bfloat16 runs on the CUDA C backend with torch tensors only",
}

# Entries that pass at the tiny size but fail at the CPU size: none since a 0-d input is read before
# the parallel loop (tests/regressions/test_cpu_zero_d_input_parallel.py; adafactor_factored was one).
EXPECTED_FAILURES_AT_CPU_SIZE: dict = {}

REQUIRED_TAGS = ("layout:transposed", "layout:permuted", "view:slice", "view:strided", "axis:leading",
                 "axis:middle", "axis:last", "axis:several", "rows:long", "rows:short", "size:odd",
                 "size:prime", "size:tiny", "dtype:f32", "dtype:f16", "dtype:bf16", "dtype:mixed")


def test_corpus_has_sixty_unique_entries_in_every_category():
    names = [e.name for e in ENTRIES]
    assert len(names) >= 60
    assert len(set(names)) == len(names)
    assert {e.category for e in ENTRIES} == set(CATEGORIES)
    tags = {t for e in ENTRIES for t in e.tags}
    assert not [t for t in REQUIRED_TAGS if t not in tags]
    for e in ENTRIES:
        assert set(e.sizes) == set(SIZES), e.name
        assert e.tol in TOLERANCE_CLASSES and e.bound in ("memory", "launch"), e.name
        assert e.flops > 0 and e.title, e.name
        assert ("bfloat16" in e.dtypes) == (e.only == "gpu-torch"), e.name


@pytest.mark.parametrize("name, shapes", [
    ("standardize_columns", [(65536, 1024)]),
    ("softmax_axis0", [(4096, 8192)]),
    ("groupnorm_nchw", [(32, 256, 64, 64), (256,), (256,)]),
    ("exp_transpose_add", [(8192, 8192), (8192, 8192)]),
    ("tanh_bias_odd", [(4095, 4097), (4097,)]),
    ("geglu_f16_halves", [(16384, 8192)]),
    ("rotary_3d", [(32, 4096, 128), (4096, 128), (4096, 128)]),
    ("cross_entropy_32000", [(8192, 32000), (8192,)]),
    ("residual_layernorm_f16", [(16384, 4096), (16384, 4096), (4096,), (4096,)]),
])
def test_issue_patterns_at_issue_sizes(name, shapes):
    c = BY_NAME[name].case("gpu")
    assert [tuple(s) for s in c.shapes] == [tuple(s) for s in shapes]


def test_issue_pattern_dtypes():
    assert BY_NAME["geglu_f16_halves"].dtypes == ("float16",)
    assert BY_NAME["cross_entropy_32000"].dtypes == ("float32", "int64")
    assert BY_NAME["residual_layernorm_f16"].dtypes == ("float16", "float16", "float32", "float32")
    c = BY_NAME["residual_layernorm_f16"].case("cpu")
    assert [t for _, t in c.outputs()] == ["float16", "float16"]


def test_sizes_per_class():
    """GPU: memory-bound entries move 64 MiB..1 GiB, launch-bound ones under 1 MiB; CPU: 1..40 MiB."""
    for e in ENTRIES:
        g, c = e.case("gpu").nbytes, e.case("cpu").nbytes
        if e.bound == "launch":
            assert g < 2**20 and c < 2**20, e.name
        else:
            assert 64 * 2**20 <= g <= 1.0 * 2**30 + 2**20, (e.name, g / 2**20)
            assert 2**20 <= c <= 40 * 2**20, (e.name, c / 2**20)


@pytest.fixture(scope="module")
def sweep():
    """Every entry through kfuse[cpu] at the tiny size: {name: None | exception}, with NumPy's and
    kfuse's outputs (one compile per entry, shared by the checks)."""
    out = {}
    for e in ENTRIES:
        c = e.case("tiny")
        ins = c.make_inputs(0)
        if "bfloat16" in e.dtypes:
            from kfuse.ir.dtypes import BF16
            ins = [a.astype(BF16) if t == "bfloat16" else a for a, t in zip(ins, c.dtypes)]
        try:
            got = kfuse.jit(c.body(np), backend="cpu")(*ins)
        except (KfuseError, ValueError, TypeError) as ex:
            out[e.name] = (ex, None, None)
            continue
        with np.errstate(all="ignore"):
            ref = c.body(np)(*ins)
        out[e.name] = (None, got, ref)
    return out


def test_every_entry_matches_numpy_on_cpu_or_is_an_expected_refusal(sweep):
    refused = {n for n, (ex, _, _) in sweep.items() if ex is not None}
    assert refused == set(EXPECTED_REFUSALS), {n: str(sweep[n][0])[:200] for n in refused ^ set(EXPECTED_REFUSALS)}
    for name, (ex, got, ref) in sweep.items():
        if ex is not None:
            assert "bfloat16" in str(ex), (name, ex)
            continue
        got = list(got) if isinstance(got, (tuple, list)) else [got]
        ref = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        assert len(got) == len(ref), name
        for a, r in zip(got, ref):
            assert_matches_numpy(a, r, reductions=TOLERANCE_CLASSES[BY_NAME[name].tol][1], err_msg=name)


def test_issue_patterns_come_first():
    from kfuse.bench.corpus import ISSUE_PATTERNS
    assert {e.name for e in ENTRIES[:len(ISSUE_PATTERNS)]} == set(ISSUE_PATTERNS)
    assert {e.name for e in select("issue")} == set(ISSUE_PATTERNS)


@pytest.mark.parametrize("name", sorted(EXPECTED_FAILURES_AT_CPU_SIZE) or [pytest.param("none", marks=pytest.mark.skip(reason="no expected failure left"))])
@pytest.mark.xfail(strict=True, reason="a kfuse bug listed in EXPECTED_FAILURES_AT_CPU_SIZE")
def test_expected_failures_at_cpu_size(name):
    c = BY_NAME[name].case("cpu")
    ins = c.make_inputs(0)
    got = kfuse.jit(c.body(np), backend="cpu")(*ins)
    for a, r in zip(got, c.body(np)(*ins)):
        assert_matches_numpy(a, r, reductions=True, err_msg=name)


def test_select_filter_and_shard():
    assert {e.name for e in select("softmax_axis0")} == {"softmax_axis0"}
    assert all(e.category == "optim" for e in select("optim"))
    shards = [select(shard=f"{k}/3") for k in (1, 2, 3)]
    assert sorted(e.name for s in shards for e in s) == sorted(e.name for e in ENTRIES)
    with pytest.raises(ValueError):
        select(shard="4/3")


def test_float64_reference_casts_to_float64():
    c = BY_NAME["rmsnorm_f16_f32w"].case("tiny")
    ref, how, err = corpus_suite.reference(c, c.make_inputs(0), "cpu")
    assert err is None and how == "numpy float64" and ref[0].dtype == np.float64


# ---- the runner ----------------------------------------------------------------------------------
class _Missing(Peer):
    key = name = "missing"

    def setup(self):
        raise PeerUnavailable("not installed here")


class _Broken(Peer):
    key = name = "broken"

    def build(self, case):
        raise RuntimeError("cannot build this")


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setattr(corpus_suite, "corpus_peers", lambda device, numba_cuda=False: [
        KfusePeer("cpu"), NumpyPeer(), _Missing(), _Broken()])
    try:
        res = corpus_suite.run_corpus("cpu", quick=True, filter="sum_leading,mse_rows,gelu_bf16", size="tiny",
                                      progress=False)
    finally:
        mp.undo()
    out = tmp_path_factory.mktemp("corpus")
    corpus_report.write_json(res, str(out / "r.json"))
    return res, json.loads((out / "r.json").read_text())


def test_runner_records_missing_and_failing_peers(corpus_run):
    res, _ = corpus_run
    assert res["peers"]["missing"] == {"available": False, "reason": "not installed here"}
    assert [c["label"] for c in res["cases"]] == ["mse_rows", "sum_leading", "gelu_bf16"]
    rows = {(r["case"], r["impl"]): r for r in res["rows"]}
    assert len(rows) == 3 * 3           # kfuse, numpy, broken per entry (missing never set up)
    for case in ("mse_rows", "sum_leading"):
        for impl in ("kfuse[cpu]", "numpy"):
            r = rows[(case, impl)]
            assert r["ok"] and r["correct"] and r["ms"] > 0 and "frac_ceiling" in r, r
        assert "cannot build this" in rows[(case, "broken")]["error"]
        k = rows[(case, "kfuse[cpu]")]
        assert k["kernels"] >= 1 and k["predicted_ms"] > 0
        assert len(k["kernel_times"]["kernels"]) == k["kernels"]
    assert all(not rows[("gelu_bf16", i)]["ok"] and "bfloat16" in rows[("gelu_bf16", i)]["error"]
               for i in ("kfuse[cpu]", "numpy", "broken"))


def test_report_shape_and_summary(corpus_run):
    res, reloaded = corpus_run
    s = corpus_report.summary(reloaded)
    assert s["kfuse"] == "kfuse[cpu]"
    assert set(s["per_peer"]) == {"numpy"} and s["per_peer"]["numpy"]["entries"] == 2
    assert len(s["worst"]) == 2 and s["kfuse_failed"][0][0] == "gelu_bf16"
    md = corpus_report.markdown(reloaded)
    for part in ("#### Summary", "geomean speed", "#### Entries", "| mse_rows | losses |",
                 "predicted vs measured", "| gelu_bf16 | numpy |", "noisy"):
        assert part in md, part


def test_geomean_and_speeds_on_a_synthetic_result():
    rows = [{"case": c, "impl": i, "ok": True, "ms": ms} for c, i, ms in (
        ("a", "kfuse[cuda]", 1.0), ("a", "torch.compile", 2.0), ("b", "kfuse[cuda]", 4.0),
        ("b", "torch.compile", 1.0), ("c", "kfuse[cuda]", 1.0), ("c", "cupy", 8.0))]
    res = {"meta": {"device": "gpu"}, "peers": {"kfuse[cuda]": {"available": True}}, "rows": rows}
    sp = corpus_report.speeds(res)
    assert sp == {"a": {"torch.compile": 2.0}, "b": {"torch.compile": 0.25}, "c": {"cupy": 8.0}}
    s = corpus_report.summary(res)
    assert math.isclose(s["per_peer"]["torch.compile"]["geomean"], math.sqrt(0.5))
    assert s["below_0.9x_torch.compile"] == 1 and s["below_1.0x_numpy"] == 0
    assert [w["entry"] for w in s["worst"]] == ["b", "a", "c"]
    assert corpus_report.geomean([]) is None


def test_merge_shards(corpus_run):
    _, r = corpus_run
    m = corpus_report.merge([r, r])
    assert len(m["cases"]) == 2 * len(r["cases"]) and m["meta"]["shard"] == "merged"


def test_cli_list_is_a_dry_run(capsys):
    from kfuse.bench import cli
    assert cli.main(["--suite", "corpus", "--device", "gpu", "--list", "--filter", "cross_entropy_32000"]) == 0
    out = capsys.readouterr().out
    assert "cross_entropy_32000" in out and "float32[8192x32000]" in out


# ---- per-kernel predicted vs measured --------------------------------------------------------------
def _two_kernels(x):
    return x / np.sqrt(np.sum(x * x)) + np.max(x, axis=0)


def test_measure_kernels_pairs_each_kernel_with_its_prediction():
    from kfuse.bench.kernel_timing import format_measured, measure_kernels
    x = np.random.default_rng(0).standard_normal((64, 48), dtype=np.float32)
    rep = measure_kernels(_two_kernels, x, device="cpu", reps=3)
    plan = kfuse.explain(_two_kernels, x, device="cpu")
    assert [k["kernel"] for k in rep["kernels"]] == [g.id for g in plan.groups]
    for k in rep["kernels"]:
        assert k["predicted_us"] > 0 and k["measured_us"] > 0 and k["runs"] >= 3
    assert rep["call_us"] > 0 and "measured/predicted" in format_measured(rep)


def test_explain_measure_cli(tmp_path, capsys):
    from kfuse import cli
    f = tmp_path / "m.py"
    f.write_text("import numpy as np\ndef f(x):\n    return (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)\n")
    assert cli.main(["explain", f"{f}:f", "f32[64,32]", "--device", "cpu", "--measure"]) == 0
    out = capsys.readouterr().out
    assert "total predicted" in out and "measured on cpu" in out and "whole call" in out
