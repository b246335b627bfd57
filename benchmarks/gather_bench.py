"""GPU timing of integer-array indexing (kfuse/trace/indexing.py, the IR's GATHER) against
torch.compile, CuPy eager and a device-to-device copy, all measured in this one run.

Cases (float32):
  * ``embedding``: ``table[idx] * 32.0``, a 50000 x 1024 table, 16384 indices (int64);
  * ``embedding-clip``: the same through ``np.take(..., mode="clip")``: no range check, so no
    host sync a call (the default ``raise`` mode checks the indices and syncs to raise);
  * ``xent-lse``: a cross-entropy loss written as ``(logsumexp - x[rows, y]).mean()``;
  * ``xent-logp``: the same written through log-probabilities ``-(x - lse)[rows, y].mean()``.
Logits 8192 x 8192. Each time: the median over 15 rounds of 10 back-to-back calls between two
CUDA events, peers interleaved per round. Writes ``gather_bench.md`` under $OUT (or the current
directory). Usage: PYTHONPATH=. python3 benchmarks/gather_bench.py
"""
import os

import cupy as cp
import numpy as np

import kfuse
import peer_timing
from peer_timing import copy_ms, interleaved

V, D, B = 50000, 1024, 16384
N, C = 8192, 8192


def embedding(table, idx):
    return table[idx] * 32.0


def embedding_clip(table, idx):
    return np.take(table, idx, axis=0, mode="clip") * 32.0


def _lse(x):
    m = x.max(axis=1, keepdims=True)
    return np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m


def xent_lse(x, y):
    return (_lse(x)[:, 0] - x[np.arange(x.shape[0]), y]).mean()


def xent_logp(x, y):
    return -(x - _lse(x))[np.arange(x.shape[0]), y].mean()


def _torch_fns():
    import torch

    def t_embedding(table, idx):
        return table[idx] * 32.0

    def t_xent_lse(x, y):
        return (torch.logsumexp(x, 1) - x[torch.arange(x.shape[0], device=x.device), y]).mean()

    def t_xent_logp(x, y):
        logp = x - torch.logsumexp(x, 1, keepdim=True)
        return -logp[torch.arange(x.shape[0], device=x.device), y].mean()
    return {"embedding": t_embedding, "embedding-clip": t_embedding, "xent-lse": t_xent_lse,
            "xent-logp": t_xent_logp}


def main():
    import torch
    out_dir = os.environ.get("OUT", ".")
    rng = np.random.default_rng(0)
    table = rng.standard_normal((V, D)).astype(np.float32)
    idx = rng.integers(0, V, B).astype(np.int64)
    logits = (rng.standard_normal((N, C)) * 3).astype(np.float32)
    labels = rng.integers(0, C, N).astype(np.int64)
    cases = {"embedding": (embedding, (table, idx), 2 * B * D * 4),
             "embedding-clip": (embedding_clip, (table, idx), 2 * B * D * 4),
             "xent-lse": (xent_lse, (logits, labels), N * C * 4),
             "xent-logp": (xent_logp, (logits, labels), N * C * 4)}
    tfns = _torch_fns()
    rows = []
    for name, (fn, host, nbytes) in cases.items():
        args = [cp.asarray(a) for a in host]
        targs = [torch.as_tensor(a, device="cuda") for a in host]
        kf = kfuse.jit(fn)
        tc = torch.compile(tfns[name])
        want = np.asarray(fn(*host), dtype=np.float64)
        scale = float(np.max(np.abs(want))) or 1.0
        errs = {"kfuse[cuda]": float(np.max(np.abs(cp.asnumpy(kf(*args)) - want))) / scale,
                "torch.compile": float(np.max(np.abs(tc(*targs).cpu().numpy() - want))) / scale}
        peers = {"kfuse[cuda]": lambda: kf(*args), "torch.compile": lambda: tc(*targs),
                 "cupy eager": lambda: fn(*args)}
        for k in list(peers):
            try:
                peers[k]()
            except Exception as e:      # CuPy eager: np.take's mode= (not in CuPy)
                print(f"{name}: {k} skipped ({type(e).__name__}: {e})")
                del peers[k]
        times = interleaved(peers)
        copy = copy_ms(nbytes)
        rows += [(name, k, ms, copy / ms * 100, errs.get(k, float("nan"))) for k, ms in times.items()]
    text = peer_timing.table("gather_bench", f"embedding: table {V}x{D}, {B} int64 indices; cross-entropy: logits "
                 f"{N}x{C}. ms: median of 15 rounds of 10 calls; % copy: a cupy copy of the bytes the "
                 "case must move (gathered rows read and written; logits read once), timed in this run.", rows)
    print(text)
    with open(os.path.join(out_dir, "gather_bench.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
