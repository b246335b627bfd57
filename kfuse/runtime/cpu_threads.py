"""The CPU backend's thread pool, started only when a kernel runs on more than one thread.

``numba.get_num_threads()`` and ``numba.set_num_threads()`` launch Numba's threading layer (they
load its library and start its workers). A process whose kernels all run on one thread never
needs it, so :func:`thread_cap` answers from the configuration until the pool exists, and
:func:`call_parallel` starts it (applying ``KFUSE_CPU_THREADS`` once) for the first kernel that
runs on several threads. Numba itself is imported only then, or where a kernel compiles: a
process whose kernels all run natively (``cpu_native``) never imports it.
"""
from __future__ import annotations

import os
import sys

_POOL = [False]             # the pool started and KFUSE_CPU_THREADS applied in this process


def numba_threads() -> int:
    """``numba.config.NUMBA_NUM_THREADS``, asked without importing Numba where it is not: the
    ``NUMBA_NUM_THREADS`` variable, else the CPUs this process may run on (Numba's default)."""
    if "numba" in sys.modules:
        import numba
        return int(numba.config.NUMBA_NUM_THREADS)
    return default_threads()


def default_threads() -> int:
    """What Numba's ``NUMBA_NUM_THREADS`` will be, from the environment (``kfuse.config``)."""
    from .. import config
    env = dict(config.get().numba_env)
    if env.get("NUMBA_NUM_THREADS", "").strip().isdigit():
        return max(1, int(env["NUMBA_NUM_THREADS"]))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):       # pragma: no cover
        return max(1, os.cpu_count() or 1)


def _configured() -> int:
    from .. import config
    n = numba_threads()
    cfg = config.get().cpu_threads
    return max(1, min(cfg, n)) if cfg else n


_PARALLEL: list = []        # numba.np.ufunc.parallel, once imported


def pool_started() -> bool:
    """Whether Numba's threading layer runs in this process (started by kfuse or anyone)."""
    if not _PARALLEL:
        if "numba" not in sys.modules:
            return False
        from numba.np.ufunc import parallel
        _PARALLEL.append(parallel)
    return bool(getattr(_PARALLEL[0], "_is_initialized", True))


def ensure_pool() -> None:
    """Start the threading layer and apply ``KFUSE_CPU_THREADS`` to it (once)."""
    import numba
    if not _POOL[0]:
        cfg = _configured()
        if cfg != numba.config.NUMBA_NUM_THREADS:
            numba.set_num_threads(cfg)
        _POOL[0] = True


_CAP: list = [None, None, False]    # numba.get_num_threads once kfuse's pool runs; the configured
                                    # count, and whether Numba was imported when it was read


def thread_cap() -> int:
    """The most threads a kernel may take now: the pool's count once it runs, else the
    configured count (without starting the pool; read again once when Numba is imported, whose
    count it is then). Asked at every call of a kernel large enough to share."""
    get = _CAP[0]
    if get is not None:
        return get()        # (Numba keeps the count per thread: asked every time)
    imported = "numba" in sys.modules
    if _POOL[0] or (imported and pool_started()):
        import numba
        ensure_pool()
        _CAP[0] = numba.get_num_threads
        return numba.get_num_threads()
    if _CAP[1] is None or _CAP[2] != imported:
        _CAP[1], _CAP[2] = _configured(), imported
    return _CAP[1]


def call_parallel(fn, args, threads: int) -> None:
    """``fn(*args)`` (a ``parallel=True`` dispatcher) on ``threads`` threads (0: the pool's)."""
    import numba
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
