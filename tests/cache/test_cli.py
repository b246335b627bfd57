"""``kfuse cache`` subcommands through ``cache_cli.run(args)``."""
import argparse
import io
import json
import os
import tarfile
import time

import pytest

from kfuse import cache_cli
from kfuse.runtime.cache import CacheStore


def cli(*argv, cache_dir=None):
    parser = argparse.ArgumentParser(prog="kfuse")
    sub = parser.add_subparsers(dest="command")
    cache_cli.add_subparser(sub)
    pre = ["cache"] + (["--cache-dir", cache_dir] if cache_dir else [])
    args = parser.parse_args(pre + list(argv))
    out = io.StringIO()
    rc = cache_cli.run(args, out=out)
    return rc, out.getvalue()


@pytest.fixture
def filled(store):
    for i, (fn, backend) in enumerate([("layernorm", "cpu"), ("gelu", "cpu"), ("softmax", "cuda")]):
        store.put("kernels", {"fn": fn, "i": i}, {"kernel.py": f"# {fn}\n".encode(), "object.o": bytes(100 * (i + 1))},
                  {"function": fn, "kind": "test", "backend": backend, "arch": "sm_90" if backend == "cuda" else "x86"})
    store.put_tuning({"fn": "softmax"}, [1024, 1024], "sm_90", {"threads": 256}, {"256": 1e-5},
                     meta={"function": "softmax"})
    return store


def test_ls_and_tuning(filled):
    rc, out = cli("ls")
    assert rc == 0
    lines = out.strip().splitlines()
    assert lines[0].split() == ["key", "function", "signature", "backend", "device", "kind", "arch", "size",
                                "last", "used"]
    assert len(lines) == 4 and any("softmax" in l and "cuda" in l and "sm_90" in l for l in lines)
    rc, out = cli("ls", "--tuning")
    assert rc == 0 and "1024x1024" in out and '"threads": 256' in out


def test_ls_names_the_users_function(cache_dir):
    """A jitted call's kernel entries name the user's function (module:qualname), its argument
    signature, the backend, the device and the kernel kind; ``ls --function`` filters by it."""
    import numpy as np

    import kfuse

    @kfuse.jit
    def row_total(x):
        return (x * 2).sum(axis=1)
    row_total(np.ones((4, 8), np.float32))
    rc, out = cli("ls")
    assert rc == 0
    rows = [l for l in out.splitlines()[1:] if l.strip()]
    assert rows, out
    want = f"{__name__}:test_ls_names_the_users_function.<locals>.row_total"
    for row in rows:
        assert want in row and "x: f32[4,8]" in row and " cpu " in row and " reduce " in row, out
        assert "kfuse_kernel" not in row, out
    for name in ("row_total", want, "test_ls_names_the_users_function.<locals>.row_total"):
        rc, out = cli("ls", "--function", name)
        assert len(out.strip().splitlines()) == 1 + len(rows), out
    rc, out = cli("ls", "--function", "other")
    assert rc == 0 and len(out.strip().splitlines()) == 1, out


def test_show(filled):
    e = next(i for i in filled.entries("kernels") if i.meta["function"] == "gelu")
    rc, out = cli("show", e.key_hash[:10])
    assert rc == 0 and e.path in out and os.path.join(e.path, "kernel.py") in out
    assert '"function": "gelu"' in out
    rc, _ = cli("show", "ffffffffffffffff")
    assert rc == 2


def test_stats(filled):
    rc, out = cli("stats")
    assert rc == 0 and "entries:   4" in out
    assert "backend cpu" in out and "backend cuda" in out


def test_verify_and_fix(filled):
    assert cli("verify")[0] == 0
    e = next(filled.entries("kernels"))
    open(os.path.join(e.path, "object.o"), "ab").write(b"junk")
    rc, out = cli("verify")
    assert rc == 1 and e.key_hash in out and "1 bad" in out
    rc, out = cli("verify", "--fix")
    assert rc == 1 and "removed" in out
    assert not os.path.exists(e.path)
    assert cli("verify")[0] == 0


def test_clear_filters(filled):
    old = next(i for i in filled.entries("kernels") if i.meta["function"] == "layernorm")
    t = time.time() - 40 * 86400
    os.utime(os.path.join(old.path, "last_used"), (t, t))
    rc, out = cli("clear", "--older-than", "30d")
    assert rc == 0 and "removed 1" in out and not os.path.exists(old.path)
    rc, out = cli("clear", "--function", "gelu")
    assert "removed 1" in out
    assert {i.meta["function"] for i in filled.entries()} == {"softmax"}
    assert cli("clear", "--older-than", "bogus")[0] == 2
    rc, out = cli("clear")
    assert "removed 2" in out and list(filled.entries()) == []


def test_export_import_round_trip(filled, tmp_path):
    tgz = str(tmp_path / "k.tar.gz")
    assert cli("export", tgz)[0] == 0
    other = str(tmp_path / "other")
    rc, out = cli("import", tgz, cache_dir=other)
    assert rc == 0 and "imported 4" in out
    s2 = CacheStore.open(path=other)
    a = {(i.namespace, i.key_hash) for i in filled.entries()}
    b = {(i.namespace, i.key_hash) for i in s2.entries(verify=True) if i.error is None}
    assert a == b
    e = s2.get("kernels", {"fn": "gelu", "i": 1})
    assert e.read("object.o") == bytes(200) and e.meta["function"] == "gelu"
    assert s2.get_tuning({"fn": "softmax"}, [1024, 1024], "sm_90")["config"] == {"threads": 256}


def _tar(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            if kind == "sym":
                info.type = tarfile.SYMTYPE
                info.linkname = data
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize("members", [
    [("../evil.py", b"x", "file")],
    [("kernels/" + "a" * 64 + "/../../evil", b"x", "file")],
    [("/etc/passwd", b"x", "file")],
    [("kernels/" + "a" * 64 + "/object.o", "/etc/passwd", "sym")],
    [("kernels/notahash/meta.json", b"{}", "file")],
])
def test_import_rejects_unsafe_archives(store, tmp_path, members):
    tgz = str(tmp_path / "bad.tar.gz")
    _tar(tgz, members)
    rc, out = cli("import", tgz)
    assert rc == 1 and "rejected" in out
    assert list(store.entries()) == []
    assert not os.path.exists(tmp_path / "evil.py")


def test_import_verifies_entries(filled, tmp_path):
    tgz = str(tmp_path / "k.tar.gz")
    cli("export", tgz)
    # tamper with one file inside the archive
    bad = str(tmp_path / "t.tar.gz")
    with tarfile.open(tgz) as src, tarfile.open(bad, "w:gz") as dst:
        tampered = False
        for m in src.getmembers():
            data = src.extractfile(m).read()
            if m.name.endswith("object.o") and not tampered:
                data = b"\x90" * len(data)
                tampered = True
            m.size = len(data)
            dst.addfile(m, io.BytesIO(data))
    other = str(tmp_path / "o")
    rc, out = cli("import", bad, cache_dir=other)
    assert rc == 1 and "BAD" in out and "imported 3" in out
    assert cli("verify", cache_dir=other)[0] == 0


def test_unusable_dir_exit_code(tmp_path):
    d = tmp_path / "loose"
    d.mkdir()
    os.chmod(d, 0o777)
    with pytest.warns(Warning):
        assert cli("ls", cache_dir=str(d))[0] == 2


def test_parse_age():
    assert cache_cli.parse_age("30d") == 30 * 86400
    assert cache_cli.parse_age("12h") == 43200 and cache_cli.parse_age("2w") == 14 * 86400
    with pytest.raises(ValueError):
        cache_cli.parse_age("3 days")
