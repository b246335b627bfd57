"""NVRTC's version (part of every CUDA C kernel key and tuning key) without loading libnvrtc.

Loading libnvrtc only to call ``nvrtcVersion`` cost ~6 ms of a warm-cache GPU first call (H200
host; 7.6 ms here), where nothing is compiled. Both NVRTC users in the process (CuPy's binding,
which :func:`ask` calls, and ``cuda.bindings``, which compiles) load the library through
``cuda.pathfinder.load_nvidia_dynamic_lib("nvrtc")``: one already loaded under its soname, else
the first file its early search steps find (NVIDIA's wheels in site-packages, then conda), else
the system's loader. :func:`locate` runs that lookup without loading anything (pathfinder's own
search functions, ~40 us), and the disk cache's ``host`` namespace keeps, per library file, the
version asked from it once: keyed by the file's resolved path, size, mtime, ctime, inode and
device (a reinstalled or replaced library is a new ctime, so a new key), and by pathfinder's
version. A record is written only where the library that answered is the file :func:`locate`
named, so the warm path trusts the lookup only where it was seen to agree with the loader.
Anything else (no pathfinder, a library the system's loader finds, no cache, a bad record) asks
the library itself, as before. A CUBIN is stored only where the NVRTC that compiled it is this
version, and read only where it was (``runtime.gpu_store``).
"""
from __future__ import annotations

import functools
import json
import os
import sys

from . import keys

FORMAT = 2       # 2: the record is nvrtc_version.json (1 named it nvrtc.json: an old entry is never
                 # replaced, so under the old key it would be missed for good)
RECORD = "nvrtc_version.json"   # (a name no kernel entry uses)
_LIB = "nvrtc"


@functools.lru_cache(maxsize=None)
def version() -> str | None:
    """``"13.5"``: the NVRTC library's (major.minor), or None where there is none (once a
    process)."""
    if _loaded():                       # (asking costs nothing more then)
        return ask()
    path = locate()
    key = None if path is None else record_key(path)
    store = _store() if key is not None else None
    if store is not None:
        try:
            entry = store.get("host", key)
            if entry is not None:
                return str(json.loads(entry.read(RECORD))["version"])
        except Exception:               # noqa: BLE001 - a bad record: ask the library
            pass
    v = ask()
    if store is not None and v is not None and _loaded_from(path):
        save(store, key, v)
    return v


def ask() -> str | None:
    """The version asked from the library, loading it (``keys.nvrtc_version``)."""
    return keys.nvrtc_version()


def locate() -> str | None:
    """The libnvrtc file ``cuda.pathfinder`` would load where none is loaded yet and its early
    steps (site-packages, conda) find one, without loading it; None otherwise (no pathfinder, a
    pathfinder without these functions, not Linux, a library only the system's loader finds)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        from cuda.pathfinder._dynamic_libs.lib_descriptor import LIB_DESCRIPTORS
        from cuda.pathfinder._dynamic_libs.search_steps import (EARLY_FIND_STEPS, SearchContext,
                                                                run_find_steps)
        found = run_find_steps(SearchContext(LIB_DESCRIPTORS[_LIB]), EARLY_FIND_STEPS)
    except Exception:                   # noqa: BLE001 - another pathfinder: ask the library
        return None
    return None if found is None else str(found.abs_path)


def record_key(path: str) -> dict | None:
    """The store key of the version record of the library file at ``path`` (None where it
    cannot be read)."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
        from cuda.pathfinder import __version__ as pathfinder
    except Exception:                   # noqa: BLE001
        return None
    return {"nvrtc-lib": FORMAT, "path": real, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "ctime_ns": st.st_ctime_ns, "ino": st.st_ino, "dev": st.st_dev,
            "pathfinder": str(pathfinder)}


def save(store, key: dict, v: str) -> None:
    """Store version ``v`` of the library named by ``key`` (best effort)."""
    try:
        store.put("host", key, {RECORD: json.dumps({"version": v}).encode()},
                  {"kind": "nvrtc-version", "backend": "cuda", "arch": None})
    except Exception:                   # noqa: BLE001
        pass


def _sonames() -> tuple:
    try:
        from cuda.pathfinder._dynamic_libs.lib_descriptor import LIB_DESCRIPTORS
        return tuple(LIB_DESCRIPTORS[_LIB].linux_sonames)
    except Exception:                   # noqa: BLE001
        return ()


def _loaded() -> bool:
    """Whether a libnvrtc is loaded in this process already (the soname check pathfinder makes
    before it searches)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    for soname in _sonames():
        try:
            ctypes.CDLL(soname, mode=os.RTLD_NOLOAD)
        except OSError:
            continue
        return True
    return False


def _loaded_from(path: str | None) -> bool:
    """Whether the libnvrtc this process loaded is the file at ``path``."""
    if path is None:
        return False
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
        loaded = load_nvidia_dynamic_lib(_LIB).abs_path      # (memoised: the one loaded)
        return os.path.realpath(loaded) == os.path.realpath(path)
    except Exception:                   # noqa: BLE001
        return False


def _store():
    try:
        from .cache import CacheStore
        return CacheStore.open()
    except Exception:                   # noqa: BLE001
        return None
