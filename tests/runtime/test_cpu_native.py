"""Native CPU kernels (runtime/cpu_native.py, cpu_native_build.py): stored when Numba compiles a
kernel's sequential variant, loaded by ctypes where Numba is not imported.

In-process tests pretend Numba is not imported (``cpu_native.numba_imported``): a first run with
an empty cache compiles through Numba (the stand-ins build its dispatchers) and stores the native
objects; a second run, with the in-process memo cleared, runs the objects. Both runs' results
must be equal bit for bit, and the second must not have built any Numba dispatcher. A subprocess
test checks the real thing: a warm-cache call leaves Numba and llvmlite out of ``sys.modules``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kfuse
from kfuse import config
from kfuse.runtime import cpu as rt, cpu_native, cpu_native_build, keys

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or cpu_native_build.compiler() is None,
                                reason="native CPU kernels need Linux and cc")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def native_env(tmp_path, monkeypatch):
    """An empty cache, a fresh kernel memo, Numba 'not imported', one thread."""
    monkeypatch.setenv("KFUSE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KFUSE_CPU_THREADS", "1")
    monkeypatch.delenv("KFUSE_CPU_NATIVE", raising=False)
    config.reload()
    monkeypatch.setattr(rt, "_COMPILED", {})
    monkeypatch.setattr(cpu_native, "numba_imported", lambda: False)
    yield tmp_path / "cache"
    monkeypatch.undo()
    config.reload()


def _stand_ins():
    return [fns[0] for fns in rt._COMPILED.values()]


def _run_twice(fn, args):
    """(cold results, warm results, warm stand-ins): each run a new jit and kernel memo."""
    cold = kfuse.jit(fn, backend="cpu")
    first = [cold(*args) for _ in range(2)]
    cpu_native_build.wait()                             # (objects are linked in a thread)
    rt._COMPILED.clear()
    warm = kfuse.jit(fn, backend="cpu")
    again = [warm(*args) for _ in range(3)]            # the program, then the direct call
    return first, again, _stand_ins()


def _same_bits(a, b):
    a, b = (x if isinstance(x, (tuple, list)) else (x,) for x in (a, b))
    assert len(a) == len(b)
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def _elementwise(x, y):
    return np.exp(x) * 2.0 + y


def _softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def _col_sum(x):
    return (x * x).sum(axis=0)


def _outputs(x, y):
    return x + y, x * y, (x - y).max(axis=-1)


def _scalar(x, a, n):
    return x * a + n


def _ints(i):
    return (i // 3) % 7 - (i >> 1)


def _half(h):
    return (h * h + h).astype(np.float16)


def _views(x, y):
    return np.tanh(x) + y


def _libm(x, y):
    return np.sin(x) * np.log1p(x) + np.arctan2(x, y + 1.0) ** 3


def _complex(z):
    return np.abs(np.exp(z)) + (z * z).real


def _scatter(a, j):
    b = a.copy()
    np.add.at(b, j, 1.5)
    return b


rng = np.random.default_rng(7)
CASES = {
    "elementwise, odd sizes": (_elementwise, (rng.random((37, 53), dtype=np.float32),
                                              rng.random((37, 53), dtype=np.float32))),
    "row reduction": (_softmax, (rng.standard_normal((33, 129)).astype(np.float32),)),
    "column reduction": (_col_sum, (rng.standard_normal((65, 31)),)),
    "several outputs": (_outputs, (rng.random((9, 17), dtype=np.float32),
                                   rng.random((9, 17), dtype=np.float32))),
    "scalars": (_scalar, (rng.random(101), 0.37, 3)),
    "integers": (_ints, (rng.integers(-1000, 1000, (7, 11)).astype(np.int32),)),
    "float16": (_half, (rng.random(77).astype(np.float16),)),
    "views and strides": (_views, (rng.random((20, 30))[:, ::3], rng.random((10, 20)).T)),
    "libm float64": (_libm, (rng.random((6, 45)), rng.random((6, 45)))),
    "complex": (_complex, (rng.random(31) + 1j * rng.random(31),)),
    "scatter": (_scatter, (rng.random(19), np.array([1, 3, 3, 18, 0]))),
}


@pytest.mark.parametrize("case", list(CASES))
def test_native_results_equal_numba_bit_for_bit(native_env, case):
    fn, args = CASES[case]
    first, again, seqs = _run_twice(fn, args)
    for r in first[1:] + again:
        _same_bits(first[0], r)
    assert seqs and all(isinstance(s, cpu_native.NativeKernel) for s in seqs)
    assert all(s.pair is None for s in seqs)               # no Numba dispatcher was built ...
    assert all(any(f is not None for f in s.loaded.values()) for s in seqs)   # ... objects ran


def test_arguments_the_object_was_not_built_for_take_numbas_path(native_env):
    x = rng.random((12, 40), dtype=np.float32)
    first, again, (seq,) = _run_twice(_softmax, (x,))
    ro = x.copy()
    ro.setflags(write=False)                # (the same dispatch key: the direct call's entry
    f = kfuse.jit(_softmax, backend="cpu")  # refuses it, and Numba compiles the readonly type)
    _same_bits(first[0], f(x))
    _same_bits(first[0], f(ro))
    assert seq.pair is not None and len(seq.pair[0].overloads) == 1


def test_no_cc_stores_nothing_and_runs_numba(native_env, monkeypatch):
    monkeypatch.setattr(cpu_native_build, "compiler", lambda: None)
    x = rng.random((5, 64), dtype=np.float32)
    first, again, (seq,) = _run_twice(_softmax, (x,))
    _same_bits(first[0], again[-1])
    assert seq.pair is not None and not any(seq.loaded.values())


def test_an_object_that_does_not_load_falls_back(native_env, monkeypatch):
    x = rng.random((5, 64), dtype=np.float32)
    cold = kfuse.jit(_softmax, backend="cpu")(x)
    cpu_native_build.wait()
    rt._COMPILED.clear()

    def broken(path, argsig):
        raise OSError("cannot open shared object file")
    monkeypatch.setattr(cpu_native, "NativeFn", broken)
    _same_bits(cold, kfuse.jit(_softmax, backend="cpu")(x))
    (seq,) = _stand_ins()
    assert seq.pair is not None and not any(seq.loaded.values())


def test_switched_off_runs_numba_only(native_env, monkeypatch):
    monkeypatch.setenv("KFUSE_CPU_NATIVE", "0")
    config.reload()
    x = rng.random((5, 64), dtype=np.float32)
    first, again, seqs = _run_twice(_softmax, (x,))
    _same_bits(first[0], again[-1])
    assert not any(isinstance(s, cpu_native.NativeKernel) for s in seqs)
    assert not any(i.meta.get("kind") == "cpu-native" for i in _store().entries("kernels"))


def _store():
    from kfuse.runtime.cache import CacheStore
    return CacheStore.open()


def test_host_record_and_numba_defaults_match_numba(native_env):
    import llvmlite.binding as ll
    import numba
    kfuse.jit(_softmax, backend="cpu")(rng.random((3, 8), dtype=np.float32))
    cpu_native_build.wait()
    entry = _store().get("host", cpu_native.host_key())
    assert json.loads(entry.read(cpu_native.HOST_RECORD))["llvm_cpu"] == ll.get_host_cpu_name()
    assert keys.dist_version("numba") == numba.__version__
    from kfuse.runtime.cpu_threads import default_threads
    if not config.get().numba_env:
        assert keys._numba_code_knobs() == keys.NUMBA_DEFAULT_KNOBS      # (Numba imported here)
        assert default_threads() == numba.config.NUMBA_NUM_THREADS


_CHILD = r'''
import json, sys
import numpy as np
import kfuse

def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)

x = np.random.default_rng(3).random((48, 300), dtype=np.float32)
f = kfuse.jit(softmax, backend="cpu")
ys = [f(x) for _ in range(3)]
print(json.dumps({"bits": ys[0].view(np.uint32).tolist()[:4096:7],
                  "same": all(np.array_equal(ys[0], y) for y in ys),
                  "ok": bool(np.allclose(ys[0], softmax(x), rtol=1e-5)),
                  "loaded": sorted(m for m in ("numba", "llvmlite") if m in sys.modules)}))
'''


def _child(cache, **env):
    e = dict(os.environ, KFUSE_CACHE_DIR=str(cache), PYTHONPATH=ROOT, **env)
    e.pop("KFUSE_CPU_NATIVE", None)
    e.update(env)
    r = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=e,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_warm_call_in_a_new_process_imports_no_numba(tmp_path):
    cold = _child(tmp_path / "c")
    warm = _child(tmp_path / "c")
    assert cold["ok"] and cold["same"] and cold["loaded"] == ["llvmlite", "numba"]
    assert warm["ok"] and warm["same"] and warm["loaded"] == []      # neither Numba nor llvmlite
    assert warm["bits"] == cold["bits"]
    off = _child(tmp_path / "c", KFUSE_CPU_NATIVE="0")                # the switch: Numba's path
    assert off["loaded"] == ["llvmlite", "numba"] and off["bits"] == cold["bits"]
