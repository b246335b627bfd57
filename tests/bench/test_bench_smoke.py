"""Smoke tests of the benchmark suite (kfuse/bench): a --quick CPU run with NumPy and kfuse only,
its JSON / markdown / roofline PNG / RESULTS.md outputs, and the pieces they rest on."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kfuse.bench import cli, report, timing
from kfuse.bench.peers import NumpyPeer, Peer
from kfuse.bench.suite import run_suite
from kfuse.bench.workloads import (ADAM_BC1, REL_TOL, WORKLOADS, as_tuple, public_cases,
                                   relative_error)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    paths = {k: out / n for k, n in (("json", "r.json"), ("md", "r.md"), ("png", "roof.png"),
                                     ("results", "RESULTS.md"))}
    rc = cli.main(["--device", "cpu", "--quick", "--peers", "numpy,kfuse", "--workloads", "P1,P4,P6",
                   "--json", str(paths["json"]), "--markdown", str(paths["md"]), "--plot", str(paths["png"]),
                   "--results", str(paths["results"]), "--no-progress"])
    return rc, paths


def test_quick_run_writes_every_output(quick_run):
    rc, p = quick_run
    assert rc == 0
    res = json.loads(p["json"].read_text())
    assert res["meta"]["device"] == "cpu"
    assert [c["workload"] for c in res["cases"]] == ["P1", "P4", "P6"]
    assert res["ceilings"]["bandwidth"]["value"] > 0
    numpy_rows = [r for r in res["rows"] if r["impl"] == "numpy"]
    assert len(numpy_rows) == 3 and all(r["ok"] for r in numpy_rows)
    for r in numpy_rows:
        assert r["ms_min"] <= r["ms"] <= r["ms_max"]
        assert r["rel_err"] < REL_TOL["float32"] and r["correct"]
        assert 0 < r["frac_ceiling"] < 10
    kf = res["peers"].get("kfuse[cpu]", {})
    kf_rows = [r for r in res["rows"] if r["impl"] == "kfuse[cpu]"]
    if kf.get("available"):      # kfuse rows exist, each either timed or carrying its error
        assert len(kf_rows) == 3
        assert all(r["ok"] or r.get("error") for r in kf_rows)
    else:                        # a missing layer is reported, not raised
        assert kf_rows == [] and kf.get("reason")
    md = p["md"].read_text()
    assert "| P1 | numpy |" in md and "roof.png" in md
    assert p["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    results = p["results"].read_text()
    assert "<!-- kfuse-bench:cpu:begin -->" in results and "<!-- kfuse-bench:gpu:begin -->" in results
    assert "| P6 | numpy |" in results


def test_results_update_replaces_only_its_section(quick_run, tmp_path):
    _, p = quick_run
    res = json.loads(p["json"].read_text())
    path = tmp_path / "RESULTS.md"
    report.update_results(res, str(path), None)
    text = path.read_text().replace("_not run yet_", "GPU NUMBERS STAY", 1)  # the GPU section
    path.write_text(text)
    res["meta"]["date"] = "2099-01-01T00:00:00"
    report.update_results(res, str(path), None)
    text = path.read_text()
    assert "GPU NUMBERS STAY" in text and "2099-01-01" in text
    assert text.count("<!-- kfuse-bench:cpu:begin -->") == 1


def test_failing_peer_is_a_row_error_not_a_crash(monkeypatch):
    class Broken(Peer):
        key = name = "broken"

        def build(self, case):
            def fn(*args):
                raise RuntimeError("boom")
            return fn

    monkeypatch.setattr("kfuse.bench.suite.all_peers", lambda device, tune=False: [NumpyPeer(), Broken()])
    res = run_suite("cpu", quick=True, workloads=["P4"], warm=False, progress=False, dispatch="")
    rows = {r["impl"]: r for r in res["rows"]}
    assert rows["numpy"]["ok"] and not rows["broken"]["ok"]
    assert "boom" in rows["broken"]["error"]
    assert "broken" in report.markdown(res)


def test_workloads_match_their_definitions():
    cases = {c.label: c for c in public_cases("cpu", "quick")}
    assert {w.name for w in WORKLOADS} == {"P1", "P2", "P3", "P4", "P5", "P6"}
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    p2 = cases["P2"].body(np)(x)
    np.testing.assert_allclose(p2.sum(axis=1), 1.0, rtol=1e-6)
    p4 = cases["P4"].body(np)(x)
    np.testing.assert_allclose(p4, np.linalg.norm(x, axis=1), rtol=1e-6)
    g, b = np.ones(4, np.float32), np.zeros(4, np.float32)
    p3 = cases["P3"].body(np)(x, g, b)
    np.testing.assert_allclose(p3.mean(axis=1), 0.0, atol=1e-6)
    param, grad, m, v = (np.full(5, val, np.float32) for val in (1.0, 0.5, 0.0, 0.0))
    new_p, new_m, new_v = cases["P6"].body(np)(param, grad, m, v)
    assert new_p.dtype == np.float32 and new_m.dtype == np.float32
    np.testing.assert_allclose(new_m, 0.05, rtol=1e-6)
    np.testing.assert_allclose(new_p, 1.0 - 1e-3 * (0.05 / ADAM_BC1) / (np.sqrt(new_v / (1 - 0.999 ** 10)) + 1e-8),
                               rtol=1e-6)
    for c in cases.values():  # every body keeps the input dtype (weak Python-float constants)
        outs = as_tuple(c.body(np)(*c.make_inputs(0)))
        assert all(o.dtype == np.dtype(c.dtype) for o in outs), c.label
        assert [o.shape for o in outs] == list(c.out_shapes), c.label
    gpu = {c.label: c for c in public_cases("gpu", "full")}
    assert gpu["P1"].shapes[0] == (8192, 8192) and gpu["P6"].shapes[0] == (1 << 26,)
    assert "P5 8192x1024x4096" in gpu and gpu["P5 4096x4096x4096"].dtype == "float16"


def test_relative_error_and_timer():
    a = np.ones(10)
    assert relative_error([a], [a]) == 0.0
    assert math.isclose(relative_error([a * 1.01], [a]), 0.01, rel_tol=1e-9)
    assert relative_error([a[:5]], [a]) == math.inf
    assert relative_error([a * np.nan], [a]) == math.inf
    calls = []
    t = timing.time_cpu(lambda i: calls.append(i), warmup=2, reps=7)
    assert t.runs == 7 and calls == list(range(9)) and t.min_ms <= t.median_ms <= t.max_ms


def test_recorded_command_names_bench_once():
    """RESULTS.md records the suite's command as typed, from either entry point."""
    from kfuse.bench.report import command_line
    assert command_line(["/venv/bin/kfuse", "bench", "--device", "cpu"]) == "kfuse bench --device cpu"
    assert command_line(["/repo/kfuse/bench/cli.py", "--device", "gpu"]) == "kfuse bench --device gpu"


def test_peer_selection_keeps_bracketed_names_whole():
    from kfuse.bench.peers import all_peers, select
    names = [p.name for p in select(all_peers("gpu", tune=True), "kfuse[cuda],kfuse[cuda,tuned], torch.compile")]
    assert names == ["kfuse[cuda]", "kfuse[cuda,tuned]", "torch.compile"]
    assert [p.name for p in select(all_peers("cpu"), "numpy")] == ["numpy"]


def test_peer_selection_follows_the_listed_order():
    """``--peers torch.compile,kfuse[cuda]`` builds (and allocates for) torch.compile first."""
    from kfuse.bench.peers import all_peers, select
    names = [p.name for p in select(all_peers("gpu"), "torch.compile,kfuse[cuda]")]
    assert names == ["torch.compile", "kfuse[cuda]"]
