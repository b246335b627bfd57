"""The CPU backend's thread pool, started only when a kernel runs on more than one thread.

``numba.get_num_threads()`` and ``numba.set_num_threads()`` launch Numba's threading layer (they
load its library and start its workers). A process whose kernels all run on one thread never
needs it, so :func:`thread_cap` answers from the configuration until the pool exists, and
:func:`call_parallel` starts it (applying ``KFUSE_CPU_THREADS`` once) for the first kernel that
runs on several threads.
"""
from __future__ import annotations

import numba

_POOL = [False]             # the pool started and KFUSE_CPU_THREADS applied in this process


def _configured() -> int:
    from .. import config
    n = numba.config.NUMBA_NUM_THREADS
    cfg = config.get().cpu_threads
    return max(1, min(cfg, n)) if cfg else n


def pool_started() -> bool:
    """Whether Numba's threading layer runs in this process (started by kfuse or anyone)."""
    from numba.np.ufunc import parallel
    return bool(getattr(parallel, "_is_initialized", True))


def ensure_pool() -> None:
    """Start the threading layer and apply ``KFUSE_CPU_THREADS`` to it (once)."""
    if not _POOL[0]:
        cfg = _configured()
        if cfg != numba.config.NUMBA_NUM_THREADS:
            numba.set_num_threads(cfg)
        _POOL[0] = True


def thread_cap() -> int:
    """The most threads a kernel may take now: the pool's count once it runs, else the
    configured count (without starting the pool)."""
    if _POOL[0] or pool_started():
        ensure_pool()
        return numba.get_num_threads()
    return _configured()


def call_parallel(fn, args, threads: int) -> None:
    """``fn(*args)`` (a ``parallel=True`` dispatcher) on ``threads`` threads (0: the pool's)."""
    ensure_pool()
    old = numba.get_num_threads()
    if not threads or threads == old:
        fn(*args)
        return
    numba.set_num_threads(threads)
    try:
        fn(*args)
    finally:
        numba.set_num_threads(old)
