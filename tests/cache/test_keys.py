"""Keys: canonical hashing, and every key component flipped gives a miss."""
import copy
import enum

import numpy as np
import pytest

from kfuse.runtime import keys


def base_key():
    return keys.build_kernel_key(
        graph_hash="g" * 64,
        signature=[["array", "float32", 2, [False, False], "C"], ["array", "float32", 1, [True], "C"]],
        backend="cuda", arch="sm_90", tile={"threads": 256, "vec": 4},
        compile_options=["-O3"], knobs={"fast_math": False})


def test_kfuse_version_is_pyprojects():
    import os
    import re

    import kfuse
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "pyproject.toml")) as f:
        (version,) = re.findall(r'(?m)^version = "([^"]+)"', f.read())
    assert keys.kfuse_version() == kfuse.__version__ == version


def test_hash_is_canonical_and_stable():
    a = {"b": (1, 2), "a": np.dtype("float32"), "c": {2, 1}}
    b = {"c": {1, 2}, "a": np.float32, "b": [1, 2]}
    assert keys.key_hash(a) == keys.key_hash(b)
    assert len(keys.key_hash(a)) == 64
    assert keys.key_hash({"x": 1}) != keys.key_hash({"x": 1.5})


def test_unhashable_objects_refused():
    with pytest.raises(TypeError):
        keys.canonical_json({"x": object()})


def test_key_has_versions_and_codegen_hash():
    k = base_key()
    assert k["kfuse"] and len(k["codegen"]) == 64
    assert k["toolchain"]["nvrtc"] == keys.nvrtc_version()
    cpu = keys.build_kernel_key(graph_hash="g", signature=[], backend="cpu")
    assert cpu["toolchain"]["numba"] and cpu["toolchain"]["llvmlite"]


FLIPS = {
    "graph": lambda k: k.__setitem__("graph", "h" * 64),
    "dtype": lambda k: k["signature"][0].__setitem__(1, "float64"),
    "rank": lambda k: k["signature"][0].__setitem__(2, 3),
    "broadcast": lambda k: k["signature"][1].__setitem__(3, [False]),
    "contiguity": lambda k: k["signature"][0].__setitem__(4, "A"),
    "tile": lambda k: k["tile"].__setitem__("threads", 128),
    "backend": lambda k: k.__setitem__("backend", "numba-cuda"),
    "arch": lambda k: k.__setitem__("arch", "sm_80"),
    "compile_options": lambda k: k.__setitem__("compile_options", ["-O2"]),
    "knobs": lambda k: k["knobs"].__setitem__("fast_math", True),
    "kfuse_version": lambda k: k.__setitem__("kfuse", "9.9.9"),
    "codegen_hash": lambda k: k.__setitem__("codegen", "0" * 64),
    "nvrtc": lambda k: k["toolchain"].__setitem__("nvrtc", "12.0"),
    "numpy": lambda k: k["toolchain"].__setitem__("numpy", "1.0"),
    "driver": lambda k: k["toolchain"].__setitem__("driver", 12000),
}


@pytest.mark.parametrize("component", sorted(FLIPS))
def test_each_component_flipped_is_a_miss(store, component):
    k = base_key()
    store.put("kernels", k, {"kernel.cu": b"src"}, {"function": "f"})
    assert store.get("kernels", k) is not None
    k2 = copy.deepcopy(k)
    FLIPS[component](k2)
    assert k2 != k
    assert store.get("kernels", k2) is None


def test_cpu_toolchain_components(store):
    k = keys.build_kernel_key(graph_hash="g", signature=[], backend="cpu", arch="x")
    store.put("kernels", k, {"a": b"1"})
    for field in ("numba", "llvmlite", "python"):
        k2 = copy.deepcopy(k)
        k2["toolchain"][field] = "0.0"
        assert store.get("kernels", k2) is None
    assert store.get("kernels", k) is not None


def test_codegen_hash_follows_sources(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    h1 = keys._hash_dir_sources(str(tmp_path))
    keys._hash_dir_sources.cache_clear()
    (tmp_path / "a.py").write_text("x = 2\n")
    h2 = keys._hash_dir_sources(str(tmp_path))
    keys._hash_dir_sources.cache_clear()
    assert h1 != h2


def test_shape_bucket():
    assert keys.shape_bucket((1, 3, 4, 1000, 0)) == [1, 4, 4, 1024, 0]


def test_enum_and_dataclass_keys():
    import dataclasses

    class E(enum.Enum):
        A = 1

    @dataclasses.dataclass(frozen=True)
    class Tile:
        bm: int
        bn: int

    assert keys.key_hash({"t": Tile(64, 128), "e": E.A}) != keys.key_hash({"t": Tile(64, 64), "e": E.A})


def _imported_kfuse_modules(path, module: str) -> set:
    """The kfuse modules a source file imports values from (top-level and function-local imports;
    ``from ..fusion import cost`` is ``kfuse.fusion.cost``, not the package's ``__init__``)."""
    import ast
    import os
    pkg = keys._PKG_DIR

    def exists(name):
        rel = name.split(".")[1:]
        return name.split(".")[0] == "kfuse" and bool(rel) and (
            os.path.exists(os.path.join(pkg, *rel) + ".py") or os.path.isdir(os.path.join(pkg, *rel)))
    parts = module.split(".")
    here = parts if path.endswith("__init__.py") else parts[:-1]
    out = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else [])) if node.level else (node.module or "")
            for a in node.names:
                sub = name + "." + a.name
                out.add(sub if exists(sub) else name)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {n for n in out if exists(n)}


def test_emitter_deps_are_what_the_code_generators_import():
    """Every kfuse module outside codegen/ that the code generators import, directly or through
    each other, is hashed with them for the index of rendered kernels (runtime.rendered): a
    module missing from ``keys.EMITTER_DEPS`` could change a rendered kernel unseen."""
    import os
    pkg = keys._PKG_DIR

    def path_of(mod):
        rel = os.path.join(pkg, *mod.split(".")[1:])
        return os.path.join(rel, "__init__.py") if os.path.isdir(rel) else rel + ".py"

    todo = ["kfuse.codegen." + f[:-3] for f in os.listdir(os.path.join(pkg, "codegen")) if f.endswith(".py")]
    seen = set()
    while todo:
        mod = todo.pop()
        if mod not in seen:
            seen.add(mod)
            todo += _imported_kfuse_modules(path_of(mod), mod)
    outside = {m for m in seen if not m.startswith("kfuse.codegen") and m != "kfuse"}
    files = {os.path.relpath(path_of(m), pkg)[:-3] for m in outside}
    assert files == set(keys.EMITTER_DEPS)


def test_emitter_hash_follows_codegen_and_its_deps():
    h = keys.emitter_hash()
    assert h != keys.codegen_hash() and len(h) == 64


def _code_tree(root):
    """A copy of the sources the code hashes read (kfuse/codegen and EMITTER_DEPS) under root."""
    import os
    import shutil
    pkg = keys._PKG_DIR
    shutil.copytree(os.path.join(pkg, "codegen"), root / "codegen",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for rel in keys.EMITTER_DEPS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(pkg, rel + ".py"), str(root / rel) + ".py")
    return root


def test_code_hashes_are_read_back_under_the_files_stat(tmp_path, monkeypatch):
    """The code hashes' record (keys.code_hashes) answers for the same files only: a rewrite of
    the same size, a replaced file (another inode) and an added file are each a new key, hashed
    again; the record's hashes are the sources' own."""
    import os
    from kfuse.runtime.cache import CacheStore
    store = CacheStore.open(path=str(tmp_path / "c"))
    root = _code_tree(tmp_path / "kfuse")
    first = keys.code_hashes(store, str(root))
    assert first["codegen"] == keys._hash_dir_sources.__wrapped__(str(root / "codegen"))
    assert first["codegen"] == keys.codegen_hash()           # (a copy of this checkout's sources)
    assert first["emitter"] == keys.emitter_hash()

    def hashed(*a):
        raise AssertionError("hashed the sources where the record answers")
    with monkeypatch.context() as m:
        m.setattr(keys, "_emitter_hash_of", hashed)
        assert keys.code_hashes(store, str(root)) == first   # the same files: read, not hashed

    f = root / "codegen" / "cuda_ops.py"
    text, st = f.read_text(), f.stat()
    f.write_text(text.replace("(", "[", 1))                  # same size, same inode, other text
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    changed = keys.code_hashes(store, str(root))
    assert changed["codegen"] != first["codegen"] and changed["emitter"] != first["emitter"]

    g = root / "ir" / "ops.py"
    st = g.stat()
    g2 = root / "ir" / "ops.new"
    g2.write_text(g.read_text().replace("(", "[", 1))
    os.utime(g2, ns=(st.st_atime_ns, st.st_mtime_ns))       # same size and mtime, new inode
    os.replace(g2, g)
    replaced = keys.code_hashes(store, str(root))
    assert replaced["codegen"] == changed["codegen"] and replaced["emitter"] != changed["emitter"]

    (root / "codegen" / "zz_new.py").write_text("x = 1\n")
    added = keys.code_hashes(store, str(root))
    assert added["codegen"] != replaced["codegen"]
    assert added["codegen"] == keys._hash_dir_sources.__wrapped__(str(root / "codegen"))
