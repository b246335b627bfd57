"""Issue 7's stress test with real compiles: 6 processes x 20 rounds of ``kfuse.jit`` calls
(one function shared by all processes, one of each process's own) into one fresh cache dir.
(16 x 50 before: each spawned process imports Numba and compiles its own kernel, minutes of a
2-core CI machine; 6 processes on 2 cores still race to compile and publish the shared kernel, and
``test_concurrency.py`` keeps 16 x 50 for the store itself.)
Each round forgets the in-process kernels, so every round goes through the disk store: a
compile-and-publish race at first, loads after. No exception, every result equal to NumPy's,
and ``kfuse cache verify`` clean."""
import multiprocessing as mp
import os

import numpy as np

PROCS, ROUNDS = 6, 20


def _work(cache_dir: str, wid: int, q) -> None:
    try:
        os.environ["KFUSE_CACHE_DIR"] = cache_dir
        os.environ["KFUSE_AUTOTUNE"] = "off"
        os.environ["NUMBA_NUM_THREADS"] = "1"
        from kfuse import config, jit
        from kfuse.runtime import cpu
        config.reload()
        scale = float(wid + 2)

        def shared(x, y):
            return np.sqrt((x * y + 1.0) ** 2).sum(axis=-1)

        def own(x):
            return x * scale - 1.0        # `scale` is a traced constant: one kernel per process

        rng = np.random.default_rng(wid)
        bad = 0
        for r in range(ROUNDS):
            cpu._COMPILED.clear()          # forget compiled kernels: go to the disk store
            x = rng.standard_normal((3 + r % 4, 17)).astype(np.float32)
            got = jit(shared)(x, x)
            bad += not np.allclose(got, np.sqrt((x * x + 1.0) ** 2).sum(axis=-1), rtol=1e-5)
            bad += not np.allclose(jit(own)(x), x * np.float32(scale) - 1.0, rtol=1e-6)
        q.put(("ok", wid, bad))
    except BaseException as e:   # report, don't hang the parent
        q.put(("error", wid, repr(e)))


def test_6_processes_20_rounds_real_kernels(tmp_path):
    root = str(tmp_path / "kc")
    ctx = mp.get_context("spawn")    # a clean interpreter per worker, as separate programs would be
    q = ctx.Queue()
    ps = [ctx.Process(target=_work, args=(root, i, q)) for i in range(PROCS)]
    for p in ps:
        p.start()
    results = [q.get(timeout=600) for _ in ps]
    for p in ps:
        p.join(60)
    assert all(r[0] == "ok" and r[2] == 0 for r in results), results

    from tests.cache.cli_helpers import verify_cli
    rc, text = verify_cli(root)
    assert rc == 0, text
    entries = [d for d in os.listdir(os.path.join(root, "kernels"))]
    assert len(entries) >= 1 + PROCS   # the shared kernel and one per process, stored once each
