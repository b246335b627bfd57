"""CUDA C source -> PTX and CUBIN through NVRTC (``cuda.bindings.nvrtc``); the only NVRTC user.

NVRTC runs without a GPU or driver, so code can be compiled and inspected anywhere. The CUBIN is
what the runtime loads (a CUDA 13.0 driver cannot JIT the PTX ISA 9.5 that NVRTC 13.5 emits); the
PTX is kept for dumps. A dump is written for a chosen PTX ISA (:func:`ptx_dump`): by default the
newest that both NVRTC and the installed driver (or, without one, the ``ptxas`` on PATH) read,
its ``.version`` line lowered to it (:func:`with_ptx_isa`). On a compile error the source is saved
(under ``KFUSE_DUMP_DIR`` or a temp dir) and :class:`~kfuse.errors.CompileError` names it.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile

from ..errors import CompileError
from ..records import record

# --fmad=false: every float add, subtract and multiply rounds on its own, as NumPy's ufunc loops do.
# With contraction ptxas fuses a product into a later subtraction even where the rounded product is
# used too: std(x * x) of one element came out > 0 (fma(x, x, -fl(x*x)) is fl(x*x)'s rounding
# error; fuzz seed 41 #3720, 2026-11-25). libdevice's own fma calls are unaffected.
DEFAULT_OPTIONS = ("-std=c++17", "--fmad=false")


@record
class CompiledCuda:
    """NVRTC's result for one source: PTX, CUBIN, log, options, version and arch."""
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


# ---- the PTX ISA a dump is written for ----------------------------------------------------------
# CUDA release -> the newest PTX ISA its ptxas / driver reads (PTX ISA manual, release notes).
CUDA_PTX_ISA = {(12, 0): (8, 0), (12, 1): (8, 1), (12, 2): (8, 2), (12, 3): (8, 3), (12, 4): (8, 4),
                (12, 5): (8, 5), (12, 6): (8, 5), (12, 8): (8, 7), (12, 9): (8, 8), (13, 0): (9, 0),
                (13, 1): (9, 1)}


def _isa(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", str(text))
    if not m:
        raise ValueError(f"bad PTX ISA version {text!r} (expected e.g. 9.0)")
    return int(m.group(1)), int(m.group(2))


def isa_of_cuda(version: tuple[int, int]) -> tuple[int, int]:
    """The newest PTX ISA that CUDA ``version`` (major, minor) reads: the table, or for a release
    after it in CUDA 13, ISA 9.minor (13.5 writes 9.5), else the newest listed release below it."""
    version = tuple(version[:2])
    if version in CUDA_PTX_ISA:
        return CUDA_PTX_ISA[version]
    if version[0] == 13:
        return 9, version[1]
    older = [v for v in CUDA_PTX_ISA if v <= version]
    return CUDA_PTX_ISA[max(older)] if older else (7, 0)


def driver_cuda_version() -> tuple[int, int] | None:
    """The CUDA version of the installed driver (``cuDriverGetVersion``), or None without one."""
    try:
        from cuda.bindings import driver
        err, v = driver.cuDriverGetVersion()
    except Exception:               # no libcuda on this machine
        return None
    if int(err) != 0 or not v:
        return None
    return int(v) // 1000, (int(v) % 1000) // 10


def ptxas_cuda_version(ptxas: str | None = None) -> tuple[int, int] | None:
    """The CUDA release of ``ptxas`` (default: the one on PATH), from ``ptxas --version``."""
    import shutil
    import subprocess
    ptxas = ptxas or shutil.which("ptxas")
    if not ptxas:
        return None
    try:
        out = subprocess.run([ptxas, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release (\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


@record
class PtxTarget:
    """The PTX ISA a dump is written for and why (``reason`` names the reader it must satisfy)."""
    isa: tuple[int, int]
    reason: str

    @property
    def text(self) -> str:
        return f"{self.isa[0]}.{self.isa[1]}"


def default_ptx_target(nvrtc_isa: tuple[int, int]) -> PtxTarget:
    """The newest PTX ISA that both NVRTC (``nvrtc_isa``: what it writes) and the installed driver
    accept; without a driver, the ``ptxas`` on PATH; with neither, NVRTC's own."""
    driver = driver_cuda_version()
    if driver is not None:
        reader, isa = f"the CUDA {driver[0]}.{driver[1]} driver", isa_of_cuda(driver)
    else:
        ptxas = ptxas_cuda_version()
        if ptxas is None:
            return PtxTarget(nvrtc_isa, "NVRTC's own (no driver or ptxas found)")
        reader, isa = f"ptxas {ptxas[0]}.{ptxas[1]}", isa_of_cuda(ptxas)
    if isa >= nvrtc_isa:
        return PtxTarget(nvrtc_isa, f"NVRTC's own, which {reader} reads")
    return PtxTarget(isa, f"the newest {reader} reads")


def with_ptx_isa(ptx: str, isa: str | tuple[int, int]) -> str:
    """The PTX with its ``.version`` set to ``isa`` when that is older than what NVRTC wrote, so an
    older ptxas or driver reads it. Valid when the kernel uses no instruction newer than ``isa``,
    which holds for kfuse's generated code (loads, stores, shuffles, math, cp.async, mma.sync:
    ISA <= 7.8); a newer ``isa`` than the PTX's is refused (NVRTC wrote for what it knows)."""
    want = isa if isinstance(isa, tuple) else _isa(isa)
    cur = ptx_isa_version(ptx)
    if cur is None:
        return ptx
    if want > _isa(cur):
        raise ValueError(f"PTX ISA {want[0]}.{want[1]} is newer than the {cur} this NVRTC writes")
    return re.sub(r"^(\s*\.version\s+)\d+\.\d+", rf"\g<1>{want[0]}.{want[1]}", ptx, count=1, flags=re.M)


def for_installed(ptx: str) -> str:
    """``ptx`` (NVRTC's or NVVM's) written for the default target (:func:`default_ptx_target`)."""
    cur = ptx_isa_version(ptx)
    return ptx if cur is None else with_ptx_isa(ptx, default_ptx_target(_isa(cur)).isa)


def one_module(ptxs: list[str]) -> str:
    """Several kernels' PTX as one module (one file ptxas reads): the first module's
    ``.version``/``.target``/``.address_size`` directives, dropped from the others, as is a
    one-line module-scope declaration seen before (the CUDA prelude's constants)."""
    head = re.compile(r"^\s*\.(version|target|address_size)\b.*$\n?", re.M)
    decl = re.compile(r"^\.(?:global|const|extern|visible \.global)\b[^\n{]*;$")
    seen: set[str] = set()
    out = []
    for k, p in enumerate(ptxs):
        lines = []
        for line in (p if k == 0 else head.sub("", p)).split("\n"):
            if decl.match(line.strip()) and line.startswith("."):
                if line in seen:
                    continue
                seen.add(line)
            lines.append(line)
        out.append("\n".join(lines))
    return "\n".join(out)


def ptx_dump(compiled: "CompiledCuda", ptx_isa: str | None = None) -> str:
    """The PTX of ``compiled`` written for ``ptx_isa`` (default: :func:`default_ptx_target`), with a
    header comment naming the NVRTC, the ISA and the arch it was made for."""
    nv_isa = _isa(ptx_isa_version(compiled.ptx) or "0.0")
    target = default_ptx_target(nv_isa) if ptx_isa is None else PtxTarget(_isa(ptx_isa), "--ptx-isa")
    nv = ".".join(map(str, compiled.nvrtc_version))
    head = (f"// kfuse: NVRTC {nv}, PTX ISA {target.text} ({target.reason}; NVRTC writes "
            f"{nv_isa[0]}.{nv_isa[1]}), arch {compiled.arch}\n")
    return head + with_ptx_isa(compiled.ptx, target.isa)
