"""GPU timing of arrays built from pieces and of writes (kfuse/trace/assemble.py, mutation.py)
against torch.compile, CuPy eager and a device-to-device copy, all measured in this one run.

Cases (float32, 16384 x 1024): a rotary embedding (``x * cos + concatenate([-x2, x1]) * sin``),
a write chain (``y = x.copy(); y[y < 0] = 0; y[:, 0] = 1``), a zero pad of one column each side,
and a boolean-mask reduction (``x[x > 0].sum(axis=0)``, all of x: a scalar). Each time: the median over 15 rounds of
10 back-to-back calls between two CUDA events, peers interleaved per round. Writes
``assemble_bench.md`` under $OUT (or the current directory).
Usage: PYTHONPATH=. python3 benchmarks/assemble_bench.py
"""
import os

import cupy as cp
import numpy as np

import kfuse
import peer_timing
from peer_timing import copy_ms, interleaved

N, D = 16384, 1024


def rotary(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + np.concatenate([-x[:, h:], x[:, :h]], axis=-1) * sin


def writes(x):
    y = x.copy()
    y[y < 0] = 0
    y[:, 0] = 1
    return y


def pad(x):
    return np.pad(x, ((0, 0), (1, 1)))


def masked_sum(x):
    return x[x > 0].sum(axis=0)


def _torch_fns():
    import torch

    def t_rotary(x, cos, sin):
        h = x.shape[-1] // 2
        return x * cos + torch.cat([-x[:, h:], x[:, :h]], dim=-1) * sin

    def t_writes(x):
        y = x.clone()
        y[y < 0] = 0
        y[:, 0] = 1
        return y

    def t_pad(x):
        return torch.nn.functional.pad(x, (1, 1))

    def t_masked_sum(x):
        return torch.where(x > 0, x, 0).sum()
    return {"rotary": t_rotary, "writes": t_writes, "pad": t_pad, "masked_sum": t_masked_sum}


def main():
    import torch
    out_dir = os.environ.get("OUT", ".")
    rng = np.random.default_rng(0)
    host = [rng.standard_normal((N, D)).astype(np.float32) for _ in range(3)]
    xs = [cp.asarray(a) for a in host]
    ts = [torch.as_tensor(a, device="cuda") for a in host]
    cases = {"rotary": (rotary, 3, 4), "writes": (writes, 1, 2), "pad": (pad, 1, 2),
             "masked_sum": (masked_sum, 1, 1)}
    tfns = _torch_fns()
    rows = []
    for name, (fn, n_in, n_bytes_units) in cases.items():
        args, targs = xs[:n_in], ts[:n_in]
        kf = kfuse.jit(fn)
        tc = torch.compile(tfns[name])
        want = fn(*[h.copy() for h in host[:n_in]])
        got = cp.asnumpy(kf(*args))
        tgot = tc(*targs).cpu().numpy()
        err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) or 1))
        terr = float(np.max(np.abs(tgot - want)) / (np.max(np.abs(want)) or 1))
        peers = {"kfuse[cuda]": lambda: kf(*args), "torch.compile": lambda: tc(*targs),
                 "cupy eager": lambda: fn(*args)}
        times = interleaved(peers)
        nbytes = N * D * 4 * n_bytes_units if name != "masked_sum" else N * D * 4
        copy = copy_ms(nbytes)
        for k, ms in times.items():
            rows.append((name, k, ms, copy / ms * 100, err if k == "kfuse[cuda]" else
                         terr if k == "torch.compile" else float("nan")))
    text = peer_timing.table("assemble_bench", f"float32 {N}x{D}; ms: median of 15 rounds of 10 calls; % copy: a "
                 "cupy copy of the bytes the case reads and writes (once each), timed in this run.", rows)
    print(text)
    with open(os.path.join(out_dir, "assemble_bench.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
