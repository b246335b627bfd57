"""Whether other work occupies this machine's cores, the CPU runtime's reason to run a kernel on
one thread (``runtime.cpu.auto_threads``): this process's own threads left out.

Linux counts every runnable thread, this process's too: right after a parallel kernel Numba's
OpenMP workers spin (state R) for a while, and a busy process's own kernels raise the load
average. Counted as load, they made a kernel's next call see a busy machine and drop to one
thread (measured on the 2-core dev box: /proc/loadavg's runnable count 2 before a ``prange`` sum
of 2**20 float64, 3 just after it; with one other runnable process that read as two others on
two cores). So the runnable count of the whole machine loses this process's threads in state R
(``/proc/self/task``), and the 1-minute load average loses this process's CPU use averaged as
the kernel averages the load (an exponential average over a minute of its CPU seconds a second).
What remains is the work of other processes, which a kernel's threads would wait for.
"""
from __future__ import annotations

import math
import os
import time

_LOAD = [0.0, False]        # (time read, busy)
_OWN = [None, 0.0, 0.0]     # (time, process CPU seconds) last sampled, and the averaged CPU use


def machine_busy() -> bool:
    """Whether other processes' runnable threads now, or their 1-minute load average, have
    reached the cores this process may use (read at most once a second). The runnable count
    sees CPU-bound neighbours at once; the load average takes a minute to climb."""
    now = time.monotonic()
    if now - _LOAD[0] > 1.0:
        try:
            cores = len(os.sched_getaffinity(0))
            own = own_load(now)
            # (this process's threads are listed only where the count alone says busy: 50 us)
            _LOAD[1] = (os.getloadavg()[0] - own >= cores
                        or runnable() - 1 >= cores and runnable() - own_runnable() >= cores)
        except (OSError, AttributeError):       # pragma: no cover
            _LOAD[1] = False
        _LOAD[0] = now
    return _LOAD[1]


def runnable() -> int:
    """Threads runnable now on this machine, this one included (Linux's /proc/loadavg), else 1."""
    try:
        with open("/proc/loadavg", "rb") as f:
            return int(f.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return 1


def own_runnable() -> int:
    """This process's threads running or runnable now (the caller among them), else 1."""
    n = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 1
    for t in tasks:
        try:
            with open(f"/proc/self/task/{t}/stat", "rb") as f:
                n += f.read().rpartition(b")")[2].split(None, 1)[0] == b"R"
        except (OSError, IndexError):
            continue                    # (a thread that ended meanwhile)
    return max(1, n)


def own_load(now: float) -> float:
    """This process's share of the 1-minute load average: its CPU seconds a second, averaged
    with the kernel's decay (exp(-t/60)) since it was first asked; before that, its CPU use over
    its life, weighed as the load average has had time to climb."""
    cpu = time.process_time()
    if _OWN[0] is None:
        age = _age()
        _OWN[2] = (cpu / age) * (1.0 - math.exp(-age / 60.0)) if age > 0 else 0.0
    else:
        dt = now - _OWN[0]
        if dt > 0:
            decay = math.exp(-dt / 60.0)
            _OWN[2] = _OWN[2] * decay + (cpu - _OWN[1]) / dt * (1.0 - decay)
    _OWN[0], _OWN[1] = now, cpu
    return _OWN[2]


def _age() -> float:
    """Seconds since this process started (Linux: /proc/self/stat's start time), else 0."""
    try:
        with open("/proc/self/stat", "rb") as f:
            start = int(f.read().rpartition(b")")[2].split()[19])
        with open("/proc/uptime", "rb") as f:
            up = float(f.read().split()[0])
        return max(0.0, up - start / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0
