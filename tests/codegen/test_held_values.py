"""A costly op that several passes over a held row compute alike is computed by the first and held
in register slots for the others (codegen.cuda_rows, cuda_shapes.recomputed_values): which kernels
hold values, the emitted CUDA C computing each once, and that ptxas accepts it without spills."""
import shutil
import subprocess

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda as ce


def softcap_softmax(s):
    y = 50.0 * np.tanh(s / 50.0)
    e = np.exp(y - np.max(y, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def log1p_standardize(x):
    y = np.log1p(x)
    mu = np.mean(y, axis=1, keepdims=True)
    return (y - mu) / np.sqrt(np.mean((y - mu) * (y - mu), axis=1, keepdims=True) + 1e-6)


def plain_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _kir(fn, shape):
    return kfuse.jit(fn).lower(np.zeros(shape, np.float32), device="h200", backend="cuda").kernels()[0]


@pytest.mark.parametrize("fn,held,computed", [(softcap_softmax, 2, {"tanhf": 1, "expf": 1}),
                                              (log1p_standardize, 1, {"log1pf": 1}),
                                              (plain_softmax, 1, {"expf": 1})])
@pytest.mark.parametrize("vec", [4, 1])
def test_each_costly_value_computed_once(fn, held, computed, vec):
    kir = _kir(fn, (512, 2048))
    assert len(ce.recomputed_values(kir)) == held
    src = ce.emit(kir, ce.Variant("row", vec, False, 4 if vec == 4 else 16, 128))
    body = src[src.index('extern "C"'):]
    assert body.count("cv0_[k_]") >= 2 and f"cv{held}_" not in body
    for name, n in computed.items():
        assert body.count(f"{name}(") == n, name
    ptxas = shutil.which("ptxas")
    if ptxas:
        nvrtc = pytest.importorskip("kfuse.codegen.nvrtc")
        ptx = nvrtc.ptx_dump(nvrtc.compile(src, "sm_90"))      # (the ISA the ptxas on PATH reads)
        out = subprocess.run([ptxas, "-arch=sm_90", "-v", "-o", "/dev/null", "-"], input=ptx, text=True,
                             capture_output=True)
        assert out.returncode == 0, out.stderr
        assert "0 bytes spill stores" in out.stderr


def test_no_values_held_where_nothing_is_recomputed():
    kir = _kir(lambda x: x / np.sqrt(np.sum(x * x, axis=1, keepdims=True)), (64, 256))
    assert ce.recomputed_values(kir) == []
    body = ce.emit(kir, ce.Variant("row", 4, False, 4, 64))
    assert "cv0_" not in body
