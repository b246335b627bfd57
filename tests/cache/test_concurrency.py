"""Many processes writing one fresh cache dir; SIGKILL mid-write leaves nothing a reader accepts."""
import hashlib
import multiprocessing as mp
import os
import signal
import time

import pytest

from kfuse.runtime.cache import CacheStore, read_entry

PROCS, ROUNDS = 16, 50


def fake_compile(key):
    """A cheap deterministic 'compiler': stage files derived from the key."""
    seed = hashlib.sha256(repr(sorted(key.items())).encode()).digest()
    return {"kernel.py": b"# " + seed.hex().encode(), "object.o": seed * (64 + seed[0])}


def worker(root, wid, q):
    try:
        store = CacheStore(root, max_bytes=None)
        bad = 0
        for r in range(ROUNDS):
            for key in ({"shared": r % 7}, {"own": wid, "r": r % 5}):
                e = store.get("kernels", key)
                files = fake_compile(key)
                if e is None:
                    e = store.put("kernels", key, files, {"function": "f%d" % wid, "backend": "cpu"})
                got = {n: e.read(n) for n in files}
                bad += got != files
        q.put(("ok", wid, bad))
    except BaseException as ex:   # report, don't hang the parent
        q.put(("error", wid, repr(ex)))


def test_16_processes_50_rounds(tmp_path):
    store = CacheStore.open(path=str(tmp_path / "c"))
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    ps = [ctx.Process(target=worker, args=(store.root, i, q)) for i in range(PROCS)]
    t0 = time.time()
    for p in ps:
        p.start()
    results = [q.get(timeout=120) for _ in ps]
    for p in ps:
        p.join(30)
    assert all(r[0] == "ok" and r[2] == 0 for r in results), results
    infos = list(store.entries(verify=True))
    assert [i for i in infos if i.error] == []
    assert len(infos) == 7 + PROCS * 5
    assert os.listdir(os.path.join(store.root, "tmp")) == []
    assert time.time() - t0 < 60


def slow_writer(root):
    store = CacheStore(root, max_bytes=None)
    i = 0
    real_open = open

    class SlowFile:
        def __init__(self, f):
            self.f = f

        def write(self, data):
            for k in range(0, len(data), 4096):
                self.f.write(data[k:k + 4096])
                self.f.flush()
                time.sleep(0.0005)

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.f.close()

    import builtins
    builtins.open = lambda p, m="r", *a, **k: SlowFile(real_open(p, m, *a, **k)) if "w" in m else real_open(p, m, *a, **k)
    while True:
        store.put("kernels", {"n": i}, {"object.o": os.urandom(1 << 17), "kernel.py": b"x" * 5000})
        i += 1


@pytest.mark.parametrize("delay", [0.01, 0.05, 0.13, 0.31])
def test_sigkill_while_writing(tmp_path, delay):
    store = CacheStore.open(path=str(tmp_path / "c"))
    ctx = mp.get_context("fork")
    p = ctx.Process(target=slow_writer, args=(store.root,))
    p.start()
    time.sleep(delay)
    os.kill(p.pid, signal.SIGKILL)
    p.join(10)
    # a writer was interrupted: its temp dir may remain, but no published entry is bad
    kdir = os.path.join(store.root, "kernels")
    for name in os.listdir(kdir):
        read_entry(os.path.join(kdir, name), name)      # raises on a bad entry
    assert all(i.error is None for i in store.entries(verify=True))
    # the key being written when killed is a clean miss, then a put works
    n = len(os.listdir(kdir))
    assert store.get("kernels", {"n": n}) is None
    assert store.put("kernels", {"n": n}, {"a": b"1"}) is not None
    assert store.get("kernels", {"n": n}).read("a") == b"1"
