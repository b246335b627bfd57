"""When a CPU kernel's parallel variant is compiled (kfuse.runtime.cpu_par_policy): not at the
second call of a small kernel, once its lost savings reach the compile's cost, at once where the
disk cache or this process has it ready, and at the first call of a kernel large enough."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from kfuse.runtime import cpu_par_policy as P

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _Disp:
    """A dispatcher as the policy sees one: its signatures and overloads."""
    def __init__(self, sigs=()):
        self.signatures = list(sigs)
        self.overloads = {s: None for s in sigs}


def test_small_kernel_runs_sequentially_until_its_rent_pays_the_compile():
    work, acc = 1 << 18, P.ParState()                    # a 64x512 row softmax
    seq, par = _Disp([("f32",)]), _Disp()
    assert not acc.buy(work, 2, _Disp(), par)            # first call: sequential
    acc.pay(0.5, 2, work)                                # (its time holds the compile: not used)
    assert acc.rent == pytest.approx(P.gain(work / P.WORK_PER_S, 2))
    calls = 1
    while True:
        sure = acc.renting(work, 2)                      # (the launch's shortcut: no dispatchers asked)
        if acc.buy(work, 2, seq, par):
            assert not sure
            break
        acc.pay(20e-6, 2, work)
        calls += 1
    assert not acc.renting(work, 2)
    assert calls >= P.PAR_COMPILE_S / 10e-6 * 0.99       # ~100,000 calls of 20 us
    assert acc.rent >= P.PAR_COMPILE_S and acc.buy(work, 2, seq, par)


def test_parallel_variant_already_compiled_or_stored_is_cheap(monkeypatch):
    seq = _Disp([("f32",)])
    assert P.par_cost(seq, _Disp([("f32",)])) == 0.0     # this process has it
    assert P.par_cost(_Disp(), _Disp()) == P.PAR_COMPILE_S
    monkeypatch.setattr(P.cpu_persist, "is_stored", lambda d, sig: sig == ("f32",))
    assert P.par_cost(seq, _Disp()) == P.LOAD_S          # on disk: a load
    acc = P.ParState()
    acc.pay(0.0, 2, 1 << 18)
    call = 1.6 * P.EAGER_GAIN_S                            # (threads save less than EAGER_GAIN_S)
    while not acc.buy(1 << 18, 2, seq, _Disp()):
        acc.pay(call, 2, 1 << 18)
    assert P.LOAD_S <= acc.rent < P.LOAD_S + call         # bought as soon as the load is paid


def test_first_call_parallel_only_for_huge_kernels():
    assert not P.first_call_parallel(1 << 28, 2)          # ~22 ms a call: not worth 0.5 s more
    huge = int((P.PAR_COMPILE_S - P.SEQ_COMPILE_S) * P.WORK_PER_S * 2) + 1
    assert P.first_call_parallel(huge, 2) and not P.first_call_parallel(huge, 1)
    acc = P.ParState()
    assert acc.buy(huge, 2, _Disp(), _Disp()) and acc.ready


def test_timed_calls_slower_than_the_estimate_buy_threads_early():
    """A kernel whose element-passes are slow (a transposed read) is bought once two timed
    calls show its threads would save EAGER_GAIN_S; one slow call alone (descheduled) does not
    buy, and the timed rate scales to the kernel's other sizes."""
    work, seq, par = 1 << 20, _Disp([("f32",)]), _Disp()
    est = work / P.WORK_PER_S
    assert P.gain(est, 2) < P.EAGER_GAIN_S                # by the estimate: rented for long
    slow = 6 * est
    assert P.gain(slow, 2) >= P.EAGER_GAIN_S
    acc = P.ParState()
    assert not acc.buy(work, 2, seq, par)
    acc.pay(1.0, 2, work)                                # the first call (compile): not timed
    for _ in range(P.WARM_CALLS - 1):                    # nor the next few (cold memory)
        assert not acc.buy(work, 2, seq, par)
        acc.pay(slow * 3, 2, work)
    assert not acc.buy(work, 2, seq, par)
    acc.pay(slow, 2, work)                               # one timed call: not yet
    assert not acc.buy(work, 2, seq, par)
    acc.pay(est, 2, work)                                # the faster of two decides: as estimated
    assert acc.renting(work, 2) and not acc.buy(work, 2, seq, par)
    acc = P.ParState()
    for s in (1.0,) + (est,) * (P.WARM_CALLS - 1) + (slow, slow * 1.1):
        assert not acc.buy(work, 2, seq, par)
        acc.pay(s, 2, work)
    assert not acc.renting(work, 2) and acc.buy(work, 2, seq, par)
    small = P.ParState()
    for s in (1.0,) + (slow / 64,) * (P.WARM_CALLS + 1):  # timed at 1/64 of the work, same rate
        small.pay(s, 2, work // 64)
    assert small.call_s(work) == pytest.approx(slow) and small.call_s(work // 64) == pytest.approx(slow / 64)


def test_lease_opens_once_settled_and_closes_when_bought():
    """The lease (what a cached call reads instead of asking): open only after both timed calls,
    up to the cost and for kernels whose threads save less than EAGER_GAIN_S; closed once bought."""
    work, seq, par = 1 << 20, _Disp([("f32",)]), _Disp()
    est = work / P.WORK_PER_S
    acc = P.ParState()
    for s in (1.0,) + (est,) * P.WARM_CALLS:
        assert not acc.buy(work, 2, seq, par) and not acc.lease
        acc.pay(s, 2, work)
    assert acc.renting(work, 2) and not acc.lease         # one timed call: not settled
    acc.pay(est * 2, 2, work)
    assert acc.renting(work, 2)
    assert acc.lease == acc.cost == P.PAR_COMPILE_S and acc.share == 0.5
    assert work < acc.lease_work and P.gain(acc.call_s(acc.lease_work), 2) == pytest.approx(P.EAGER_GAIN_S, rel=1e-3)
    acc.rent = acc.lease
    assert not acc.renting(work, 2) and acc.buy(work, 2, seq, par) and acc.lease == 0.0


_CHILD = r'''
import json, sys
import numpy as np
import kfuse
from kfuse.runtime import cpu as rt, cpu_par_policy as P
rt.machine_busy = lambda: False             # as on an idle 2-core machine
rt.thread_cap = lambda: 2

def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)

x = np.random.default_rng(0).random((64, 512), dtype=np.float32)
want = np.exp(x - x.max(-1, keepdims=True))
want /= want.sum(-1, keepdims=True)
f = kfuse.jit(softmax, backend="cpu")
out = {"ok": True, "par": []}
for i in range(int(sys.argv[1])):
    out["ok"] &= bool(np.allclose(f(x), want, rtol=1e-5))
    (entry,) = f._programs.values()
    (k,) = entry.program.kernels
    (_, seq, par), = k.variants.by_sched.values()
    out["par"].append(len(par.overloads))
out["work"] = k.work
out["cost"] = P.par_cost(seq, par)
out["par_loads"] = par._cache.loads
print(json.dumps(out))
'''


def _child(cache, calls, compile_s=None):
    code = _CHILD if compile_s is None else _CHILD.replace(
        "rt.thread_cap = lambda: 2", f"rt.thread_cap = lambda: 2\nP.PAR_COMPILE_S = {compile_s}\n"
        f"P.NUMBA_IMPORT_S = {compile_s}\n"
        "P.first_call_parallel = lambda work, threads: False")
    env = dict(os.environ, KFUSE_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
    env.pop("KFUSE_CPU_THREADS", None)
    r = subprocess.run([sys.executable, "-c", code, str(calls)], capture_output=True, text=True,
                       env=env, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_softmax_64x512_second_call_compiles_no_parallel_variant(tmp_path):
    r = _child(tmp_path / "c", 3)
    assert r["ok"] and r["work"] >= 1 << 18                 # threads would be given ...
    assert r["par"] == [0, 0, 0] and r["cost"] == P.PAR_COMPILE_S   # ... but not compiled
    # a process where the compile is cheap enough buys it at the second call, and stores it
    r = _child(tmp_path / "c", 2, compile_s=1e-9)
    assert r["ok"] and r["par"] == [0, 1]
    # a new process finds it on disk: loads it (no compile) once the rent reaches a load (and
    # Numba's import: that process ran the sequential variant natively, runtime/cpu_native.py)
    calls = int((P.LOAD_S + P.NUMBA_IMPORT_S) / P.gain(r["work"] / P.WORK_PER_S, 2)) * 3 + 3
    r = _child(tmp_path / "c", calls)
    assert r["ok"] and r["par"][:2] == [0, 0] and r["par"][-1] == 1
    assert r["par_loads"] == 1
