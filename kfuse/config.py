"""Typed configuration knobs, read once from ``KFUSE_*`` environment variables.

Nothing else in kfuse reads ``os.environ``; code receives a :class:`Config` (``config.get()``).
Tests may call :func:`reload` after changing the environment.
"""
from __future__ import annotations

import dataclasses
import os

from .records import record


def _xdg_cache() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kfuse")


def _bool(v: str | None, default: bool = False) -> bool:
    if v is None or v == "":
        return default
    return v.strip().lower() not in ("0", "false", "no", "off")


@record
class Config:
    """The KFUSE_* settings (each field's comment names its variable)."""
    debug: int = 0                      # KFUSE_DEBUG: 1 = log plans, 2 = also the IR between passes
                                        # (the "kfuse" logger, to stderr: kfuse.logs)
    dump_dir: str | None = None         # KFUSE_DUMP_DIR: write every stage of every compile here
    cache_dir: str = dataclasses.field(default_factory=_xdg_cache)  # KFUSE_CACHE_DIR
    cache_enabled: bool = True          # KFUSE_CACHE=0 disables the disk cache
    cache_max_bytes: int = 2 << 30      # KFUSE_CACHE_MAX_BYTES: LRU eviction above this
    recompile_limit: int = 8            # KFUSE_RECOMPILE_LIMIT: warn past this many compiles per function
    autotune: str = "cached"            # KFUSE_AUTOTUNE: off | cached | on
    autotune_budget: float = 30.0       # KFUSE_AUTOTUNE_BUDGET: seconds per kernel
    autotune_total_budget: float = 300.0  # KFUSE_AUTOTUNE_TOTAL_BUDGET: seconds per process
    print_autotuning: bool = False      # KFUSE_PRINT_AUTOTUNING=1
    cpu_threads: int | None = None      # KFUSE_CPU_THREADS: Numba threads for the CPU backend
    device: str | None = None           # KFUSE_DEVICE: default DeviceSpec name for planning (e.g. h100)
    index_checks: bool = True           # KFUSE_INDEX_CHECKS=0: no IndexError for a traced index out of
                                        # range (read at the nearest end), no ValueError for the max of
                                        # an empty x[mask] (the identity), no flag read back a call
    dask_row_bytes: int = 128 << 20     # KFUSE_DASK_ROW_BYTES: on Dask arrays, a row-wise reduction
                                        # over a split axis rechunks it to one chunk when a row fits
                                        # this; larger rows run statistics-then-apply (two passes)
    cpu_native: bool = True             # KFUSE_CPU_NATIVE=0: CPU kernels are neither stored nor loaded
                                        # as native shared objects (runtime/cpu_native.py): a warm
                                        # first call imports Numba and loads its machine code instead
    cpu_machine: bool = True            # KFUSE_CPU_MACHINE=0: the CPU cost model keeps the fitted machine's
                                        # figures even where this machine's are stored (fusion/cpu_machine.py;
                                        # the test suite's setting: its expectations are the fitted ones)
    numba_env: tuple = ()               # the NUMBA_* variables (name, value), sorted: Numba reads
                                        # them itself; kfuse keys native kernels on them and takes
                                        # NUMBA_NUM_THREADS as the pool's size before Numba is imported


def from_env(env: dict | None = None) -> Config:
    env = os.environ if env is None else env
    g = env.get
    threads = g("KFUSE_CPU_THREADS")
    return Config(
        debug=int(g("KFUSE_DEBUG") or 0),
        dump_dir=g("KFUSE_DUMP_DIR") or None,
        cache_dir=g("KFUSE_CACHE_DIR") or _xdg_cache(),
        cache_enabled=_bool(g("KFUSE_CACHE"), True),
        cache_max_bytes=int(g("KFUSE_CACHE_MAX_BYTES") or (2 << 30)),
        recompile_limit=int(g("KFUSE_RECOMPILE_LIMIT") or 8),
        autotune=(g("KFUSE_AUTOTUNE") or "cached").lower(),
        autotune_budget=float(g("KFUSE_AUTOTUNE_BUDGET") or 30.0),
        autotune_total_budget=float(g("KFUSE_AUTOTUNE_TOTAL_BUDGET") or 300.0),
        print_autotuning=_bool(g("KFUSE_PRINT_AUTOTUNING")),
        cpu_threads=int(threads) if threads else None,
        device=g("KFUSE_DEVICE") or None,
        index_checks=_bool(g("KFUSE_INDEX_CHECKS"), True),
        dask_row_bytes=int(g("KFUSE_DASK_ROW_BYTES") or (128 << 20)),
        cpu_native=_bool(g("KFUSE_CPU_NATIVE"), True),
        cpu_machine=_bool(g("KFUSE_CPU_MACHINE"), True),
        numba_env=tuple(sorted((k, v) for k, v in env.items() if k.startswith("NUMBA_"))),
    )


_CONFIG: Config | None = None


def get() -> Config:
    """The process's configuration (read from the environment on first use)."""
    global _CONFIG
    if _CONFIG is None:
        _CONFIG = from_env()
    return _CONFIG


def reload() -> Config:
    """Re-read the environment (for tests)."""
    global _CONFIG
    _CONFIG = from_env()
    return _CONFIG
