"""CPU persistence: a new process reloads Numba machine code from disk (no pickle), fast and correct."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("numba")

from kfuse.runtime.cache import CacheStore  # noqa: E402

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "numba_child.py")


def child(cache_dir, kernel, dtype, out):
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)
    r = subprocess.run([sys.executable, CHILD, cache_dir, kernel, dtype, str(out)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kernel", ["layernorm", "gelu"])
def test_new_process_reloads_faster_and_equal(tmp_path, kernel):
    cache = str(tmp_path / "c")
    cold = child(cache, kernel, "float64", tmp_path / "cold.npy")
    assert cold["ok"] and cold["saves"] == 1 and cold["loads"] == 0 and not cold["warnings"]
    warm = child(cache, kernel, "float64", tmp_path / "warm.npy")
    assert warm["ok"] and warm["loads"] == 1 and warm["saves"] == 0 and not warm["warnings"]
    assert np.array_equal(np.load(tmp_path / "cold.npy"), np.load(tmp_path / "warm.npy"))
    print(f"\n{kernel}: cold {cold['first_call_s']*1e3:.0f} ms, warm {warm['first_call_s']*1e3:.0f} ms, "
          f"hot {warm['hot_s']*1e6:.0f} us, import numba {warm['import_s']*1e3:.0f} ms")
    assert warm["first_call_s"] < 0.2 * cold["first_call_s"], (cold, warm)
    # another dtype is another entry (compiled, not a wrong reload)
    f32 = child(cache, kernel, "float32", tmp_path / "f32.npy")
    assert f32["ok"] and f32["saves"] == 1 and f32["loads"] == 0
    store = CacheStore.open(path=cache)
    infos = list(store.entries(verify=True))
    assert len(infos) == 2 and all(i.error is None for i in infos)
    assert {i.meta["kind"] for i in infos} == {"cpu-numba"}


def test_corrupt_object_code_recompiles_with_one_warning(tmp_path):
    cache = str(tmp_path / "c")
    child(cache, "layernorm", "float64", tmp_path / "a.npy")
    store = CacheStore.open(path=cache)
    (info,) = list(store.entries())
    obj = os.path.join(info.path, "object.o")
    data = open(obj, "rb").read()
    open(obj, "wb").write(data[: len(data) // 3])                 # truncated machine code
    r = child(cache, "layernorm", "float64", tmp_path / "b.npy")
    assert r["ok"] and r["loads"] == 0 and r["saves"] == 1 and len(r["warnings"]) == 1
    r = child(cache, "layernorm", "float64", tmp_path / "c.npy")   # replaced: loads again
    assert r["ok"] and r["loads"] == 1 and not r["warnings"]


def test_unrebuildable_record_recompiles_with_one_warning(tmp_path):
    # numba.json rewritten consistently (sizes/sha256 updated) but describing another signature
    import hashlib
    cache = str(tmp_path / "c")
    child(cache, "gelu", "float64", tmp_path / "a.npy")
    store = CacheStore.open(path=cache)
    (info,) = list(store.entries())
    rec = json.loads(open(os.path.join(info.path, "numba.json")).read())
    rec["argtypes"][0] = "array(int8, 2d, C)"
    body = json.dumps(rec).encode()
    open(os.path.join(info.path, "numba.json"), "wb").write(body)
    meta = json.load(open(os.path.join(info.path, "meta.json")))
    meta["files"]["numba.json"] = {"size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    json.dump(meta, open(os.path.join(info.path, "meta.json"), "w"))
    r = child(cache, "gelu", "float64", tmp_path / "b.npy")
    assert r["ok"] and r["loads"] == 0 and r["saves"] == 1 and len(r["warnings"]) == 1
    assert "cannot reload" in r["warnings"][0]


def test_real_numba_concurrent_writers(tmp_path):
    cache = str(tmp_path / "c")
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, CHILD, cache, "gelu", "float64", str(tmp_path / f"{i}.npy")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for i in range(4)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    res = [json.loads(o[0].strip().splitlines()[-1]) for o in outs]
    assert all(r["ok"] and not r["warnings"] for r in res)
    store = CacheStore.open(path=cache)
    infos = list(store.entries(verify=True))
    assert len(infos) == 1 and infos[0].error is None
    assert os.listdir(os.path.join(cache, "tmp")) == []


def test_in_process_api_uncached_and_cached(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("numba_child", CHILD)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from kfuse.runtime.cpu_persist import load_or_compile, module_name_for
    src, fn = mod.KERNELS["gelu"]
    d = load_or_compile(None, {"k": 1}, src, fn)          # store=None: plain dispatcher
    x = np.random.rand(5, 7)
    g, b, out = np.ones(7), np.zeros(7), np.empty((5, 7))
    d(x, g, b, out, 5, 7)
    assert np.allclose(out, mod.reference("gelu", x, g, b))
    assert d.py_func.__module__ == module_name_for(src)


def test_loaded_and_fresh_kernels_mix_in_one_process(tmp_path):
    import importlib.util
    from kfuse.runtime.cpu_persist import load_or_compile
    cache = str(tmp_path / "c")
    child(cache, "layernorm", "float64", tmp_path / "a.npy")       # on disk: layernorm f64
    spec = importlib.util.spec_from_file_location("numba_child", CHILD)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    store = CacheStore.open(path=cache)
    rng = np.random.RandomState(1)
    x, g, b = rng.rand(33, 65), rng.rand(65), rng.rand(65)
    # loaded, fresh, and the same source again in a second dispatcher (its symbols are already
    # in the JIT: it compiles afresh instead of loading twice)
    for name, loads in (("layernorm", 1), ("gelu", 0), ("layernorm", 0)):
        src, fn = mod.KERNELS[name]
        key = {"graph": name, "signature": ["float64"], "backend": "cpu"}   # as numba_child
        d = load_or_compile(store, key, src, fn)
        out = np.empty_like(x)
        d(x, g, b, out, 33, 65)
        assert np.allclose(out, mod.reference(name, x, g, b))
        assert d._cache.loads == loads
        if name != "layernorm" or not loads:
            continue
        o32 = np.empty(x.shape, np.float32)           # a new signature of a loaded dispatcher
        d(x.astype(np.float32), g.astype(np.float32), b.astype(np.float32), o32, 33, 65)
        assert np.allclose(o32, mod.reference(name, x, g, b), rtol=1e-4, atol=1e-5)


def test_non_unique_module_name_is_not_persisted(store):
    import warnings
    import numba
    from kfuse.runtime.cache import CacheWarning
    from kfuse.runtime.cpu_persist import attach
    src = "def k(x):\n    return x + 1\n"
    ns = {}
    exec(src, ns)                                   # no __name__: symbols would be '<dynamic>.k'
    d = numba.njit(ns["k"])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        attach(d, store, {"k": 1}, src, "k")
        assert d(1) == 2
    assert d._cache.saves == 0 and list(store.entries()) == []
    assert len([x for x in w if issubclass(x.category, CacheWarning)]) == 1


def test_several_dispatchers_of_one_source(store):
    # the CPU backend's sources define `<fn>_seq` and `<fn>_par` in one module
    import numba
    from kfuse.runtime.cpu_persist import attach, module_name_for
    src = ("import numba\nfrom numba import prange\n"
           "def body(x, out, n):\n    for i in prange(n):\n        out[i] = x[i] * 2.0\n"
           "k_seq = numba.njit(body)\nk_par = numba.njit(parallel=True)(body)\n")
    ns = {"__name__": module_name_for(src)}
    exec(src, ns)
    for name in ("k_seq", "k_par"):
        attach(ns[name], store, {"backend": "cpu"}, src, name)
        x = np.arange(10.0)
        out = np.empty(10)
        ns[name](x, out, 10)
        assert np.array_equal(out, x * 2)
        assert ns[name]._cache.saves == 1
    assert len([i for i in store.entries(verify=True) if i.error is None]) == 2
