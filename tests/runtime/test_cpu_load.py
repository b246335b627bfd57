"""The busy-machine test of the CPU runtime (kfuse.runtime.cpu_load) leaves this process's own
threads out: a worker of its own spinning, or its own CPU use in the load average, is not
another process's load that a kernel's threads would wait for."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from kfuse.runtime import cpu_load as L

pytestmark = pytest.mark.skipif(not L.os.path.exists("/proc/self/task"), reason="Linux /proc only")


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(L, "_LOAD", [0.0, False])
    monkeypatch.setattr(L, "_OWN", [None, 0.0, 0.0])
    monkeypatch.setattr(L.os, "sched_getaffinity", lambda pid: {0, 1})


def test_own_spinning_thread_is_counted_as_this_process():
    stop = threading.Event()
    a = np.ones((256, 256))

    def spin():                             # (NumPy releases the GIL: runnable while it works)
        while not stop.is_set():
            a @ a
    t = threading.Thread(target=spin)
    t.start()
    try:
        seen = 1
        deadline = time.monotonic() + 5.0
        while seen < 2 and time.monotonic() < deadline:
            seen = max(seen, L.own_runnable())
    finally:
        stop.set()
        t.join()
    assert seen >= 2
    assert L.own_runnable() >= 1


def test_own_threads_are_not_other_load(fresh, monkeypatch):
    """Two cores: the machine's count holds this process's caller and its spinning worker plus
    one other process: not busy (it was, counting the worker as another)."""
    monkeypatch.setattr(L, "runnable", lambda: 3)
    monkeypatch.setattr(L, "own_runnable", lambda: 2)
    monkeypatch.setattr(L.os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    assert not L.machine_busy()
    L._LOAD[0] = 0.0
    monkeypatch.setattr(L, "own_runnable", lambda: 1)      # two other processes: busy
    assert L.machine_busy()


def test_load_average_loses_this_process_cpu_use(fresh, monkeypatch):
    monkeypatch.setattr(L, "runnable", lambda: 1)
    monkeypatch.setattr(L, "own_runnable", lambda: 1)
    monkeypatch.setattr(L.os, "getloadavg", lambda: (2.2, 2.0, 1.0))
    cpu = [100.0]
    monkeypatch.setattr(L.time, "process_time", lambda: cpu[0])
    monkeypatch.setattr(L, "_age", lambda: 1000.0)          # 100 s of CPU over 1000: 0.1 a second
    now = L.time.monotonic()
    assert L.own_load(now) == pytest.approx(0.1, rel=1e-3)
    for k in range(1, 121):                                 # two minutes at 2 CPU-seconds a second
        cpu[0] += 2.0
        L.own_load(now + k)
    assert L.own_load(now + 121) == pytest.approx(2.0 * (1 - np.exp(-121 / 60)) + 0.1 * np.exp(-121 / 60), rel=0.02)
    L._LOAD[0] = 0.0
    assert not L.machine_busy()                             # 2.2 - ~1.8 of its own: idle
    L._OWN[:] = [None, 0.0, 0.0]
    monkeypatch.setattr(L, "_age", lambda: 0.0)             # none of it this process's: busy
    L._LOAD[0] = 0.0
    assert L.machine_busy()
