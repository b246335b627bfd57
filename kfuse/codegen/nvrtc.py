"""CUDA C source -> PTX and CUBIN through NVRTC (``cuda.bindings.nvrtc``); the only NVRTC user.

NVRTC runs without a GPU or driver, so code can be compiled and inspected anywhere. The CUBIN is
what the runtime loads (a CUDA 13.0 driver cannot JIT the PTX ISA 9.5 that NVRTC 13.5 emits); the
PTX is kept for dumps. :func:`ptx_for_ptxas` rewrites the PTX ``.version`` line so an older
``ptxas`` can validate it (see DESIGN.md, GPU facts). On a compile error the source is saved
(under ``KFUSE_DUMP_DIR`` or a temp dir) and :class:`~kfuse.errors.CompileError` names it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import tempfile

from ..errors import CompileError

# --fmad=false: every float add, subtract and multiply rounds on its own, as NumPy's ufunc loops do.
# With contraction ptxas fuses a product into a later subtraction even where the rounded product is
# used too: std(x * x) of one element came out > 0 (fma(x, x, -fl(x*x)) is fl(x*x)'s rounding
# error; fuzz seed 41 #3720, 2026-11-25). libdevice's own fma calls are unaffected.
DEFAULT_OPTIONS = ("-std=c++17", "--fmad=false")


@dataclasses.dataclass(frozen=True)
class CompiledCuda:
    ptx: str
    cubin: bytes
    log: str
    options: tuple[str, ...]
    nvrtc_version: tuple[int, int]
    arch: str = "sm_90"

    def __iter__(self):  # allows ``ptx, cubin = compile(...)``
        return iter((self.ptx, self.cubin))


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except Exception as e:  # pragma: no cover - depends on the machine
        raise CompileError(
            "kfuse: NVRTC is not available (pip install cuda-bindings nvidia-cuda-nvrtc): "
            f"{type(e).__name__}: {e}") from e
    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    nvrtc = _nvrtc()
    err, major, minor = nvrtc.nvrtcVersion()
    _check(nvrtc, err, "nvrtcVersion")
    return int(major), int(minor)


def _check(nvrtc, err, what: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"kfuse: {what} failed: {err}")


def _save_source(source: str, name: str) -> str:
    from .. import config
    d = config.get().dump_dir or os.path.join(tempfile.gettempdir(), "kfuse-nvrtc")
    os.makedirs(d, exist_ok=True)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = os.path.join(d, f"{name}-{digest}.cu")
    with open(path, "w") as f:
        f.write(source)
    return path


def normalize_arch(arch: str | int | tuple) -> str:
    """``"sm_90"``, ``"90"``, ``90`` or ``(9, 0)`` -> ``"sm_90"``."""
    if isinstance(arch, tuple):
        return f"sm_{arch[0]}{arch[1]}"
    s = str(arch).strip().lower()
    s = s.replace("compute_", "sm_")
    if not s.startswith("sm_"):
        s = "sm_" + s
    if not re.fullmatch(r"sm_\d+[a-z]?", s):
        raise ValueError(f"bad CUDA arch {arch!r} (expected e.g. sm_90)")
    return s


def compile(source: str, arch: str = "sm_90", options=(), name: str = "kfuse") -> CompiledCuda:
    """Compile CUDA C ``source`` for ``arch``; return PTX, CUBIN, the log and what was used."""
    nvrtc = _nvrtc()
    arch = normalize_arch(arch)
    opts = (f"--gpu-architecture={arch}",) + DEFAULT_OPTIONS + tuple(options)
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        log = _log(nvrtc, prog)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            path = _save_source(source, name)
            raise CompileError(f"kfuse: NVRTC failed to compile {name} for {arch} ({err.name}); "
                               f"source saved to {path}\n{log}")
        err, n = nvrtc.nvrtcGetPTXSize(prog)
        _check(nvrtc, err, "nvrtcGetPTXSize")
        buf = b" " * n
        (err,) = nvrtc.nvrtcGetPTX(prog, buf)
        _check(nvrtc, err, "nvrtcGetPTX")
        ptx = buf.rstrip(b"\0").decode()
        err, n = nvrtc.nvrtcGetCUBINSize(prog)
        _check(nvrtc, err, "nvrtcGetCUBINSize")
        cubin = b" " * n
        (err,) = nvrtc.nvrtcGetCUBIN(prog, cubin)
        _check(nvrtc, err, "nvrtcGetCUBIN")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    if config_dump_dir() is not None:
        _dump(source, ptx, cubin, name, arch)
    return CompiledCuda(ptx=ptx, cubin=bytes(cubin), log=log, options=opts,
                        nvrtc_version=nvrtc_version(), arch=arch)


def config_dump_dir() -> str | None:
    from .. import config
    return config.get().dump_dir


def _dump(source: str, ptx: str, cubin: bytes, name: str, arch: str) -> None:
    d = config_dump_dir()
    os.makedirs(d, exist_ok=True)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    base = os.path.join(d, f"{name}-{digest}-{arch}")
    for ext, data, mode in ((".cu", source, "w"), (".ptx", ptx, "w"), (".cubin", cubin, "wb")):
        with open(base + ext, mode) as f:
            f.write(data)


def _log(nvrtc, prog) -> str:
    err, n = nvrtc.nvrtcGetProgramLogSize(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or n <= 1:
        return ""
    buf = b" " * n
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.rstrip(b"\0").decode(errors="replace")


def ptx_isa_version(ptx: str) -> str | None:
    m = re.search(r"^\s*\.version\s+(\d+\.\d+)", ptx, re.M)
    return m.group(1) if m else None


def ptx_for_ptxas(ptx: str, isa: str = "9.0") -> str:
    """The PTX with its ``.version`` lowered to ``isa`` when newer, so an older ptxas (CUDA 13.0
    accepts ISA <= 9.0) can validate it. Valid when the kernel uses no instruction newer than
    ``isa``, which holds for kfuse's generated code (plain loads, stores, shuffles, math)."""
    cur = ptx_isa_version(ptx)
    if cur is None or tuple(map(int, cur.split("."))) <= tuple(map(int, isa.split("."))):
        return ptx
    return re.sub(r"^(\s*\.version\s+)\d+\.\d+", rf"\g<1>{isa}", ptx, count=1, flags=re.M)
