"""GPU timing of searches (kfuse/trace/searching.py) against torch.compile, torch eager, CuPy eager
and a device-to-device copy, all measured in this one run.

Cases (float32 keys, float64 results where NumPy gives float64):
  * ``searchsorted``: ``np.searchsorted(table, x)``, a 4096-entry sorted table, 2**26 keys;
  * ``interp``: ``np.interp(x, xp, fp)`` with 1024 sample points, 2**25 points (float64 out, as
    NumPy; torch: searchsorted, two gathers and the slope, in float64);
  * ``sample``: inverse-CDF sampling ``np.searchsorted(np.cumsum(p), u * p.sum())`` of 2**26
    uniforms from a 65536-bin distribution.
Each time: the median over 15 rounds of 10 back-to-back calls between two CUDA events, peers
interleaved per round. The error column: max |y - ref| / max |ref| against NumPy on the host.
% copy: a CuPy copy of the keys read and the result written. Writes ``search_bench.md`` under
$OUT (or the current directory). Usage: PYTHONPATH=. python3 benchmarks/search_bench.py
"""
import os

import cupy as cp
import numpy as np

import peer_timing


def searchsorted(table, x):
    return np.searchsorted(table, x)


def interp(x, xp, fp):
    return np.interp(x, xp, fp)


def sample(p, u):
    return np.searchsorted(np.cumsum(p), u * p.sum())


def _torch_fns():
    import torch

    def t_interp(x, xp, fp):
        x = x.double()
        j = (torch.searchsorted(xp, x, right=True) - 1).clamp(0, xp.numel() - 2)
        x0, x1, f0, f1 = xp[j], xp[j + 1], fp[j], fp[j + 1]
        r = (f1 - f0) / (x1 - x0) * (x - x0) + f0
        return torch.where(x < xp[0], fp[0], torch.where(x > xp[-1], fp[-1], r))
    return {"searchsorted": lambda t, x: torch.searchsorted(t, x), "interp": t_interp,
            "sample": lambda p, u: torch.searchsorted(torch.cumsum(p, 0), u * p.sum())}


def _cupy_fns():
    return {"searchsorted": lambda t, x: cp.searchsorted(t, x),
            "interp": lambda x, xp, fp: cp.interp(x, xp, fp),
            "sample": lambda p, u: cp.searchsorted(cp.cumsum(p), u * p.sum())}


def _cases(rng):
    x = rng.standard_normal(2 ** 26).astype(np.float32)
    table = np.sort(rng.standard_normal(4096)).astype(np.float32)
    xi = (rng.standard_normal(2 ** 25) * 1.2).astype(np.float32)
    xp = np.sort(rng.standard_normal(1024))
    fp = np.cos(xp)
    p = rng.random(65536).astype(np.float32)
    u = rng.random(2 ** 26).astype(np.float32)
    return {"searchsorted": (searchsorted, (table, x), x.nbytes * 3),
            "interp": (interp, (xi, xp, fp), xi.nbytes * 3),
            "sample": (sample, (p, u), u.nbytes * 3)}


def main():
    out_dir = os.environ.get("OUT", ".")
    rng = np.random.default_rng(0)
    tfns, cfns = _torch_fns(), _cupy_fns()
    rows = []
    for name, (fn, host, least) in _cases(rng).items():
        want = np.asarray(fn(*host)).astype(np.float64)
        rows += peer_timing.four_peers(name, fn, host, tfns[name], cfns[name], want, least)
        cp.get_default_memory_pool().free_all_blocks()
    text = peer_timing.table("search_bench", "shapes in the module docstring. ms: median of 15 rounds of 10 "
                             "calls; % copy: a cupy copy of the keys' bytes read and the result's written "
                             "(counted as float32/int64 pairs), timed in this run; error: max |y - ref| / "
                             "max |ref| against NumPy.", rows)
    print(text)
    with open(os.path.join(out_dir, "search_bench.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
