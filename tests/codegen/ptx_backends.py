"""The machine's ``ptxas``, and :func:`compile_to_ptx`, which emits a function's kernels on one GPU
backend and checks their PTX. Tests take the backends from the ``backend`` fixture with
``@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)`` (CUDA C always, through NVRTC;
Numba-CUDA where numba-cuda imports: its PTX needs libNVVM, not a GPU)."""
import os
import shutil
import subprocess

import pytest

import kfuse

PTXAS = shutil.which("ptxas") or ("/usr/local/bin/ptxas" if os.path.exists("/usr/local/bin/ptxas") else None)


def compile_to_ptx(fn, backend: str, specs, tmp_path, tag: str) -> str:
    """The generated source of ``fn``'s kernels on ``backend`` for argument ``specs``; each kernel's
    PTX (sm_90) has an entry and, where ptxas is on the machine, assembles. bfloat16 specs skip
    on Numba-CUDA (the CUDA C backend's only)."""
    pytest.importorskip("cuda.bindings.nvrtc")
    if backend == "numba-cuda" and any(s.startswith("bf16") for s in specs):
        pytest.skip("bfloat16 runs on the CUDA C backend only")
    kernels = kfuse.jit(fn, backend=backend).lower(*specs).kernels(for_gpu=True)
    if backend == "cuda":
        from kfuse.codegen import cuda, nvrtc
        srcs = [cuda.emit(k) for k in kernels]
        ptxs = [nvrtc.compile(s, arch="sm_90").ptx for s in srcs]
    else:
        from kfuse.codegen import numba_cuda
        srcs = [numba_cuda.emit(k) for k in kernels]
        ptxs = [numba_cuda.compile_ptx(s, arch="sm_90") for s in srcs]
    for k, ptx in enumerate(ptxs):
        assert ".entry" in ptx
        if PTXAS:
            from kfuse.codegen.nvrtc import for_installed
            path = tmp_path / f"{tag}_{k}.ptx"
            path.write_text(for_installed(ptx))
            r = subprocess.run([PTXAS, "-arch=sm_90", str(path), "-o", os.devnull], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr[-2000:]
    return "\n".join(srcs)
