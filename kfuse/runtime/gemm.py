"""Run GEMMs with fused epilogues on CuPy arrays: the generated kernel or cuBLAS + epilogue.

``run_gemm(a, b, epilogue_inputs, spec, tile)`` reads the operands' layout (which dim has unit
stride, whether 16-byte ``cp.async`` is possible) off the arrays, specialises ``spec`` to it,
compiles with :func:`kfuse.codegen.nvrtc.compile` for the device's exact arch (the CUBIN is
loaded; the PTX is kept for dumps), memoises modules by source text, and launches on the current
CuPy stream. Two candidates per call: ``"generated"`` (one fused tensor-core kernel: on sm_90 the
TMA + wgmma kernel of :mod:`kfuse.codegen.gemm_wgmma` for 16-byte-aligned layouts with a K-major A,
launched by :mod:`kfuse.runtime.gemm_tma`; else the ``mma.sync`` kernel) and
``"cublas"`` (``cupy.matmul`` + one generated epilogue kernel, in place when the dtypes allow).
``backend="auto"`` times both once per shape bucket (powers of two of batch, M, N, K) and keeps
the faster; :attr:`GemmRunner.choices` records every pick (the plan/explain can print it).
bfloat16 arrays are CuPy ``uint16`` arrays holding the bits (``spec.dtype == "bf16"``); CuPy's
matmul cannot take them, so bf16 always uses the generated kernel. int8/uint8 operands run the
generated int8 tensor-core kernel (int32 sums; CuPy has no int8 cuBLAS path), each operand packed
K-major first unless it is K-major with 16-byte rows already (:mod:`kfuse.runtime.gemm_pack`).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from ..codegen import gemm_wgmma, nvrtc
from ..codegen.gemm_cuda import GemmTile, default_tile, emit_epilogue_kernel, emit_gemm
from ..codegen.gemm_spec import INT8, GemmEpilogue, GemmSpec, epilogue_of_kernel
from ..errors import DeviceError, UnsupportedError
from ..fusion.cost import WGMMA_ARCHS
from ..fusion.gemm_int8 import int8_operands
from ..fusion.gemm_registers import epilogue_in_registers
from . import gemm_tma
from .cublas_matmul import matmul, tf32
from .gemm_pack import kmajor_operands

_NP_DT = {"f16": np.float16, "f32": np.float32, "bf16": np.uint16, "f64": np.float64, "i16": np.int16,
          "i32": np.int32}
_OPERAND = {np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.int8): "s8",
            np.dtype(np.uint8): "u8"}


def _dtype_name(arr, hint: str | None) -> str:
    if hint == "bf16" or str(arr.dtype) == "bfloat16":
        return "bf16"
    name = _OPERAND.get(np.dtype(arr.dtype))
    if name is None:
        raise UnsupportedError(f"kfuse GEMM: operand dtype {arr.dtype} not supported (f16, bf16, f32, int8, uint8)")
    return name


def _default_epilogue(dt: str) -> GemmEpilogue:
    """The product stored as it is: float operands' dtype, an int8 product's int32 sums."""
    return GemmEpilogue(out_dtype="i32", product_dtype="int32") if dt in INT8 else GemmEpilogue(out_dtype=dt)


def _strides3(x):
    """(batch, row, col) strides in elements of a 2-D or 3-D array."""
    st = [s // x.itemsize for s in x.strides]
    if x.ndim == 2:
        return 0, st[0], st[1]
    return st[0], st[1], st[2]


@dataclasses.dataclass
class GemmCall:
    """Everything about one call that is not the arrays: shapes, strides and the chosen spec."""
    spec: GemmSpec
    batch: int
    M: int
    N: int
    K: int
    a_strides: tuple[int, int, int]   # (b, m, k)
    b_strides: tuple[int, int, int]   # (b, k, n)

    @property
    def bucket(self) -> tuple[int, ...]:
        return tuple(1 << max(0, math.ceil(math.log2(max(1, v)))) for v in (self.batch, self.M, self.N, self.K))


def describe_operands(a, b, spec: GemmSpec, dtype: str | None = None) -> GemmCall:
    """Shapes, strides and the spec specialised to the operands' layout and alignment."""
    if a.ndim not in (2, 3) or b.ndim not in (2, 3):
        raise UnsupportedError("kfuse GEMM: operands must be 2-D or 3-D (batched)")
    M, K = a.shape[-2:]
    K2, N = b.shape[-2:]
    if K != K2:
        raise ValueError(f"kfuse GEMM: inner dims differ: {a.shape} @ {b.shape}")
    ba = a.shape[0] if a.ndim == 3 else 1
    bb = b.shape[0] if b.ndim == 3 else 1
    if ba != bb and 1 not in (ba, bb):
        raise ValueError(f"kfuse GEMM: batch dims differ: {a.shape} @ {b.shape}")
    batch = max(ba, bb)
    da, db = _dtype_name(a, dtype), _dtype_name(b, dtype)
    if da != db and not (da in INT8 and db in INT8):
        raise UnsupportedError(f"kfuse GEMM: operand dtypes differ ({da}, {db}); cast first")
    sa, sb = list(_strides3(a)), list(_strides3(b))
    if ba == 1:
        sa[0] = 0
    if bb == 1:
        sb[0] = 0
    # A is (m, k): k-major when k has unit stride (or K == 1); B is (k, n): k-major when k does.
    def kmajor(sk, so, outer_size):        # unit stride on k? (size-1 outer dims don't count)
        if sk == 1 and (so != 1 or outer_size == 1):
            return True
        if so == 1:
            return False
        return abs(sk) <= abs(so)

    a_kmajor = kmajor(sa[2], sa[1], M)
    b_kmajor = kmajor(sb[1], sb[2], N)

    chunk = 16 // a.itemsize            # elements of a 16-byte cp.async

    def ok(inner, outer, outer_size, bstride, ptr):
        return (inner == 1 and (outer % chunk == 0 or outer_size == 1) and bstride % chunk == 0
                and ptr % 16 == 0)

    al_a = ok(sa[2], sa[1], M, sa[0], a.data.ptr) if a_kmajor else ok(sa[1], sa[2], K, sa[0], a.data.ptr)
    al_b = ok(sb[1], sb[2], N, sb[0], b.data.ptr) if b_kmajor else ok(sb[2], sb[1], K, sb[0], b.data.ptr)
    if da == "f32":
        al_a = al_b = True          # the FMA kernel loads element by element anyway
    spec = dataclasses.replace(spec, dtype=da, a_kmajor=bool(a_kmajor), b_kmajor=bool(b_kmajor),
                               aligned=bool(al_a and al_b), b_dtype=db if db != da else None)
    return GemmCall(spec, batch, int(M), int(N), int(K), tuple(sa), tuple(sb))


def epilogue_args(epilogue_inputs, ep: GemmEpilogue, shape3) -> list:
    """The kernels' epilogue-input tail: per input its array and (batch, m, n) element strides
    of its broadcast to ``shape3`` (checked against the input's kind)."""
    import cupy as cp
    ep_args = []
    for x, desc in zip(epilogue_inputs, ep.inputs):
        if x.ndim > 3:
            raise ValueError("kfuse GEMM: epilogue inputs must broadcast to the output shape")
        if desc.dims is not None:       # each dim of x runs along the output coordinate named
            if x.ndim != len(desc.dims):
                raise ValueError(f"kfuse GEMM: epilogue input of shape {x.shape} is not {desc.dims!r}")
            st = dict(zip(desc.dims, (s // x.itemsize for s in x.strides)))
            sb_, sm_, sn_ = (st.get(c, 0) for c in "bmn")
        else:
            sb_, sm_, sn_ = (s // x.itemsize for s in cp.broadcast_to(x, shape3).strides)
        if (desc.kind == "row" and sm_ != 0) or (desc.kind == "col" and sn_ != 0) or (
                desc.kind == "scalar" and x.size != 1):
            raise ValueError(f"kfuse GEMM: epilogue input of shape {x.shape} is not a {desc.kind!r} input")
        ep_args += [x, np.int64(sb_), np.int64(sm_), np.int64(sn_)]
    return ep_args


class GemmRunner:
    """Compiled-module cache and per-bucket backend choices (one per process is plenty)."""

    def __init__(self):
        self._modules: dict[tuple[str, str], object] = {}
        self.choices: dict[tuple, str] = {}        # (spec key, tile, bucket) -> backend
        self.timings: dict[tuple, dict[str, float]] = {}
        self.last_choice: str | None = None
        self.last_source: str | None = None
        self._sources: dict[tuple, str] = {}      # (spec, tile / vec) -> source: emit once

    def source(self, kind: str, spec: GemmSpec, extra) -> str:
        key = (kind, spec, extra)
        src = self._sources.get(key)
        if src is None:
            src = (emit_gemm(spec, extra) if kind == "gemm" else gemm_wgmma.emit_wgmma(spec, extra)
                   if kind == "wgmma" else emit_epilogue_kernel(spec, vec=extra[0], reverse=extra[1]))
            self._sources[key] = src
        return src

    # -- compile + load -------------------------------------------------------------------
    @staticmethod
    def _device():
        """(compute capability as an int, SM count) of the current device."""
        import cupy as cp
        dev = cp.cuda.Device()
        return int(dev.compute_capability), dev.attributes["MultiProcessorCount"]

    def function(self, source: str, name: str, arch: str | None = None):
        import cupy as cp
        arch = arch or f"sm_{self._device()[0]}"
        key = (source, arch)
        fn = self._modules.get(key)
        if fn is None:
            compiled = nvrtc.compile(source, arch, name=name)
            mod = cp.cuda.function.Module()
            mod.load(compiled.cubin)
            fn = (mod, mod.get_function(name), compiled)
            self._modules[key] = fn
        return fn[1]

    # -- the two candidates ---------------------------------------------------------------
    def run_generated(self, a, b, call: GemmCall, ep_args: list, params, tile: GemmTile | None, out):
        import cupy as cp
        spec = call.spec
        if tile is None or isinstance(tile, gemm_wgmma.WgmmaTile):
            cc, n_sms = self._device()
            if call.K > 0 and gemm_tma.usable(spec, call.a_strides, call.b_strides, cc):
                tile = tile or gemm_wgmma.default_tile(spec, call.M, call.N, call.batch, n_sms)
                src = self.source("wgmma", spec, tile)
                self.last_source = src
                fn = self.function(src, "kfuse_gemm_tma", gemm_wgmma.ARCH)
                return gemm_tma.launch(fn, a, b, out, call, tile, ep_args, params, n_sms)
            tile = None                 # this layout or device takes the mma.sync kernel
        tile = tile or default_tile(call.M, call.N, call.K, spec.dtype, aligned=spec.aligned)
        src = self.source("gemm", spec, tile)
        self.last_source = src
        fn = self.function(src, "kfuse_gemm")
        smem = tile.smem_bytes(spec)
        if smem > 48 * 1024:
            attr = getattr(cp.cuda.driver, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8)
            cp.cuda.driver.funcSetAttribute(fn.ptr, attr, smem)
        if spec.tensor_core:
            tiles = math.ceil(call.M / tile.block_m) * math.ceil(call.N / tile.block_n)
            threads = tile.threads
        else:
            tiles = math.ceil(call.M / 64) * math.ceil(call.N / 64)
            threads = 256
        sCb = out.strides[0] // out.itemsize if out.ndim == 3 else 0
        sCm = out.strides[-2] // out.itemsize
        args = [a, b, out, np.int32(call.M), np.int32(call.N), np.int32(call.K),
                *map(np.int64, call.a_strides), np.int64(call.b_strides[0]),
                np.int64(call.b_strides[1]), np.int64(call.b_strides[2]), np.int64(sCb), np.int64(sCm)]
        args += ep_args + [np.float32(p) for p in params]
        if tiles and call.batch:
            fn((tiles, 1, call.batch), (threads, 1, 1), tuple(args), shared_mem=smem)
        return out

    def run_cublas(self, a, b, call: GemmCall, ep_args: list, params, out, allow_tf32: bool = False,
                   reverse: bool = False):
        """cuBLAS product, then the epilogue kernel over it. ``out=None``: the epilogue writes in
        place into the product's buffer when the output dtype is the product's (no second
        allocation; the lines the epilogue rewrites are the ones cuBLAS just wrote, L2-warm), and
        that buffer is returned. ``reverse``: the epilogue walks rows last-first (meant to start on
        the rows cuBLAS wrote last; measured no faster on an H200, 2026-11-22: off by default)."""
        import cupy as cp
        spec = call.spec
        if allow_tf32 and spec.dtype == "f32":
            with tf32():
                x = matmul(a, b)
        else:
            x = matmul(a, b)
        x3 = x.reshape(call.batch, call.M, call.N)
        in_place = out is None and np.dtype(x.dtype) == np.dtype(_NP_DT[spec.out_dtype]) and x.flags.c_contiguous
        if out is None:
            out = x if in_place else cp.empty(x.shape, dtype=_NP_DT[spec.out_dtype])
        if not spec.epilogue.body and spec.out_dtype == spec.dtype:
            if out is not x:
                out[...] = x.reshape(out.shape)
            return out
        self.launch_epilogue(x3, out.reshape(call.batch, call.M, call.N), spec, ep_args, params, reverse)
        return out

    def launch_epilogue(self, x3, o3, spec: GemmSpec, ep_args: list, params=(), reverse: bool = False):
        """The cuBLAS candidate's epilogue kernel: ``o3 = epilogue(x3)`` over (batch, M, N) views
        (``o3`` may be ``x3``: in place). One block per row; 16-byte accesses when rows allow."""
        batch, M, N = x3.shape
        vec = 8 if N % 8 == 0 and x3.data.ptr % 16 == 0 and o3.data.ptr % 16 == 0 and \
            x3.strides[-1] == x3.itemsize and o3.strides[-1] == o3.itemsize and \
            all((s // x3.itemsize) % 8 == 0 for s in x3.strides[:-1]) and \
            all((s // o3.itemsize) % 8 == 0 for s in o3.strides[:-1]) else 1
        fn = self.function(self.source("epi", spec, (vec, reverse)), "kfuse_gemm_epilogue")
        rows = batch * M
        tx = 256 if N // vec >= 256 else max(32, 32 * math.ceil(N / vec / 32))
        ty = max(1, 256 // tx)                  # short rows: several per block
        args = [x3, o3, np.int32(M), np.int32(N), np.int32(batch),
                np.int64(x3.strides[0] // x3.itemsize), np.int64(x3.strides[1] // x3.itemsize),
                np.int64(o3.strides[0] // o3.itemsize),
                np.int64(o3.strides[1] // o3.itemsize)] + list(ep_args) + [np.float32(p) for p in params]
        if rows:
            fn((math.ceil(rows / ty), 1, 1), (tx, ty, 1), tuple(args))
        return o3

    def run_cublas_epilogue_only(self, x, bias, spec: GemmSpec, M: int, N: int, reverse: bool = False):
        """Benchmark helper: the bias-epilogue kernel alone, in place over a (M, N) product ``x``."""
        x3 = x.reshape(1, M, N)
        return self.launch_epilogue(x3, x3, spec, [bias, np.int64(0), np.int64(0), np.int64(1)], (), reverse)

    # -- entry ----------------------------------------------------------------------------
    def run(self, a, b, epilogue_inputs=(), spec: GemmSpec | None = None, tile: GemmTile | None = None,
            *, params=(), backend: str = "auto", dtype: str | None = None, out=None, reverse: bool = False):
        import cupy as cp
        if not isinstance(a, cp.ndarray) or not isinstance(b, cp.ndarray):
            raise DeviceError("kfuse GEMM: operands must be CuPy arrays on the GPU")
        dtype = dtype or (spec.dtype if spec is not None and spec.dtype == "bf16" else None)   # (bf16: uint16 bits)
        spec = spec or GemmSpec(dtype=_dtype_name(a, dtype), epilogue=_default_epilogue(_dtype_name(a, dtype)))
        if _dtype_name(a, dtype) in INT8:
            a, b = kmajor_operands(self.function, a, b)
        call = describe_operands(a, b, spec, dtype)
        if call.spec.int8 and call.K == 0:      # nothing is read: any layout will do
            call.spec = dataclasses.replace(call.spec, a_kmajor=True, b_kmajor=True, aligned=True)
        spec = call.spec
        ep = spec.epilogue
        if len(epilogue_inputs) != len(ep.inputs) or len(params) != ep.n_params:
            raise ValueError(f"kfuse GEMM: epilogue wants {len(ep.inputs)} inputs and "
                             f"{ep.n_params} scalars, got {len(epilogue_inputs)} and {len(params)}")
        shape3 = (call.batch, call.M, call.N)
        ep_args = epilogue_args(epilogue_inputs, ep, shape3)
        out_shape = shape3 if (a.ndim == 3 or b.ndim == 3) else shape3[1:]
        if call.M == 0 or call.N == 0 or call.batch == 0:
            return out if out is not None else cp.empty(out_shape, dtype=_NP_DT[spec.out_dtype])
        # the cuBLAS candidate: CuPy's matmul takes f16/f32 (bf16 is uint16 bits to CuPy); f32
        # with allow_tf32 runs cuBLAS with TF32 compute (the generated kernel stays plain FMA)
        cublas_ok = spec.dtype != "bf16" and not spec.int8
        if backend == "auto":
            backend = self._choose(a, b, call, ep_args, params, tile, out, cublas_ok)
        self.last_choice = backend
        if backend == "cublas":
            if not cublas_ok:
                raise UnsupportedError(f"kfuse GEMM: the cuBLAS candidate cannot take {spec.dtype} operands")
            res = self.run_cublas(a, b, call, ep_args, params, out, spec.allow_tf32, reverse)
            return res.reshape(out_shape)
        if backend != "generated":
            raise ValueError(f"backend {backend!r} (auto, generated, cublas)")
        if out is None:
            out = cp.empty(out_shape, dtype=_NP_DT[spec.out_dtype])
        return self.run_generated(a, b, call, ep_args, params, tile, out)

    def _choose(self, a, b, call, ep_args, params, tile, out, cublas_ok) -> str:
        key = (call.spec.key(), tile.name() if tile else "default", call.bucket)
        got = self.choices.get(key)
        if got is not None:
            return got
        if not cublas_ok:
            self.choices[key] = "generated"
            return "generated"
        import cupy as cp
        o = out if out is not None else cp.empty(
            (call.batch, call.M, call.N) if (a.ndim == 3 or b.ndim == 3) else (call.M, call.N),
            dtype=_NP_DT[call.spec.out_dtype])
        t = {"generated": self._time(lambda: self.run_generated(a, b, call, ep_args, params, tile, o)),
             "cublas": self._time(lambda: self.run_cublas(a, b, call, ep_args, params, out,
                                                          call.spec.allow_tf32))}
        self.timings[key] = t
        self.choices[key] = min(t, key=t.get)
        return self.choices[key]

    @staticmethod
    def _time(fn, reps: int = 3) -> float:
        import cupy as cp
        fn()                                  # compile + warm up
        fn()
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        return cp.cuda.get_elapsed_time(start, stop) / reps

    def describe_choices(self) -> str:
        lines = []
        for (k, t, bucket), v in self.choices.items():
            ms = self.timings.get((k, t, bucket), {})
            extra = ", ".join(f"{n} {x * 1e3:.1f} us" for n, x in ms.items())
            lines.append(f"gemm {k} tile {t} bucket {bucket}: {v}" + (f" ({extra})" if extra else ""))
        return "\n".join(lines)


@functools.cache
def default_runner() -> GemmRunner:
    """The process's runner (its module memo and backend picks are shared by every caller)."""
    return GemmRunner()


def run_gemm(a, b, epilogue_inputs=(), spec: GemmSpec | None = None, tile: GemmTile | None = None,
             *, params=(), backend: str = "auto", dtype: str | None = None, out=None, runner=None):
    # out=None lets the cuBLAS candidate run its epilogue in place over cuBLAS's result
    """``epilogue(a @ b)`` as a CuPy array (2-D, or 3-D when either operand is batched).

    ``spec`` gives the operand dtype, the epilogue and allow_tf32; its layout fields are
    recomputed from the arrays. ``params`` are the epilogue's run-time f32 scalars. ``backend``:
    "auto" (time both candidates once per shape bucket), "generated" or "cublas". The pick is in
    ``runner.last_choice`` / ``runner.choices``."""
    return (runner or default_runner()).run(a, b, epilogue_inputs, spec, tile, params=params,
                                            backend=backend, dtype=dtype, out=out)


def group_epilogue_spec(group, kir) -> tuple[GemmEpilogue, tuple[int, ...]] | None:
    """A matmul group's epilogue for the GEMM kernels (its KernelIR's statements after the
    contraction) and the slots of ``group.inputs`` feeding its inputs, or None when the group's
    epilogue is not one the generated GEMM applies in registers (the plan's rule,
    ``fusion.gemm_registers.epilogue_in_registers``)."""
    if kir.contraction is None or not epilogue_in_registers(group):
        return None
    return epilogue_of_kernel(kir)


def _short_dtype(dt) -> str | None:
    return {"float16": "f16", "float32": "f32"}.get(str(dt))


def _group_spec(group, ep: GemmEpilogue) -> GemmSpec | None:
    """The spec of a matmul group's generated kernel: its operands' dtype (an int8 product's
    int8/uint8 sources, K-major as the runtime packs them), or None outside f16/f32/int8."""
    i8 = int8_operands(group.anchor)
    if i8 is not None:
        return GemmSpec(i8[0], ep, a_kmajor=True, b_kmajor=True, b_dtype=i8[1] if i8[1] != i8[0] else None)
    dt = _short_dtype(group.anchor.inputs[0].dtype)
    return GemmSpec(dt, ep) if dt else None


def group_runner(group, kir):
    """For a plan's matmul group that picked ``"generated"``: a callable
    ``(ins, out, allow_tf32) -> out`` running the one fused kernel on the group's input arrays
    (``ins`` in ``group.inputs`` order; an int8 product's operands as the int8 arrays its casts
    read), or None when the group's operands or epilogue are outside what the generated kernel
    takes (the caller then runs cuBLAS + the epilogue kernel)."""
    c = kir.contraction
    got = group_epilogue_spec(group, kir)
    int8 = int8_operands(group.anchor) is not None      # its casts are the int8 kernel's widening
    if got is None or (not int8 and any(k == "cast" for k, _ in c.lhs_steps + c.rhs_steps)):
        return None
    ep, slots = got
    spec0 = _group_spec(group, ep) or GemmSpec("f16", ep)
    runner = default_runner()

    def side(x, steps):
        import cupy as cp
        for kind, perm in steps:
            if kind == "permute":
                x = cp.transpose(x, perm)
        return x

    def run(ins, out, allow_tf32=False):
        a, b = side(ins[c.lhs], c.lhs_steps), side(ins[c.rhs], c.rhs_steps)
        if a.ndim not in (2, 3) or b.ndim not in (2, 3):
            raise UnsupportedError("kfuse GEMM: generated kernel takes 2-D/3-D operands")
        return runner.run(a, b, [ins[k] for k in slots], spec0, None, backend="generated", out=out)
    return run


def group_epilogue(group, kir):
    """For a plan's matmul group on the cuBLAS path: a callable ``(ins, prod) -> prod`` applying
    the group's epilogue **in place** over cuBLAS's product ``prod`` with the GEMM epilogue kernel
    (16-byte accesses, hardware tanh for 16-bit outputs), or None when the epilogue is not
    expressible (the caller then runs the group's own elementwise kernel) or its output dtype is
    not the product's."""
    got = group_epilogue_spec(group, kir)
    pdt = _short_dtype(kir.contraction.dtype) if got else None
    if pdt is None or got[0].out_dtype != pdt:
        return None
    ep, slots = got
    spec = GemmSpec(dtype=pdt, epilogue=ep)
    runner = default_runner()

    def run(ins, prod):
        if prod.ndim not in (2, 3) or not prod.flags.c_contiguous:
            raise UnsupportedError("kfuse GEMM epilogue: a 2-D/3-D contiguous product")
        x3 = prod.reshape((1,) * (3 - prod.ndim) + prod.shape)
        runner.launch_epilogue(x3, x3, spec, epilogue_args([ins[k] for k in slots], ep, x3.shape))
        return prod
    return run


def _transposes(steps) -> bool:
    """Whether an operand's permute steps swap its last two axes (its unit-stride dim moves)."""
    flip = False
    for kind, perm in steps:
        if kind == "permute" and len(perm) >= 2 and tuple(perm[-2:]) == (len(perm) - 1, len(perm) - 2):
            flip = not flip
    return flip


def group_sources(group, kir, arch: str | None = None) -> list[str]:
    """The CUDA C a matmul group runs besides cuBLAS, for stage dumps (``dump-ptx``): the generated
    fused GEMM (plan picked ``"generated"``; on ``arch`` sm_90 the TMA + wgmma kernel where the
    operands' layout, C-contiguous before the group's permutes, allows it) or the GEMM epilogue
    kernel (cuBLAS path); [] when the group's epilogue does not translate (the group's own
    elementwise kernel runs then). Compile each for ``gemm_wgmma.arch_for(source, arch)``."""
    got = group_epilogue_spec(group, kir)
    spec = _group_spec(group, got[0]) if got else None
    if spec is None:
        return []
    ep = got[0]
    if getattr(getattr(group, "cost", None), "impl", "") == "generated":
        a = group.anchor
        M, N, K = a.shape[-2], a.shape[-1], a.inputs[0].shape[-1]
        c = kir.contraction
        if not spec.int8:
            spec = dataclasses.replace(spec, a_kmajor=not _transposes(c.lhs_steps), b_kmajor=_transposes(c.rhs_steps))
        if arch in WGMMA_ARCHS and gemm_wgmma.supports(spec):
            batch = math.prod(a.shape[:-2]) if len(a.shape) > 2 else 1
            return [gemm_wgmma.emit_wgmma(spec, gemm_wgmma.default_tile(spec, M, N, batch))]
        return [emit_gemm(spec, default_tile(M, N, K, spec.dtype))]
    if spec.int8:
        return []
    pdt = _short_dtype(kir.contraction.dtype)
    if pdt is None or ep.out_dtype != pdt:
        return []
    return [emit_epilogue_kernel(GemmSpec(pdt, ep))]
