"""Computed subscripts (a slice's start plus a loop variable) are rendered unsigned, so Numba emits
no negative-index wraparound for them and LLVM vectorises the loop: a stencil through slices."""
from __future__ import annotations

import re

import numpy as np

import kfuse


def stencil(u):
    return u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]


def test_sliced_stencil_subscripts_are_unsigned_and_the_loop_vectorises():
    u = np.random.default_rng(0).standard_normal((40, 72)).astype(np.float32)
    jf = kfuse.jit(stencil, backend="cpu")
    np.testing.assert_allclose(jf(u), stencil(u), rtol=1e-6, atol=1e-6)
    src = jf.lower(u).as_text("cpu")
    loads = re.findall(r"in0\[([^\]]*)\]", src)
    assert loads and all("np.uint64(" in ix for ix in loads if "s" in ix), loads
    glb: dict = {}
    exec(compile(src, "<stencil kernel>", "exec"), glb)      # a fresh dispatcher, compiled here
    seq = glb["kfuse_kernel_seq"]
    out = np.empty((38, 70), np.float32)
    seq(u, out, *[np.int64(v) for v in (38, 70, 1, 2, 1, 1, 1, 2, 1, 1)])
    np.testing.assert_allclose(out, stencil(u), rtol=1e-6, atol=1e-6)
    llvm = "".join(seq.inspect_llvm().values())
    # each of the five reads a vector load, none a gather of wrapped indices (what a signed
    # subscript's compare-and-select vectorises into)
    assert len(re.findall(r"load <\d+ x float>", llvm)) >= 5 and "masked.gather" not in llvm
