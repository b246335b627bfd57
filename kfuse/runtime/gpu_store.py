"""Disk persistence of GPU kernels: a dict-like view of the cache store for the GPU runtimes.

``runtime.cuda.compile_source`` asks ``cache.get((source, arch))`` for a compiled NVRTC result and
sets ``cache[(source, arch)] = CompiledCuda``; ``runtime.numba_cuda.ptx_for`` does the same with
``("numba-cuda", source, arch)`` keys and PTX text. This adapter maps those to entries of
:class:`kfuse.runtime.cache.CacheStore` (``kernel.cu``/``kernel.py``, ``kernel.ptx``,
``kernel.cubin``, ``meta.json``), keyed by :func:`keys.build_kernel_key` over the source hash, so
a new process loads the CUBIN instead of running NVRTC again. No pickle: files and JSON only.
"""
from __future__ import annotations

import hashlib
import json

from . import keys

NAMESPACE = "kernels"


class GpuKernelStore:
    def __init__(self, store):
        self.store = store

    @staticmethod
    def _key(k: tuple) -> dict:
        backend, source, arch = k if len(k) == 3 else ("cuda", *k)
        return keys.build_kernel_key(graph_hash=hashlib.sha256(source.encode()).hexdigest(),
                                     signature=None, backend=backend, arch=arch)

    def get(self, k: tuple):
        entry = self.store.get(NAMESPACE, self._key(k))
        if entry is None:
            return None
        if len(k) == 3:                      # numba-cuda: PTX text
            return entry.read("kernel.ptx").decode()
        from ..codegen.nvrtc import CompiledCuda
        info = json.loads(entry.read("nvrtc.json"))
        return CompiledCuda(ptx=entry.read("kernel.ptx").decode(), cubin=entry.read("kernel.cubin"),
                            log=info["log"], options=tuple(info["options"]),
                            nvrtc_version=tuple(info["nvrtc_version"]), arch=info["arch"])

    def __setitem__(self, k: tuple, value) -> None:
        if len(k) == 3:
            _, source, arch = k
            files = {"kernel.py": source.encode(), "kernel.ptx": value.encode()}
            meta = {"kind": "numba-cuda", "backend": "numba-cuda", "arch": arch}
        else:
            source, arch = k
            info = {"log": value.log, "options": list(value.options),
                    "nvrtc_version": list(value.nvrtc_version), "arch": value.arch}
            files = {"kernel.cu": source.encode(), "kernel.ptx": value.ptx.encode(),
                     "kernel.cubin": bytes(value.cubin), "nvrtc.json": json.dumps(info).encode()}
            meta = {"kind": "cuda", "backend": "cuda", "arch": arch}
        self.store.put(NAMESPACE, self._key(k), files, meta)


def open_gpu_store(store):
    """The adapter over ``store`` (a CacheStore), or None when the disk cache is off."""
    return None if store is None else GpuKernelStore(store)
