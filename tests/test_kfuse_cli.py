"""The ``kfuse`` command line: dumps, explain, demo, and the error messages for bad input.

Most tests call :func:`kfuse.cli.main` in-process (fast, shares compiled kernels); one runs the
module as a subprocess to check the entry point.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kfuse.cli import main

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _has_nvrtc() -> bool:
    try:
        from cuda.bindings import nvrtc  # noqa: F401
        return True
    except Exception:
        return False


# ---- dumps -----------------------------------------------------------------------------------

@pytest.mark.parametrize("stage", ["traced", "optimized", "fused", "kernel", "cpu"])
def test_dump_ir_stages(capsys, stage):
    rc, out, err = run(capsys, "dump-ir", f"{EX}/softmax.py:softmax", "f32[64,128]", "--stage", stage)
    assert rc == 0, err
    assert out.strip(), f"stage {stage} printed nothing"


def test_dump_ir_traced_names_the_ops(capsys):
    rc, out, err = run(capsys, "dump-ir", f"{EX}/softmax.py:softmax", "f32[64,128]", "--stage", "traced")
    assert rc == 0, err
    low = out.lower()
    assert "exp" in low and "max" in low and "sum" in low, out
    assert "64" in out and "128" in out


def test_dump_ir_huge_spec_allocates_nothing(capsys):
    # 2^20 x 2^20 float32 would be 4 TiB: planning must not allocate it
    rc, out, err = run(capsys, "dump-ir", f"{EX}/rownorm.py:rownorm", "f32[1048576,1048576]", "--stage", "fused")
    assert rc == 0, err
    assert out.strip()


def test_dump_ir_multi_arg_and_output_file(capsys, tmp_path):
    dest = tmp_path / "sub" / "layernorm.py"
    rc, out, err = run(capsys, "dump-ir", f"{EX}/layernorm.py:layernorm", "f32[32,64]", "f32[64]", "f32[64]",
                       "--stage", "cpu", "-o", dest)
    assert rc == 0, err
    text = dest.read_text()
    assert "def " in text, text[:500]
    assert out == ""


def test_dump_ir_plain_function_and_scalars(capsys, tmp_path):
    src = tmp_path / "user_fn.py"
    src.write_text("import numpy as np\n\ndef scale(x, a, n):\n    return np.exp(x) * a + n\n")
    rc, out, err = run(capsys, "dump-ir", f"{src}:scale", "f32[8]", "float", "int", "--stage", "traced")
    assert rc == 0, err
    assert out.strip()


@pytest.mark.skipif(not _has_nvrtc(), reason="NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")
def test_dump_cuda_and_ptx_without_gpu(capsys, tmp_path):
    rc, out, err = run(capsys, "dump-cuda", f"{EX}/gelu_bias.py:gelu_bias", "f32[256,512]", "f32[512]", "f32[512]")
    assert rc == 0, err
    assert "__global__" in out
    ptx = tmp_path / "out.ptx"
    rc, out, err = run(capsys, "dump-ptx", f"{EX}/gelu_bias.py:gelu_bias", "f32[256,512]", "f32[512]", "f32[512]",
                       "--arch", "sm_90", "-o", ptx)
    assert rc == 0, err
    text = ptx.read_text()
    assert ".version" in text and ".entry" in text


PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
PTX_CASES = {"gelu_bias": ["f32[256,512]", "f32[512]", "f32[512]"], "adam": ["f32[4096]"] * 4,
             "layernorm": ["f32[64,96]", "f32[96]", "f32[96]"], "gemm_gelu": ["f16[64,32]", "f16[32,48]", "f16[48]"]}


@pytest.mark.skipif(not _has_nvrtc() or PTXAS is None, reason="needs NVRTC and ptxas")
@pytest.mark.parametrize("name", list(PTX_CASES))
def test_dump_ptx_file_passes_the_machines_ptxas_as_written(capsys, tmp_path, name):
    """The file ``dump-ptx`` writes is assembled as it stands by the machine's ptxas (one module,
    an ISA this ptxas reads); its header names the NVRTC, ISA and arch."""
    ptx = tmp_path / f"{name}.ptx"
    rc, out, err = run(capsys, "dump-ptx", f"{EX}/{name}.py:{name}", *PTX_CASES[name], "--arch", "sm_90", "-o", ptx)
    assert rc == 0, err
    text = ptx.read_text()
    assert text.startswith("// kfuse: NVRTC ") and "PTX ISA " in text.splitlines()[0] and "sm_90" in text.splitlines()[0]
    r = subprocess.run([PTXAS, "-arch=sm_90", str(ptx), "-o", os.devnull], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.skipif(not _has_nvrtc(), reason="needs NVRTC")
def test_dump_ptx_isa_option(capsys, tmp_path):
    ptx = tmp_path / "g.ptx"
    rc, out, err = run(capsys, "dump-ptx", f"{EX}/gelu_bias.py:gelu_bias", "f32[64,96]", "f32[96]", "f32[96]",
                       "--ptx-isa", "8.7", "-o", ptx)
    assert rc == 0, err
    text = ptx.read_text()
    assert "\n.version 8.7\n" in text and "PTX ISA 8.7 (--ptx-isa" in text


# ---- explain ---------------------------------------------------------------------------------

def test_explain_prints_the_plan(capsys):
    rc, out, err = run(capsys, "explain", f"{EX}/adam.py:adam", *["f32[4096]"] * 4)
    assert rc == 0, err
    assert "kernel" in out.lower(), out


def test_explain_for_a_named_gpu_needs_no_gpu(capsys):
    rc, out, err = run(capsys, "explain", f"{EX}/softmax.py:softmax", "f32[4096,4096]", "--device", "h100")
    assert rc == 0, err
    assert out.strip()


# ---- demo --------------------------------------------------------------------------------------

def test_demo_quick_on_cpu(capsys, tmp_path):
    rc, out, err = run(capsys, "demo", "--quick", "--device", "cpu", "--out", tmp_path / "demo")
    assert rc == 0, out + err
    assert "FAILED" not in out
    assert out.count("check against NumPy: OK") == 8, out
    assert "graph break: np.sort" in (tmp_path / "demo" / "sorted_softmax" / "segments.txt").read_text()
    summary = (tmp_path / "demo" / "summary.md").read_text()
    assert "softmax" in summary
    for name in ("gelu_bias", "softmax", "layernorm", "rownorm", "gemm_gelu", "adam", "rmsnorm_residual"):
        folder = tmp_path / "demo" / name
        for f in ("traced.txt", "optimized.txt", "fused.txt", "kernel.txt", "cpu.py"):
            assert (folder / f).stat().st_size > 0, f"{name}/{f}"
        if _has_nvrtc():
            assert (folder / "kernels.ptx").stat().st_size > 0, f"{name}/kernels.ptx"


def test_demo_gpu_without_gpu_is_an_error(capsys, tmp_path):
    from kfuse.demo import gpu_present
    if gpu_present():
        pytest.skip("a GPU is present")
    rc, out, err = run(capsys, "demo", "--device", "gpu", "--out", tmp_path)
    assert rc != 0
    assert "no CUDA GPU" in out + err


# ---- errors ------------------------------------------------------------------------------------

def test_bad_spec(capsys):
    rc, out, err = run(capsys, "dump-ir", f"{EX}/softmax.py:softmax", "f33[4,4]")
    assert rc == 2
    assert "bad argument spec 'f33[4,4]'" in err and "argument 'x'" in err
    assert "Traceback" not in err


def test_missing_file(capsys):
    rc, out, err = run(capsys, "dump-ir", "no/such/file.py:f", "f32[4]")
    assert rc == 2
    assert "no such file" in err and "no/such/file.py" in err


def test_missing_function_lists_the_candidates(capsys):
    rc, out, err = run(capsys, "explain", f"{EX}/softmax.py:sofmax", "f32[4,4]")
    assert rc == 2
    assert "no function 'sofmax'" in err and "softmax" in err


def test_target_without_colon(capsys):
    rc, out, err = run(capsys, "dump-ir", f"{EX}/softmax.py", "f32[4,4]")
    assert rc == 2
    assert "path/file.py:function" in err


def test_wrong_number_of_specs(capsys):
    rc, out, err = run(capsys, "dump-ir", f"{EX}/layernorm.py:layernorm", "f32[4,4]")
    assert rc == 2
    assert "no spec for g, b" in err
    rc, out, err = run(capsys, "dump-ir", f"{EX}/softmax.py:softmax", "f32[4,4]", "f32[4]")
    assert rc == 2
    assert "takes 1 argument" in err


def test_bad_stage_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["dump-ir", f"{EX}/softmax.py:softmax", "f32[4,4]", "--stage", "bogus"])
    assert e.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_error_in_user_code_is_reported_without_traceback(capsys, tmp_path):
    src = tmp_path / "bad_shapes.py"
    src.write_text("def add(x, y):\n    return x + y\n")
    rc, out, err = run(capsys, "dump-ir", f"{src}:add", "f32[3]", "f32[4]", "--stage", "traced")
    assert rc == 1
    assert "(3,)" in err and "(4,)" in err
    assert "Traceback" not in err


def test_error_prefix_is_said_once(capsys, tmp_path):
    """kfuse's own messages start with ``kfuse: ``; the CLI prints ``kfuse: error: `` once."""
    src = tmp_path / "branchy.py"
    src.write_text("def f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n")
    rc, out, err = run(capsys, "dump-ir", f"{src}:f", "f32[3]", "--stage", "traced")
    assert rc == 1
    assert err.startswith("kfuse: error: ") and "kfuse: error: kfuse:" not in err, err
    assert "branchy.py:2" in err and "np.where" in err
    rc, out, err = run(capsys, "dump-ir", f"{EX}/softmax.py:softmax", "f33[4,4]")
    assert err.count("kfuse:") == 1, err


def test_spec_hints_are_quoted(capsys):
    """Hints show specs quoted, as a shell needs them ('f32[4,4]': brackets are a zsh glob)."""
    rc, out, err = run(capsys, "dump-ir", f"{EX}/softmax.py:softmax", "f33[4,4]")
    assert "'f32[1024,1024]'" in err, err
    rc, out, err = run(capsys, "dump-ir", f"{EX}/layernorm.py:layernorm", "f32[4,4]")
    assert "'f32[1024,1024]'" in err, err
    res = subprocess.run([sys.executable, "-m", "kfuse.cli", "dump-ir", "--help"], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert "'f32[1024,1024]'" in res.stdout, res.stdout


# ---- entry point -------------------------------------------------------------------------------

def test_module_entry_point_help():
    res = subprocess.run([sys.executable, "-m", "kfuse.cli", "--help"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    for cmd in ("dump-ir", "dump-cuda", "dump-ptx", "explain", "demo", "bench", "cache"):
        assert cmd in res.stdout


# ---- examples ----------------------------------------------------------------------------------

@pytest.mark.parametrize("script", sorted(p.name for p in EX.glob("*.py")))
def test_example_checks_itself(capsys, script):
    import runpy
    runpy.run_path(str(EX / script), run_name="__main__")
    out = capsys.readouterr().out
    assert out.startswith("OK ") and "FAIL" not in out, out
