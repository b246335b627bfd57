"""The disk store: round trip, atomic publish, bad entries, permissions, LRU, tuning, recompiles."""
import json
import os
import stat
import time
import warnings

import pytest

from kfuse import config
from kfuse.runtime import cache as kcache
from kfuse.runtime.cache import CacheStore, CacheWarning, RecompileCounter

KEY = {"graph": "abc", "backend": "cpu"}
FILES = {"kernel.py": b"def k(x):\n    return x\n", "object.o": bytes(range(256)) * 40}


def compile_or_load(store, key=KEY):
    """The caller's pattern: a hit returns the stored bytes; a miss 'compiles' and stores."""
    e = store.get("kernels", key) if store else None
    if e is not None:
        return {n: e.read(n) for n in FILES}, "hit"
    if store:
        store.put("kernels", key, FILES, {"function": "k", "kind": "test", "backend": "cpu"})
    return dict(FILES), "miss"


def test_round_trip_and_layout(store, cache_dir):
    assert store.get("kernels", KEY) is None
    e = store.put("kernels", KEY, FILES, {"function": "k", "backend": "cpu"})
    assert e.path == os.path.join(cache_dir, "kernels", kcache.key_hash(KEY))
    assert stat.S_IMODE(os.stat(cache_dir).st_mode) == 0o700
    e2 = store.get("kernels", KEY)
    assert e2.read("object.o") == FILES["object.o"]
    meta = json.load(open(os.path.join(e.path, "meta.json")))
    assert meta["key"] == KEY and meta["function"] == "k"
    assert meta["files"]["object.o"]["size"] == len(FILES["object.o"])
    assert sorted(os.listdir(e.path)) == ["kernel.py", "last_used", "meta.json", "object.o"]
    assert os.listdir(os.path.join(cache_dir, "tmp")) == []


def test_no_pickle_in_store(store):
    import kfuse.runtime.cache as m1
    import kfuse.runtime.cpu_persist as m2
    import kfuse.runtime.keys as m3
    import kfuse.cache_cli as m4
    for mod in (m1, m2, m3, m4):
        src = open(mod.__file__).read()
        assert "import pickle" not in src and "cloudpickle" not in src


def test_bad_file_names_refused(store):
    for bad in ("../x", "meta.json", "a/b", "", ".hidden"):
        with pytest.raises(ValueError):
            store.put("kernels", KEY, {bad: b"x"})


def test_atomic_publish_loser_discards(store, cache_dir, monkeypatch):
    # While writer A is between writing its temp dir and renaming, the final name does not exist.
    seen = {}
    real_rename = os.rename

    def spy(src, dst):
        if dst.startswith(os.path.join(cache_dir, "kernels")):
            seen["before"] = os.path.exists(dst)
            seen["tmp_complete"] = sorted(os.listdir(src))
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", spy)
    store.put("kernels", KEY, FILES)
    assert seen == {"before": False, "tmp_complete": ["kernel.py", "last_used", "meta.json", "object.o"]}
    monkeypatch.setattr(os, "rename", real_rename)
    # A second writer with different bytes loses: the first entry stands, its temp dir is gone.
    e = store.put("kernels", KEY, {"kernel.py": b"other"})
    assert e.read("kernel.py") == FILES["kernel.py"]
    assert os.listdir(os.path.join(cache_dir, "tmp")) == []


def _corrupt(path, how):
    f = os.path.join(path, "object.o")
    if how == "truncated":
        data = open(f, "rb").read()
        open(f, "wb").write(data[: len(data) // 2])
    elif how == "zero-byte":
        open(f, "wb").close()
    elif how == "garbage":
        data = bytearray(open(f, "rb").read())
        data[100:110] = b"\xff" * 10
        open(f, "wb").write(bytes(data))
    elif how == "missing-file":
        os.remove(f)
    elif how == "meta-garbage":
        open(os.path.join(path, "meta.json"), "wb").write(b"\x00{not json")
    elif how == "meta-zero":
        open(os.path.join(path, "meta.json"), "wb").close()
    elif how == "meta-truncated":
        m = open(os.path.join(path, "meta.json"), "rb").read()
        open(os.path.join(path, "meta.json"), "wb").write(m[:40])
    elif how == "extra-file":
        open(os.path.join(path, "evil.so"), "wb").write(b"x")
    elif how == "wrong-key":
        m = json.load(open(os.path.join(path, "meta.json")))
        m["key"]["graph"] = "zzz"
        json.dump(m, open(os.path.join(path, "meta.json"), "w"))


@pytest.mark.parametrize("how", ["truncated", "zero-byte", "garbage", "missing-file", "meta-garbage",
                                 "meta-zero", "meta-truncated", "extra-file", "wrong-key"])
def test_bad_entry_is_miss_one_warning_then_replaced(store, how):
    e = store.put("kernels", KEY, FILES)
    _corrupt(e.path, how)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        files, status = compile_or_load(store)
        assert status == "miss" and files == FILES          # recompiled, correct result
        files, status = compile_or_load(store)
        assert status == "hit" and files == FILES           # the entry was replaced
    cw = [x for x in w if issubclass(x.category, CacheWarning)]
    assert len(cw) == 1, [str(x.message) for x in w]
    assert "bad entry" in str(cw[0].message)


def test_permissions_group_writable_refused(cache_dir):
    os.makedirs(cache_dir, mode=0o700)
    os.chmod(cache_dir, 0o777)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert CacheStore.open() is None
        assert CacheStore.open() is None
        files, status = compile_or_load(CacheStore.open())
    assert files == FILES and status == "miss"
    cw = [x for x in w if issubclass(x.category, CacheWarning)]
    assert len(cw) == 1 and "group/others" in str(cw[0].message)
    assert not os.path.exists(os.path.join(cache_dir, "kernels"))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_permissions_other_owner_refused(cache_dir):
    os.makedirs(cache_dir, mode=0o700)
    os.chown(cache_dir, 65534, 65534)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert CacheStore.open() is None
    assert len(w) == 1 and "another user" in str(w[0].message)


def test_read_only_dir_works_uncached(cache_dir):
    os.makedirs(cache_dir, mode=0o700)
    os.chmod(cache_dir, 0o500)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(3):
                files, status = compile_or_load(CacheStore.open())
                assert files == FILES and status == "miss"
        cw = [x for x in w if issubclass(x.category, CacheWarning)]
        assert len(cw) == 1 and "read-only" in str(cw[0].message)
    finally:
        os.chmod(cache_dir, 0o700)


def test_cache_disabled(cache_dir, monkeypatch):
    monkeypatch.setenv("KFUSE_CACHE", "0")
    config.reload()
    assert CacheStore.open() is None


def test_lru_eviction(store):
    store.max_bytes = None
    paths = []
    for i in range(6):
        e = store.put("kernels", {"i": i}, {"blob": bytes(1000)})
        os.utime(os.path.join(e.path, "last_used"), (1000 + i, 1000 + i))
        paths.append(e.path)
    store.get("kernels", {"i": 0})                   # 0 becomes most recently used
    one = paths[0] and sum(os.path.getsize(os.path.join(paths[1], n)) for n in os.listdir(paths[1]))
    removed = store.evict(max_bytes=4 * one + 10)
    assert sorted(removed) == sorted(paths[1:3])
    assert store.get("kernels", {"i": 0}) is not None
    assert store.get("kernels", {"i": 1}) is None and store.get("kernels", {"i": 3}) is not None


def test_lru_cap_applied_on_put(cache_dir, monkeypatch):
    monkeypatch.setenv("KFUSE_CACHE_MAX_BYTES", "5000")
    config.reload()
    store = CacheStore.open()
    for i in range(10):
        store.put("kernels", {"i": i}, {"blob": bytes(1000)})
        time.sleep(0.002)
    assert store.total_bytes() <= 5000
    assert store.get("kernels", {"i": 9}) is not None and store.get("kernels", {"i": 0}) is None


def test_tuning_namespace(store):
    kk = {"graph": "g", "backend": "cuda"}
    assert store.get_tuning(kk, [1024, 1024], "sm_90") is None
    store.put_tuning(kk, [1024, 1024], "sm_90", {"threads": 256}, {"256": 1.5e-5})
    assert store.get_tuning(kk, [1024, 1024], "sm_90") == {"config": {"threads": 256},
                                                          "timings": {"256": 1.5e-5}}
    assert store.get_tuning(kk, [2048, 1024], "sm_90") is None
    assert store.get_tuning(kk, [1024, 1024], "sm_80") is None
    store.put_tuning(kk, [1024, 1024], "sm_90", {"threads": 512}, None)   # newer result wins
    assert store.get_tuning(kk, [1024, 1024], "sm_90")["config"] == {"threads": 512}
    assert store.get("kernels", kk) is None


def test_recompile_counter_names_the_argument():
    """The counter phrases the warning once (past the limit) and issues none itself: the jitted
    function warns, once (tests/api/test_recompile_warning.py)."""
    rc = RecompileCounter(limit=3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        msgs = [rc.record("f", [("array", "float32", 2, (False, False)), ("array", dt, 1, (False,))],
                          arg_names=["x", "bias"])
                for dt in ["float32", "float64", "int32", "int64", "int8", "uint8"]]
    assert w == []
    said = [m for m in msgs if m]
    assert len(said) == 1 and msgs[3] == said[0]
    assert "'bias'" in said[0] and "compiled 4 times" in said[0]
    assert rc.count("f") == 6


def test_recompile_counter_default_limit(cache_dir, monkeypatch):
    monkeypatch.setenv("KFUSE_RECOMPILE_LIMIT", "2")
    config.reload()
    rc = RecompileCounter()
    assert rc.limit == 2
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert rc.record("g", [(1,)]) is None
        assert rc.record("g", [(2,)]) is None
        assert "#0" in rc.record("g", [(3,)])
        assert rc.record("g", [(4,)]) is None
    assert w == []
