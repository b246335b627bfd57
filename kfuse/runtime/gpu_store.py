"""Disk persistence of GPU kernels: compiled code as entries of the one kernel store.

The kernel store (``runtime.cache.KernelStore``: a :class:`~kfuse.runtime.cache.CacheStore`, or
one labelled for a function) is the one interface every runtime stores compiled kernels through:
the CPU runtime's Numba object code (``cpu_persist``), and here the CUDA C runtime's NVRTC result
(``kernel.cu``, ``kernel.ptx``, ``kernel.cubin``, ``nvrtc.json``) and the Numba-CUDA runtime's PTX
(``kernel.py``, ``kernel.ptx``). Each entry is keyed by :func:`keys.build_kernel_key` over the
source's hash and the arch, with the versions of the compilers that made it, so a new process
loads the CUBIN or PTX instead of compiling again. ``store=None`` means uncached. No pickle:
files and JSON only. A store that fails is a miss, never an error of the call.
"""
from __future__ import annotations

import hashlib
import json

from . import keys, nvrtc_lib

NAMESPACE = "kernels"
NVRTC_TOOLS = ("nvrtc",)                    # what compiles a CUDA C kernel
NUMBA_CUDA_TOOLS = ("numba", "numba_cuda")  # what compiles a Numba-CUDA kernel
_CUBIN = "cuda"                             # the key's and meta's backend of each kind of entry
_PTX = "numba-cuda"


def _key(backend: str, tools, source: str, arch: str) -> dict:
    known = {"nvrtc": nvrtc_lib.version()} if "nvrtc" in tools else None   # (no libnvrtc loaded)
    return keys.build_kernel_key(graph_hash=hashlib.sha256(source.encode()).hexdigest(),
                                 signature=None, backend=backend, arch=arch, tools=tools, known=known)


def _get(store, key: dict):
    try:
        return store.get(NAMESPACE, key)
    except Exception:       # noqa: BLE001 - a store that fails is a miss
        return None


def _put(store, key: dict, files: dict, meta: dict) -> None:
    try:
        store.put(NAMESPACE, key, files, meta)
    except Exception:       # noqa: BLE001 - the store is best effort
        pass


def _keyed_version(version) -> bool:
    """Whether NVRTC ``version`` ((major, minor)) is the one the keys name."""
    try:
        return ".".join(str(int(x)) for x in version) == nvrtc_lib.version()
    except (TypeError, ValueError):
        return False


def load_cubin(store, source: str, arch: str):
    """The stored NVRTC result (``codegen.nvrtc.CompiledCuda``) of CUDA C ``source`` for
    ``arch``, or None; one whose NVRTC is not the key's (``nvrtc_lib.version``) is None too."""
    entry = None if store is None else _get(store, _key(_CUBIN, NVRTC_TOOLS, source, arch))
    if entry is None:
        return None
    from ..codegen.nvrtc import CompiledCuda
    try:
        info = json.loads(entry.read("nvrtc.json"))
        if not _keyed_version(info["nvrtc_version"]):
            return None
        return CompiledCuda(ptx=entry.read("kernel.ptx").decode(), cubin=entry.read("kernel.cubin"),
                            log=info["log"], options=tuple(info["options"]),
                            nvrtc_version=tuple(info["nvrtc_version"]), arch=info["arch"])
    except (KeyError, ValueError, TypeError):
        return None


def save_cubin(store, source: str, arch: str, compiled) -> None:
    """Store the NVRTC result ``compiled`` of CUDA C ``source`` for ``arch`` (no-op without a
    store, or where the NVRTC that compiled it is not the version the key names: the key's is
    read without loading the library, ``runtime.nvrtc_lib``, and a CUBIN is never filed under
    another compiler's version)."""
    if store is None or not _keyed_version(compiled.nvrtc_version):
        return
    info = {"log": compiled.log, "options": list(compiled.options),
            "nvrtc_version": list(compiled.nvrtc_version), "arch": compiled.arch}
    files = {"kernel.cu": source.encode(), "kernel.ptx": compiled.ptx.encode(),
             "kernel.cubin": bytes(compiled.cubin), "nvrtc.json": json.dumps(info).encode()}
    _put(store, _key(_CUBIN, NVRTC_TOOLS, source, arch), files,
         {"kind": _CUBIN, "backend": _CUBIN, "arch": arch})


def load_ptx(store, source: str, arch: str) -> str | None:
    """The stored PTX of Numba-CUDA ``source`` for ``arch``, or None."""
    entry = None if store is None else _get(store, _key(_PTX, NUMBA_CUDA_TOOLS, source, arch))
    if entry is None:
        return None
    try:
        return entry.read("kernel.ptx").decode()
    except (KeyError, UnicodeDecodeError):
        return None


def save_ptx(store, source: str, arch: str, ptx: str) -> None:
    """Store the PTX of Numba-CUDA ``source`` for ``arch`` (no-op without a store)."""
    if store is None:
        return
    _put(store, _key(_PTX, NUMBA_CUDA_TOOLS, source, arch),
         {"kernel.py": source.encode(), "kernel.ptx": ptx.encode()},
         {"kind": _PTX, "backend": _PTX, "arch": arch})
