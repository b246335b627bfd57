"""Cache keys: what makes two compiled kernels interchangeable, and how a key is hashed.

A key is a plain dict of JSON-able values (str, int, float, bool, None, lists, dicts; tuples,
sets, enums, dataclasses and NumPy dtypes are normalised). :func:`key_hash` is the sha256 of its
canonical JSON form; it names the entry's folder in the disk store. :func:`build_kernel_key`
adds everything outside the caller's knowledge that changes generated or compiled code:
the kfuse version, a hash of the code generators' sources, and the toolchain versions.
No ``repr()`` fallback: an object that cannot be written canonically is a ``TypeError``,
because a repr holding a memory address would make a key that never hits.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import os
import platform
import sys
from typing import Any, Iterable

# kfuse's version (pyproject's; kfuse.__version__ is this): read here rather than from the installed
# package's metadata, whose importlib.metadata lookup cost ~9 ms of every warm GPU first call.
KFUSE_VERSION = "0.1.0"
KEY_FORMAT = 1           # bump when the meaning of a key field changes

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------------------------
# canonical form and hashing
# ---------------------------------------------------------------------------------------------
def _norm(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return repr(v)                   # JSON has no NaN/Inf: spell them
        return v
    if isinstance(v, enum.Enum):
        return f"{type(v).__name__}.{v.name}"
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if not isinstance(k, str):
                k = json.dumps(_norm(k), sort_keys=True, separators=(",", ":"))
            out[k] = _norm(x)
        return out
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted((_norm(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {"__type__": type(v).__name__,
                **{f.name: _norm(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    mod = type(v).__module__ or ""
    if mod.startswith("numpy"):
        import numpy as np
        if isinstance(v, np.dtype):
            return v.str if v.names is None else str(v.descr)
        if isinstance(v, type) and issubclass(v, np.generic):
            return np.dtype(v).str
        if isinstance(v, np.generic):
            return _norm(v.item())
    if isinstance(v, type):
        try:
            import numpy as np
            if issubclass(v, np.generic):
                return np.dtype(v).str
        except Exception:   # pragma: no cover
            pass
    if isinstance(v, bytes):
        return "bytes:" + hashlib.sha256(v).hexdigest()
    raise TypeError(f"kfuse cache key: cannot canonicalise {type(v).__name__} value {v!r}")


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text of ``obj`` (sorted keys, no spaces, ASCII)."""
    return json.dumps(_norm(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def key_hash(key_dict: dict) -> str:
    """sha256 (64 hex digits) of the canonical JSON of a key dict."""
    return hashlib.sha256(canonical_json(key_dict).encode("ascii")).hexdigest()


def normalise_key(key_dict: dict) -> dict:
    """The key as it is stored in ``meta.json`` (what :func:`key_hash` hashes)."""
    return json.loads(canonical_json(key_dict))


# ---------------------------------------------------------------------------------------------
# versions
# ---------------------------------------------------------------------------------------------
def kfuse_version() -> str:
    return KFUSE_VERSION


@functools.lru_cache(maxsize=None)
def _hash_dir_sources(folder: str) -> str:
    h = hashlib.sha256()
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".py"))
    except OSError:
        names = []
    for n in names:
        with open(os.path.join(folder, n), "rb") as f:
            data = f.read()
        h.update(n.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


# The kfuse modules outside codegen/ that the code generators import, directly or through each
# other (tests/cache/test_keys.py checks the list against their imports): their code can change
# what is rendered too, so the index of rendered kernels (runtime.rendered) hashes them.
EMITTER_DEPS = ("config", "errors", "records", "ir/dtypes", "ir/graph", "ir/ops", "ir/philox",
                "ir/power", "fusion/aliasing", "fusion/attention", "fusion/cost", "fusion/cpu_cost",
                "fusion/cpu_machine", "fusion/dag", "fusion/explain", "fusion/gemm_int8",
                "fusion/gemm_registers", "fusion/gpu_chunks", "fusion/kinds", "fusion/legality",
                "fusion/plan", "fusion/reduction", "fusion/row_phases", "fusion/rules")
# The code hashes of this process, "codegen" and "emitter": computed (or read, emitter_hash) once.
_CODE_HASHES: dict = {}
CODE_HASH_FORMAT = 1
CODE_HASH_RECORD = "code_hash.json"   # (a name no kernel entry uses)


def codegen_hash() -> str:
    """Hash of ``kfuse/codegen/*.py`` (computed once per process, on first use, unless
    :func:`emitter_hash` read it from the store first)."""
    h = _CODE_HASHES.get("codegen")
    if h is None:
        h = _CODE_HASHES["codegen"] = _hash_dir_sources(os.path.join(_PKG_DIR, "codegen"))
    return h


def emitter_hash(store=None) -> str:
    """Hash of the code that renders a kernel: :func:`codegen_hash` and :data:`EMITTER_DEPS`'
    sources (once per process). With ``store`` (a ``runtime.cache.KernelStore``) the two hashes
    are read from its ``host`` namespace where a record of them is filed under every hashed
    file's size, mtime_ns, ctime_ns, inode and device (:func:`code_stat_key`), else computed
    (reading ~1 MB of source: ~1.4 ms) and filed there. A file rewritten, replaced, added or
    removed is a new key. Not content-addressed: an in-place rewrite to the same size within one
    timestamp tick would keep the key, but Python's own check for reusing a module's ``.pyc``
    (the source's size and mtime in whole seconds) misses it too, so the old code is then what
    runs as well."""
    h = _CODE_HASHES.get("emitter")
    if h is not None:
        return h
    if store is None:
        found = {"codegen": codegen_hash(), "emitter": _emitter_hash_of(_PKG_DIR, codegen_hash())}
    else:
        found = code_hashes(store, _PKG_DIR)
    _CODE_HASHES.setdefault("codegen", found["codegen"])
    return _CODE_HASHES.setdefault("emitter", found["emitter"])


def code_hashes(store, root: str) -> dict:
    """``{"codegen": ..., "emitter": ...}`` of the sources under ``root`` (``kfuse/``): read from
    the record in ``store`` keyed by :func:`code_stat_key`, else hashed and filed there."""
    # The stat key is taken before any source is read, so a file changed after it makes a new
    # key, never a record of the old stat with the new text's hash or the reverse.
    key = code_stat_key(root)
    found = None if key is None else _read_code_hashes(store, key)
    if found is None:
        codegen = _hash_dir_sources.__wrapped__(os.path.join(root, "codegen"))
        found = {"codegen": codegen, "emitter": _emitter_hash_of(root, codegen)}
        if key is not None:
            _save_code_hashes(store, key, found)
    return found


def _emitter_hash_of(root: str, codegen: str) -> str:
    h = hashlib.sha256(codegen.encode())
    for rel in EMITTER_DEPS:
        with open(os.path.join(root, rel + ".py"), "rb") as f:
            data = f.read()
        h.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


def code_stat_key(root: str = _PKG_DIR) -> dict | None:
    """The store key of the code hashes of the sources under ``root`` (``kfuse/``): a digest of
    the name, size, mtime_ns, ctime_ns, inode and device of ``codegen/*.py`` and of
    :data:`EMITTER_DEPS`' files (one digest, not the rows: the key is normalised and hashed on
    every read), or None where one cannot be read."""
    h = hashlib.sha256()
    try:
        names = ["codegen/" + n for n in sorted(os.listdir(os.path.join(root, "codegen")))
                 if n.endswith(".py")]
        for rel in names + [d + ".py" for d in EMITTER_DEPS]:
            st = os.stat(os.path.join(root, rel))
            h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\0"
                     f"{st.st_dev}\n".encode())
    except OSError:
        return None
    return {"code-hash": CODE_HASH_FORMAT, "kfuse": KFUSE_VERSION, "root": os.path.realpath(root),
            "stat": h.hexdigest()}


def _read_code_hashes(store, key: dict) -> dict | None:
    try:
        entry = store.get("host", key)
        if entry is None:
            return None
        found = json.loads(entry.read(CODE_HASH_RECORD))
        if all(isinstance(found.get(k), str) and len(found[k]) == 64 and
               all(c in "0123456789abcdef" for c in found[k]) for k in ("codegen", "emitter")):
            return {"codegen": found["codegen"], "emitter": found["emitter"]}
    except Exception:                   # noqa: BLE001 - a bad record: hash the sources
        pass
    return None


def _save_code_hashes(store, key: dict, found: dict) -> None:
    try:
        store.put("host", key, {CODE_HASH_RECORD: json.dumps(found).encode()},
                  {"kind": "code-hash", "backend": "cuda", "arch": None})
    except Exception:                   # noqa: BLE001 - the store is best effort
        pass


@functools.lru_cache(maxsize=None)
def _module_version(name: str) -> str | None:
    if name in _UNIMPORTED and name not in sys.modules:     # (a warm CPU call runs without them)
        return dist_version(name)
    try:
        mod = __import__(name)
        return str(getattr(mod, "__version__", None))
    except Exception:
        return None


_UNIMPORTED = ("numba", "llvmlite")       # versions read without importing the package


@functools.lru_cache(maxsize=None)
def dist_version(name: str) -> str | None:
    """The installed version of package ``name`` from its ``dist-info`` folder's name, without
    importing it (nor ``importlib.metadata``, which costs milliseconds); None where not found."""
    import importlib.util
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    site = os.path.dirname(list(spec.submodule_search_locations)[0])
    prefix = name + "-"
    try:
        found = [n for n in os.listdir(site) if n.startswith(prefix) and n.endswith(".dist-info")]
    except OSError:
        return None
    return found[0][len(prefix):-len(".dist-info")] if len(found) == 1 else None


@functools.lru_cache(maxsize=None)
def nvrtc_version() -> str | None:
    """``"13.5"``: the NVRTC library's version, or None when there is none, asked from the library
    (loading it: ~6 ms; the CUDA C runtime's keys read it without, ``runtime.nvrtc_lib``). Asked
    through CuPy's binding where CuPy is installed (the GPU path imports it anyway): importing
    ``cuda.bindings.nvrtc`` costs 30 ms more, most of a warm-cache first call's key (both load
    the same ``libnvrtc``; the compiler itself is ``cuda.bindings``', imported when it compiles)."""
    try:
        from cupy_backends.cuda.libs import nvrtc as cupy_nvrtc
        major, minor = cupy_nvrtc.getVersion()
        return f"{int(major)}.{int(minor)}"
    except Exception:
        pass
    try:
        from cuda.bindings import nvrtc
        res = nvrtc.nvrtcVersion()
        return f"{int(res[1])}.{int(res[2])}"
    except Exception:
        return None


@functools.lru_cache(maxsize=None)
def driver_version() -> int | None:
    """The CUDA driver version (e.g. 13000), or None when no driver is present."""
    try:
        from cuda.bindings import driver
        err, v = driver.cuDriverGetVersion()
        return int(v) if int(err) == 0 else None
    except Exception:
        return None


# Numba's settings that change machine code, as _numba_code_knobs reads them where no NUMBA_*
# variable is set (tests/runtime/test_cpu_native.py checks it against Numba's own).
NUMBA_DEFAULT_KNOBS = {"opt": "_OptLevel(3)", "cpu_name": None, "cpu_features": None,
                       "boundscheck": None, "fastmath": False}


def _numba_code_knobs() -> dict:
    """Numba settings (from NUMBA_* env vars, read by numba itself) that change machine code:
    its defaults, without importing Numba, where it is not imported and no NUMBA_* is set."""
    if "numba" not in sys.modules and not _numba_env():
        return dict(NUMBA_DEFAULT_KNOBS)
    try:
        from numba.core import config as nc
    except Exception:
        return {}
    return {"opt": str(getattr(nc, "OPT", None)), "cpu_name": getattr(nc, "CPU_NAME", None),
            "cpu_features": getattr(nc, "CPU_FEATURES", None),
            "boundscheck": getattr(nc, "BOUNDSCHECK", None),
            "fastmath": bool(getattr(nc, "FASTMATH", False))}


def _numba_env() -> tuple:
    import importlib
    return importlib.import_module("kfuse.config").get().numba_env


TOOLS = ("numba", "nvrtc", "numba_cuda")      # compilers a backend may name (``Backend.tools``)


def toolchain_versions(tools: Iterable[str] = TOOLS, *, include_driver: bool = False,
                       known: dict | None = None) -> dict:
    """Versions of the Python, NumPy and machine, and of each compiler in ``tools`` (a backend's
    ``Backend.tools``: "numba" adds Numba, llvmlite and the Numba knobs that change machine
    code, "nvrtc" NVRTC, "numba_cuda" the numba-cuda package). Default: every compiler.
    ``known``: versions found already (``{"nvrtc": runtime.nvrtc_lib.version()}``, read without
    loading the library), used instead of asking."""
    if isinstance(tools, str):
        raise TypeError("toolchain_versions takes a collection of tool names, not a string")
    tools = set(tools)
    unknown = tools - set(TOOLS)
    if unknown:
        raise ValueError(f"unknown toolchain components {sorted(unknown)}; known: {TOOLS}")
    out: dict[str, Any] = {"python": "%d.%d" % sys.version_info[:2],
                           "machine": platform.machine(),
                           "numpy": _module_version("numpy")}
    if "numba" in tools:
        out["numba"] = _module_version("numba")
        out["llvmlite"] = _module_version("llvmlite")
        out["numba_knobs"] = _numba_code_knobs()
    if "nvrtc" in tools:
        out["nvrtc"] = known["nvrtc"] if known and "nvrtc" in known else nvrtc_version()
    if "numba_cuda" in tools:
        try:
            from importlib.metadata import version
            out["numba_cuda"] = version("numba-cuda")
        except Exception:
            out["numba_cuda"] = None
    if include_driver:
        out["driver"] = driver_version()
    return out


# ---------------------------------------------------------------------------------------------
# key builders
# ---------------------------------------------------------------------------------------------
def graph_hash(graph) -> str:
    """sha256 of a graph's printed form (ops, attrs, dtypes, shapes, outputs) and out_tree."""
    text = graph.as_text() + "\nout_tree=" + canonical_json(graph.out_tree)
    return hashlib.sha256(text.encode()).hexdigest()


def shape_bucket(shape: Iterable[int]) -> list[int]:
    """Each dim rounded up to a power of two (0 stays 0): tuning results are keyed by this."""
    return [0 if int(d) <= 0 else 1 << (int(d) - 1).bit_length() for d in shape]


def build_kernel_key(*, graph_hash: str, signature: Any, backend: str, arch: str | None = None,
                     tile: Any = None, compile_options: Any = None, knobs: Any = None,
                     include_driver: bool = False, extra: dict | None = None,
                     tools: Iterable[str] = TOOLS, known: dict | None = None) -> dict:
    """The complete key of one compiled kernel (or program).

    ``signature``: per argument kind/dtype/rank/broadcast pattern/contiguity class (no sizes);
    ``tile``: the TileConfig (dataclass or dict); ``arch``: e.g. "sm_90" or the CPU name;
    ``compile_options``: flags given to the compiler; ``knobs``: config values that change code;
    ``include_driver``: add the driver version (when PTX is JIT-compiled by the driver);
    ``tools``: the compilers whose versions the key holds (the backend's ``Backend.tools``;
    default every one, which never makes two different toolchains' kernels one key);
    ``known``: versions found already (:func:`toolchain_versions`).
    """
    key = {
        "format": KEY_FORMAT,
        "kfuse": kfuse_version(),
        "codegen": codegen_hash(),
        "graph": graph_hash,
        "signature": signature,
        "backend": backend,
        "arch": arch,
        "tile": tile,
        "compile_options": compile_options,
        "knobs": knobs,
        "toolchain": toolchain_versions(tools, include_driver=include_driver, known=known),
    }
    if extra:
        key.update(extra)
    return normalise_key(key)


def tuning_key(kernel_key: dict | str, shape_bucket_: Iterable[int], arch: str | None) -> dict:
    """Key of a tuning result: the kernel (key dict or its hash), the shape bucket, the arch."""
    k = kernel_key if isinstance(kernel_key, str) else key_hash(kernel_key)
    return {"format": KEY_FORMAT, "kernel": k, "shape_bucket": [int(d) for d in shape_bucket_],
            "arch": arch}
