"""Issue 7's kernel-cache tests on the GPU backends (CUDA C via NVRTC: "cuda"; Numba-CUDA:
"numba-cuda"), through the real ``kfuse.jit(backend=...)`` path on CuPy arrays and one fresh
``KFUSE_CACHE_DIR`` (runtime/gpu_store.py over runtime/cache.py). The CPU backend's versions are
tests/cache/test_concurrency*.py, test_store.py and test_cpu_persist.py.

- 16 processes x 50 rounds compiling shared and per-process functions into one fresh cache dir;
  every round forgets the in-process kernels, so it goes through the disk store. No exception,
  every result equal to NumPy's, no cache warning, a published key is never missed again, and
  ``kfuse cache verify`` is clean.
- Writers SIGKILLed in the middle of writing each file of an entry (cubin, ptx, source, meta):
  nothing half-written is published, and a later reader gets correct results with no warning.
- Truncated, zero-byte and garbage cubin/ptx/source/meta files: a miss, one CacheWarning, one
  recompile, a correct result; the entry is replaced and loads again.

Marked ``gpu``; skipped without a GPU and CuPy, the numba-cuda rows without an importable
numba-cuda (NumPy >= 2.5 breaks numba-cuda 0.30: see benchmarks/gpu_run.sh for the NumPy 2.4 wheel).
"""
import contextlib
import glob
import multiprocessing as mp
import os
import queue
import shutil
import signal
import time
import warnings

import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = [pytest.mark.gpu, pytest.mark.backends("cuda", "numba-cuda")]   # the backend fixture
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

from kfuse.bench.workloads import make_p1, make_p2, make_p3  # noqa: E402
from kfuse.testing import assert_matches_numpy  # noqa: E402

PROCS, ROUNDS = 16, 50
STRESS_DEADLINE_S = 150          # the whole 16-process run, per backend
# files of one entry, per backend (runtime/gpu_store.py), in the order CacheStore.put writes them
ENTRY_FILES = {"cuda": ["kernel.cu", "kernel.ptx", "kernel.cubin", "nvrtc.json", "meta.json"],
               "numba-cuda": ["kernel.py", "kernel.ptx", "meta.json"]}


def _skip_reason(backend):
    if backend == "numba-cuda":
        from kfuse.codegen import numba_cuda as nc
        ok, why = nc.numba_cuda_available()
        if not ok:
            return (why or "numba-cuda unavailable").splitlines()[0]
    return None


# ---- helpers shared with the child processes --------------------------------------------------
def _forget():
    """Drop every in-process memo of compiled/loaded GPU code: the next call goes to the disk store."""
    from kfuse.codegen import numba_cuda as nc
    from kfuse.runtime import cuda as rc
    from kfuse.runtime import numba_cuda as rn
    rc._COMPILED.clear()
    rc._LOADED.clear()
    rn._LOADED.clear()
    nc._PTX.clear()
    nc._MODULES.clear()


def _count_store():
    """Count the GPU store's hits and misses per key in this process (class-level wrap)."""
    from kfuse.runtime import gpu_store
    stats = {"hits": 0, "misses": 0, "puts": 0, "missed_after_seen": 0}
    seen = set()

    def counted(load, save):
        def counted_load(store, source, arch):
            k = (load.__name__, source, arch)
            v = load(store, source, arch)
            if v is None:
                stats["misses"] += 1
                stats["missed_after_seen"] += k in seen      # published before, yet not found
            else:
                stats["hits"] += 1
            seen.add(k)
            return v

        def counted_save(store, source, arch, value):
            stats["puts"] += 1
            seen.add((load.__name__, source, arch))
            return save(store, source, arch, value)
        return counted_load, counted_save
    gpu_store.load_cubin, gpu_store.save_cubin = counted(gpu_store.load_cubin, gpu_store.save_cubin)
    gpu_store.load_ptx, gpu_store.save_ptx = counted(gpu_store.load_ptx, gpu_store.save_ptx)
    return stats


def _child_setup(root):
    os.environ["KFUSE_CACHE_DIR"] = root
    os.environ["KFUSE_AUTOTUNE"] = "off"
    os.environ.pop("KFUSE_CACHE", None)
    from kfuse import config
    config.reload()


def _check(bad, what, got, expected, reductions=False):
    try:
        assert_matches_numpy(got, expected, reductions=reductions)
    except AssertionError as e:
        bad.append(f"{what}: {str(e).strip().splitlines()[:3]}")


def _stress_worker(backend, root, wid, rounds, q):
    try:
        _child_setup(root)
        import cupy as cp

        import kfuse
        from kfuse.runtime.cache import CacheWarning
        stats = _count_store()
        scale = float(wid + 2)

        def own(x):
            return x * scale - 1.0          # `scale` is a traced constant: one kernel per process

        shared = [(make_p1(np), 3, False), (make_p2(np), 1, True), (make_p3(np), 3, True)]
        rng = np.random.default_rng(wid)
        bad = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for r in range(rounds):
                _forget()
                rows = 8 * (1 + r % 4)
                host = [rng.standard_normal((rows, 256)).astype(np.float32),
                        rng.standard_normal(256).astype(np.float32),
                        rng.standard_normal(256).astype(np.float32)]
                dev = [cp.asarray(a) for a in host]
                for fn, nargs, red in shared:
                    got = kfuse.jit(fn, backend=backend)(*dev[:nargs])
                    _check(bad, f"round {r} {fn.__name__}", cp.asnumpy(got), fn(*host[:nargs]), red)
                got = kfuse.jit(own, backend=backend)(dev[0])
                _check(bad, f"round {r} own", cp.asnumpy(got), own(host[0]))
        warned = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
        q.put(("ok", wid, bad[:5], stats, warned[:5]))
    except BaseException:   # report, don't hang the parent
        import traceback
        q.put(("error", wid, traceback.format_exc()[-3000:]))


_OPS = [lambda x, c: x * c + 1.0, lambda x, c: np.exp(x * 0.1) * c, lambda x, c: np.sqrt(np.abs(x)) + c,
        lambda x, c: np.tanh(x) * c, lambda x, c: x * x * c - 2.0, lambda x, c: np.maximum(x, c) * 0.5]


def _const_fn(i):
    """Function number ``i``: a distinct kernel source for every ``i`` (constants are literals)."""
    op, c = _OPS[i % len(_OPS)], 1.0 + 0.25 * i

    def f(x):
        return op(x, c)
    f.__name__ = f.__qualname__ = f"const_fn_{i}"
    return f


def _const_worker(backend, root, n_fns, q, pause_file=None):
    """Run functions 0..n_fns-1. With ``pause_file``: at this process's 2nd publish, stop in the
    middle of writing that file (half of it written), report, and wait to be SIGKILLed."""
    try:
        _child_setup(root)
        import cupy as cp

        import kfuse
        from kfuse.runtime import cache as kcache
        stats = _count_store()
        if pause_file:
            import builtins
            real_open = builtins.open
            puts = [0]
            real_put = kcache.CacheStore.put

            def counting_put(self, *a, **k):
                puts[0] += 1
                return real_put(self, *a, **k)
            kcache.CacheStore.put = counting_put

            class Pausing:
                def __init__(self, f, path):
                    self.f, self.path = f, path

                def write(self, data):
                    if os.path.basename(self.path) == pause_file and puts[0] >= 2 and len(data) > 1:
                        self.f.write(data[: len(data) // 2])
                        self.f.flush()
                        q.put(("paused", current[0], pause_file, self.path))
                        while True:
                            time.sleep(60)
                    return self.f.write(data)

                def __enter__(self):
                    return self

                def __exit__(self, *a):
                    self.f.close()

            def pausing_open(path, mode="r", *a, **k):
                f = real_open(path, mode, *a, **k)
                return Pausing(f, str(path)) if "w" in mode else f
            kcache.open = pausing_open            # cache.py's module global shadows the builtin
        x = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
        xd = cp.asarray(x)
        bad = []
        current = [0]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for i in range(n_fns):
                current[0] = i
                _forget()
                f = _const_fn(i)
                _check(bad, f.__name__, cp.asnumpy(kfuse.jit(f, backend=backend)(xd)), f(x))
        warned = [str(w.message) for w in caught if issubclass(w.category, kcache.CacheWarning)]
        q.put(("ok", None, bad[:5], stats, warned[:5]))
    except BaseException:
        import traceback
        q.put(("error", None, traceback.format_exc()[-3000:]))


# ---- parent-side helpers ----------------------------------------------------------------------
from tests.cache.cli_helpers import verify_cli as _verify_cli  # noqa: E402


def _collect(q, n, deadline, procs):
    got = []
    while len(got) < n:
        left = deadline - time.time()
        if left <= 0:
            raise AssertionError(f"timed out: {len(got)}/{n} children reported: {got}")
        try:
            got.append(q.get(timeout=min(left, 5)))
        except queue.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise AssertionError(f"children died without reporting (exit codes "
                                     f"{[p.exitcode for p in dead]}); reports so far: {got}")
    return got


def _stop(procs):
    for p in procs:
        if p.is_alive():
            p.kill()
    for p in procs:
        p.join(10)


# ---- 16 processes x 50 rounds ------------------------------------------------------------------
def test_16_processes_50_rounds(backend, tmp_path):
    root = str(tmp_path / "kc")
    ctx = mp.get_context("spawn")       # CUDA: a clean interpreter per worker
    q = ctx.Queue()
    ps = [ctx.Process(target=_stress_worker, args=(backend, root, i, ROUNDS, q)) for i in range(PROCS)]
    t0 = time.time()
    try:
        for p in ps:
            p.start()
        results = _collect(q, PROCS, t0 + STRESS_DEADLINE_S, ps)
    finally:
        _stop(ps)
    wall = time.time() - t0
    errors = [r for r in results if r[0] != "ok"]
    assert not errors, errors[0][2]
    assert all(not r[2] for r in results), [r[2] for r in results if r[2]]        # results == NumPy's
    assert all(not r[4] for r in results), [r[4] for r in results if r[4]]        # no cache warning
    stats = [r[3] for r in results]
    assert sum(s["missed_after_seen"] for s in stats) == 0, stats
    hits, misses = sum(s["hits"] for s in stats), sum(s["misses"] for s in stats)
    # every kernel has been seen by round 3 (rows cycle 8..32): from then on all loads are hits
    assert hits >= PROCS * (ROUNDS - 4) * 4, stats
    rc, text = _verify_cli(root)
    assert rc == 0 and " 0 bad" in text, text
    entries = os.listdir(os.path.join(root, "kernels"))
    assert len(entries) >= 3 + PROCS                    # shared kernels and one per process, once each
    assert os.listdir(os.path.join(root, "tmp")) == []
    print(f"\n[{backend}] {PROCS}x{ROUNDS}: {wall:.1f} s wall, {hits} disk hits, {misses} misses "
          f"(compiles), {len(entries)} entries")


# ---- SIGKILL in the middle of writing an entry -------------------------------------------------
def test_sigkill_mid_write_publishes_nothing(backend, tmp_path):
    root = str(tmp_path / "kc")
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    files = ENTRY_FILES[backend]
    ps = [ctx.Process(target=_const_worker, args=(backend, root, 64, q, f)) for f in files]
    t0 = time.time()
    try:
        for p in ps:
            p.start()
        paused = _collect(q, len(ps), t0 + 300, ps)     # (children compile: slow on a loaded host)
        assert all(r[0] == "paused" for r in paused), paused
        for p in ps:                                     # every writer is half-way through a file
            os.kill(p.pid, signal.SIGKILL)
        for p in ps:
            p.join(10)
            assert p.exitcode == -signal.SIGKILL
    finally:
        _stop(ps)
    assert sorted(r[2] for r in paused) == sorted(files)
    # the half-written entries exist only in tmp/ (one per killed writer), never under kernels/
    assert len(os.listdir(os.path.join(root, "tmp"))) == len(ps)
    from kfuse.runtime.cache import read_entry
    kdir = os.path.join(root, "kernels")
    for name in os.listdir(kdir):
        read_entry(os.path.join(kdir, name), name)       # raises on a bad entry
    rc, text = _verify_cli(root)
    assert rc == 0, text
    # a later reader: every function (the interrupted ones included) correct, no cache warning
    n = max(r[1] for r in paused) + 2
    reader = ctx.Process(target=_const_worker, args=(backend, root, n, q))
    reader.start()
    try:
        (res,) = _collect(q, 1, time.time() + 120, [reader])
    finally:
        _stop([reader])
    assert res[0] == "ok", res[2]
    assert not res[2] and not res[4], res
    assert res[3]["hits"] >= 1 and res[3]["missed_after_seen"] == 0, res[3]
    rc, text = _verify_cli(root)
    assert rc == 0, text


# ---- corrupt files: a miss, one warning, a recompile ------------------------------------------
_PRISTINE: dict = {}


@contextlib.contextmanager
def _cache_env(root):
    """This process on cache dir ``root``, autotuning off (it would compile candidates too)."""
    from kfuse import config
    from kfuse.runtime import cache as kcache
    saved = {k: os.environ.get(k) for k in ("KFUSE_CACHE_DIR", "KFUSE_AUTOTUNE", "KFUSE_CACHE")}
    os.environ.update(KFUSE_CACHE_DIR=root, KFUSE_AUTOTUNE="off")
    os.environ.pop("KFUSE_CACHE", None)
    config.reload()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        kcache.reset_warnings()
        config.reload()


def _p1_inputs():
    rng = np.random.default_rng(3)
    return [rng.standard_normal((96, 160)).astype(np.float32),
            rng.standard_normal(160).astype(np.float32), rng.standard_normal(160).astype(np.float32)]


def _pristine(backend, tmp_path_factory):
    """A cache dir holding P1's one kernel for ``backend`` (compiled once per backend)."""
    if backend not in _PRISTINE:
        import cupy as cp

        import kfuse
        root = str(tmp_path_factory.mktemp(f"pristine-{backend}") / "kc")
        with _cache_env(root):
            _forget()
            host = _p1_inputs()
            kfuse.jit(make_p1(np), backend=backend)(*[cp.asarray(a) for a in host])
        entries = os.listdir(os.path.join(root, "kernels"))
        assert len(entries) == 1, entries                 # P1 is one kernel
        assert sorted(os.listdir(os.path.join(root, "kernels", entries[0]))) == \
            sorted(ENTRY_FILES[backend] + ["last_used"])
        _PRISTINE[backend] = root
    return _PRISTINE[backend]


def _corrupt(path, mode):
    data = open(path, "rb").read()
    if mode == "truncated":
        data = data[: len(data) // 2]
    elif mode == "zero":
        data = b""
    else:                                   # garbage of the same size: only the sha256 tells
        data = np.random.default_rng(7).integers(0, 256, max(len(data), 1), dtype=np.uint8).tobytes()
    with open(path, "wb") as f:
        f.write(data)


CORRUPT_CASES = [pytest.param(b, f, m, id=f"{b}-{f}-{m}", marks=pytest.mark.gpu)
                 for b in ("cuda", "numba-cuda") for f in ENTRY_FILES[b]
                 for m in ("truncated", "zero", "garbage")]


@pytest.mark.parametrize("backend_name,fname,mode", CORRUPT_CASES)
def test_corrupt_file_recompiles_with_one_warning(backend_name, fname, mode, tmp_path,
                                                  tmp_path_factory, monkeypatch):
    why = _skip_reason(backend_name)
    if why:
        pytest.skip(why)
    import cupy as cp

    import kfuse
    from kfuse.codegen import numba_cuda as nc
    from kfuse.codegen import nvrtc
    from kfuse.runtime import cache as kcache
    src = _pristine(backend_name, tmp_path_factory)
    root = str(tmp_path / "kc")
    shutil.copytree(src, root)                         # keeps the 0700 modes
    (entry,) = glob.glob(os.path.join(root, "kernels", "*"))
    _corrupt(os.path.join(entry, fname), mode)

    compiles = []
    if backend_name == "cuda":
        real = nvrtc.compile
        monkeypatch.setattr(nvrtc, "compile", lambda *a, **k: compiles.append(1) or real(*a, **k))
    else:
        real = nc.compile_ptx
        monkeypatch.setattr(nc, "compile_ptx", lambda *a, **k: compiles.append(1) or real(*a, **k))
    host = _p1_inputs()
    expected = make_p1(np)(*host)
    with _cache_env(root):
        for attempt in ("corrupt", "replaced"):
            _forget()
            kcache.reset_warnings()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                got = kfuse.jit(make_p1(np), backend=backend_name)(*[cp.asarray(a) for a in host])
            assert_matches_numpy(cp.asnumpy(got), expected)
            warned = [str(w.message) for w in caught if issubclass(w.category, kcache.CacheWarning)]
            if attempt == "corrupt":                   # a miss: one warning, one compile
                assert len(warned) == 1 and "bad entry" in warned[0], warned
                assert len(compiles) == 1
            else:                                      # the recompile replaced it: a clean load
                assert warned == [] and len(compiles) == 1, (warned, compiles)
    store = kcache.CacheStore.open(path=root)
    infos = list(store.entries("kernels", verify=True))
    assert len(infos) == 1 and infos[0].error is None
