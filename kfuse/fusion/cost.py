"""The roofline cost model: device descriptions and the predicted cost of one kernel group.

``DeviceSpec`` holds what the planner needs to know about a device (bandwidth, peak FLOP/s per
dtype and unit, SMs, registers, shared memory, L2, launch overhead). Known devices are selected by
name (``get_device_spec("h100")``) so planning needs no GPU; :func:`from_properties` builds one
from a live device's property dict (the CUDA runtime calls it; this module never imports cupy).
Bandwidth and peaks are *achievable* figures (measured where we could: see DESIGN.md), not the
datasheet numbers, because predictions are compared with measurements.

:func:`estimate` gives a group's :class:`Cost`: bytes read/written, FLOPs (``ops.FLOP_WEIGHT``),
intensity and predicted time ``max(bytes/bw, flops/peak) + launch``; on a device with CPU costs
(``DeviceSpec.cpu``) the time is ``fusion/cpu_cost.py``'s (cache levels, threads, kinds of work).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Iterable, Mapping

import numpy as np

from ..ir.dtypes import is_float
from ..ir.graph import Node
from ..ir.ops import ELEMENTWISE, FLOP_WEIGHT, MOVEMENT, LEAF, REDUCE, SCAN, Op
from ..records import record
from . import cpu_cost, gpu_chunks
from .cpu_cost import CpuCosts, MemLevel
from .gemm_int8 import describe as describe_int8, int8_operands
from .gemm_registers import epilogue_in_registers
from .kinds import GroupKind

KiB = 1024
MiB = 1024 * 1024


@record
class StreamTile:
    """The elementwise launch shape a device takes for kernels that stream many full-size arrays,
    where a measured sweep beat the default (16-byte units, 128 threads, no register cap): it
    applies to kernels moving at least ``streams`` full-size arrays (inputs and outputs), of which
    at least ``inputs`` are read."""
    streams: int                # full-size arrays moved (read or written), at least
    inputs: int                 # of them read, at least
    vector_bytes: int           # bytes a vector unit
    threads: int                # a block
    min_blocks: int = 0         # resident blocks an SM the registers are capped for (__launch_bounds__; 0: none)
    one_pass: bool = False      # a grid covering the domain once, no grid-stride loop (Variant.exact)


@record
class RowCarveout:
    """The preferred L1/shared carve-out (percent of the SM's L1/shared memory as shared) of a
    one-pass row kernel, by its kind."""
    rows: int                   # the row held in registers, a full-size output written (softmax)
    reread: int                 # the row re-read through L1 by later passes (layernorm)
    reduction: int              # the row held in registers, one value a row written (row norm)


@record
class DeviceSpec:
    """What the cost model knows of a device: bandwidths, peak rates, caches, launch cost."""
    name: str
    kind: str                                   # "gpu" | "cpu"
    bandwidth: float                            # bytes/s, achievable DRAM bandwidth
    peak_flops: Mapping[str, float]             # "f32/simt", "f16/tensor", ... -> FLOP/s
    sms: int                                    # streaming multiprocessors (CPU: cores)
    registers_per_sm: int = 65536               # 32-bit registers
    shared_mem_per_block: int = 48 * KiB        # bytes (opt-in maximum)
    shared_mem_per_sm: int = 100 * KiB
    l2_bytes: int = 40 * MiB
    launch_overhead: float = 4e-6               # seconds per kernel launch
    arch: str | None = None                     # "sm_90" ...
    special_scale: float = 1.0                  # extra cost of exp/log/tanh/pow... (CPU: libm calls)
    multi_stream_tile: StreamTile | None = None  # None: the default shape everywhere
    row_carveout: RowCarveout | None = None      # None: the driver's choice
    # CPU: the memory levels (smallest first, DRAM last) and the costs of a generated loop's work
    # (fusion/cpu_cost.py); None/() keep the plain roofline
    levels: tuple[MemLevel, ...] = ()
    cpu: CpuCosts | None = None
    # GPU: results rounded to a 16-bit float a second (each op's, NumPy's and eager PyTorch's
    # semantics), by dtype name; None: not priced
    rounding_rate: Mapping[str, float] | None = None

    def peak(self, dtype, unit: str = "simt") -> float:
        """Peak FLOP/s for arithmetic in ``dtype`` on ``unit`` ("simt" or "tensor")."""
        key = _dkey(dtype)
        for k in (f"{key}/{unit}", f"{key}/simt", "f32/simt"):
            if k in self.peak_flops:
                return float(self.peak_flops[k])
        return float(min(self.peak_flops.values()))

    @property
    def on_chip_bytes(self) -> int:
        """What one block (CPU: one core) can keep on chip for a row: shared memory plus half the
        register file of an SM (CPU: the L2 share of a core)."""
        if self.kind == "cpu":
            return self.l2_bytes
        return self.shared_mem_per_block + self.registers_per_sm * 4 // 2

    def describe(self) -> str:
        if self.cpu is not None and self.levels:
            return f"{self.name}: {cpu_cost.describe(self.levels, self.cpu, self.sms)}"
        return (f"{self.name}: {self.bandwidth / 1e9:.0f} GB/s, "
                f"{self.peak(np.float32) / 1e9:.0f} GFLOP/s f32, {self.sms} "
                f"{'cores' if self.kind == 'cpu' else 'SMs'}, launch {self.launch_overhead * 1e6:.1f} us")


def _dkey(dtype) -> str:
    dt = np.dtype(dtype)
    if is_float(dt):
        return f"f{dt.itemsize * 8}"
    if dt.kind in "iub":
        return "int"
    return "f32"


def _gpu(name, bw, f32, f16_tensor, tf32, f64, sms, smem_block, smem_sm, l2, f16_simt=None,
         arch=None, launch=4e-6) -> DeviceSpec:
    return DeviceSpec(
        name=name, kind="gpu", bandwidth=bw,
        peak_flops={"f32/simt": f32, "f16/simt": f16_simt or 2 * f32, "f16/tensor": f16_tensor,
                    "f32/tensor": tf32, "f64/simt": f64, "f64/tensor": 2 * f64 if f64 > f32 / 4 else f64,
                    "int/simt": f32 / 2},
        sms=sms, registers_per_sm=65536, shared_mem_per_block=smem_block, shared_mem_per_sm=smem_sm,
        l2_bytes=l2, launch_overhead=launch, arch=arch)


# Achievable figures. H200/H100 bandwidth and H200 GEMM rates measured (DESIGN.md); the rest are
# datasheet numbers derated to ~85% (bandwidth) and ~70% (tensor GEMM), which is what cuBLAS and a
# copy kernel reach on those parts.
# Roundings to 16-bit floats a second, an H200 (2026-11-27, a GELU chain rounding 9 results an
# element over 64 Mi elements: bfloat16 125 us with the packed conversion cuda_ops' kf_f2bf uses
# (187 us with cvt.rn.bf16.f32), float16 101 us, float32 73 us). The H100 SXM has the same SMs
# and clocks.
ROUNDING_SM90 = {"bfloat16": 11.6e12, "float16": 21.6e12}

DEVICES: dict[str, DeviceSpec] = {
    # Row kernels' L1/shared carve-out, swept by a tile probe (commit 70d2784; run notes
    # of 2026-11-24, commit 4343aa0): the H200 runs P2 and P3 fastest with the least shared memory (P2 0.1319 vs 0.1334
    # ms at the driver's choice), the H100 with 45-100% shared for rows in registers (P2 0.1809 vs
    # 0.1823; 40% or less: 0.1823) and 25-35% for rows re-read through L1 (P3 0.1809-0.1811 vs 0.1818;
    # 40%: 0.1855, 45% or more: 0.1976): the middle of each plateau. The H200's P4 (a row in registers,
    # one value a row out) runs fastest at 25% shared, against P2's 0% (0.0633-0.0634 vs 0.0636-0.0638
    # ms; 30% or more: 0.0641; 2026-11-25, a P4 probe, commit a7ca7b6), and so does
    # the H100's (0.0885-0.0887 ms at 25% or 0%, 0.0889-0.0892 at 10-20% and 30-100%; torch.compile's
    # fast mode 0.0882-0.0885; run notes of 2026-11-25, commit 0534f17)
    # H200, kernels reading 4+ full-size arrays: 8-byte units at 256 threads with registers capped for
    # 6 blocks an SM (~48 KiB of loads in flight an SM): P6 0.4390 ms against 0.4439 at the 5 blocks
    # its 44 registers allow, 0.4400-0.4402 at 8 (Triton's 22-register kernel; torch.compile
    # 0.4403), 0.4408 for 16-byte units (a PTX bisection probe, commit 70d2784; notes commit bc49317). At parity
    # or ahead for 4 and 6 inputs (a stream probe, commit 30013ba); fewer inputs at 6 blocks lose 1-4% (too few
    # loads in flight), so they keep the default. Capping blocks by a shared-memory pad loses 1.5-4%
    # (the carve-out takes L1). One pass (no grid-stride loop: 8 blocks an SM, as Triton's) is the
    # robust pick: in a whole suite, after P1-P5, P6 runs 0.4411-0.4413 ms one pass, 0.4424-0.4429
    # looped at 6 blocks, torch.compile 0.4411-0.4413; alone 0.4407 vs 0.4400 and 0.4404
    # (the tile probe after P1-P5, 2026-11-25)
    "h200": dataclasses.replace(_gpu("h200", 4.24e12, 51e12, 656e12, 330e12, 34e12, 132, 227 * KiB, 228 * KiB,
                                     50 * MiB, f16_simt=100e12, arch="sm_90"),
                                multi_stream_tile=StreamTile(streams=5, inputs=4, vector_bytes=8, threads=256,
                                                             min_blocks=6, one_pass=True),
                                row_carveout=RowCarveout(rows=0, reread=0, reduction=25),
                                rounding_rate=ROUNDING_SM90),
    # H100: 8-byte units at 256 threads beat 16-byte ones on every kernel of 3+ full-size arrays
    # (0.2-1.5%; P6 0.6217 vs 0.6252 ms), lose on copy-like x -> y (4%) (the stream and tile
    # probes, run notes of 2026-11-24, commit 4343aa0); blocks an SM (5, 6 or 8) made no difference
    # to P6 (0.6172-0.6174 ms, ninth/)
    "h100": dataclasses.replace(_gpu("h100", 3.0e12, 51e12, 640e12, 320e12, 34e12, 132, 227 * KiB, 228 * KiB,
                                     50 * MiB, f16_simt=100e12, arch="sm_90"),
                                multi_stream_tile=StreamTile(streams=3, inputs=0, vector_bytes=8, threads=256),
                                row_carveout=RowCarveout(rows=75, reread=30, reduction=25),
                                rounding_rate=ROUNDING_SM90),
    "a100-80gb": _gpu("a100-80gb", 1.75e12, 18e12, 230e12, 120e12, 9.7e12, 108, 163 * KiB,
                      164 * KiB, 40 * MiB, f16_simt=60e12, arch="sm_80"),
    "a100-40gb": _gpu("a100-40gb", 1.35e12, 18e12, 230e12, 120e12, 9.7e12, 108, 163 * KiB,
                      164 * KiB, 40 * MiB, f16_simt=60e12, arch="sm_80"),
    "l4": _gpu("l4", 0.25e12, 26e12, 100e12, 50e12, 0.45e12, 58, 99 * KiB, 100 * KiB, 48 * MiB,
               arch="sm_89"),
    "rtx4090": _gpu("rtx4090", 0.9e12, 70e12, 150e12, 75e12, 1.1e12, 128, 99 * KiB, 100 * KiB,
                    72 * MiB, arch="sm_89"),
    # The 2-core CI machine: a streaming loop reaches ~20 GB/s, Numba SIMD loops ~50 GFLOP/s f32.
    # Its kernels are priced by fusion/cpu_cost.py (levels, cpu: CPU_LEVELS / CPU_COSTS below);
    # bandwidth and the peaks remain for the planner's re-read/split decisions and BLAS products.
    "cpu": DeviceSpec(name="cpu", kind="cpu", bandwidth=20e9,
                      peak_flops={"f32/simt": 50e9, "f16/simt": 12e9, "f64/simt": 25e9,
                                  "int/simt": 40e9, "f32/tensor": 100e9, "f64/tensor": 50e9,
                                  "f16/tensor": 25e9},
                      sms=2, registers_per_sm=0, shared_mem_per_block=0, shared_mem_per_sm=0,
                      l2_bytes=1 * MiB, launch_overhead=5e-6, arch=None, special_scale=6.0,
                      levels=cpu_cost.CPU_LEVELS, cpu=cpu_cost.CPU_COSTS),
}
ALIASES = {"h100-sxm": "h100", "h100sxm": "h100", "a100": "a100-80gb", "4090": "rtx4090",
           "rtx-4090": "rtx4090", "host": "cpu"}


def get_device_spec(name: str | DeviceSpec | None = None) -> DeviceSpec:
    """A known device by name ("h100", "h200", "a100-40gb", "a100-80gb", "l4", "rtx4090", "cpu");
    ``None`` means the CPU. A DeviceSpec is returned unchanged."""
    if isinstance(name, DeviceSpec):
        return name
    key = "cpu" if name is None else str(name).strip().lower().replace("_", "-").replace(" ", "")
    key = ALIASES.get(key, key)
    if key not in DEVICES:
        raise ValueError(f"unknown device {name!r}; known: {', '.join(DEVICES)}")
    return _this_cpu() if key == "cpu" else DEVICES[key]


def _this_cpu() -> DeviceSpec:
    """The CPU's spec: the fitted machine's, with this machine's measured memory levels and
    compute scale where the kfuse cache holds them (fusion.cpu_machine)."""
    from .. import config
    from .cpu_machine import machine
    cfg = config.get()
    m = machine(cfg.cache_dir) if cfg.cpu_machine else None
    return DEVICES["cpu"] if m is None else _measured_cpu(*m)


@functools.lru_cache(maxsize=8)
def _measured_cpu(levels: tuple, compute_scale: float, blas: tuple = (), measured: tuple = ()) -> DeviceSpec:
    from .cpu_machine import peaks_from, scaled_costs
    base = DEVICES["cpu"]
    costs = dataclasses.replace(scaled_costs(cpu_cost.CPU_COSTS, compute_scale),
                                **{k: v for k, v in measured if v is not None})
    return dataclasses.replace(base, levels=levels, cpu=costs, peak_flops=peaks_from(dict(blas), base.peak_flops))


def known_device(name: str) -> DeviceSpec | None:
    """The table's entry for a live device's name ("NVIDIA H100 80GB HBM3" -> h100), or None."""
    low = name.lower()
    for pat, key in (("h200", "h200"), ("h100", "h100"), ("a100", "a100-80gb"), ("l4", "l4"),
                     ("4090", "rtx4090")):
        if pat in low:
            return DEVICES["a100-40gb" if key == "a100-80gb" and "40gb" in low else key]
    return None


def from_properties(props: Mapping) -> DeviceSpec:
    """A DeviceSpec from a live device's properties (CUDA ``cudaDeviceProp`` names as in
    ``cupy.cuda.runtime.getDeviceProperties``: name, multiProcessorCount, regsPerMultiprocessor,
    sharedMemPerBlockOptin, sharedMemPerMultiprocessor, l2CacheSize, memoryClockRate [kHz],
    memoryBusWidth [bits], major, minor). A recognised part keeps its measured figures and takes
    the counts from ``props``; an unknown one gets bandwidth from the memory clock and bus width."""
    name = props.get("name", b"gpu")
    name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
    base = known_device(name)
    major, minor = props.get("major"), props.get("minor")
    arch = f"sm_{major}{minor}" if major is not None and minor is not None else None
    sms = int(props.get("multiProcessorCount") or (base.sms if base else 80))
    if base is None:
        clock = props.get("memoryClockRate")   # kHz
        bus = props.get("memoryBusWidth")      # bits
        bw = 2.0 * clock * 1e3 * bus / 8 * 0.85 if clock and bus else 1e12
        base = _gpu(name, bw, 20e12 * sms / 100, 150e12 * sms / 100, 75e12 * sms / 100, 1e12, sms,
                    48 * KiB, 100 * KiB, 40 * MiB)
    return dataclasses.replace(
        base, name=name, sms=sms,
        registers_per_sm=int(props.get("regsPerMultiprocessor") or base.registers_per_sm),
        shared_mem_per_block=int(props.get("sharedMemPerBlockOptin") or base.shared_mem_per_block),
        shared_mem_per_sm=int(props.get("sharedMemPerMultiprocessor") or base.shared_mem_per_sm),
        l2_bytes=int(props.get("l2CacheSize") or base.l2_bytes),
        arch=arch or base.arch)


@record
class Cost:
    """A kernel's predicted traffic, work and time, and what bounds it."""
    bytes_read: int
    bytes_written: int
    flops: float
    seconds: float                  # predicted: max(memory time, compute time) + launch
    bound: str                      # "memory" | "compute" | "launch"
    passes: int = 1                 # reduce groups whose row does not fit on chip re-read it
    memory_seconds: float = 0.0
    compute_seconds: float = 0.0
    # matmul groups: the implementation the planner picked ("cublas+epilogue" or "generated") and
    # every candidate's predicted seconds, ((name, seconds), ...); the runtime follows ``impl``
    impl: str = ""
    candidates: tuple = ()
    impl_note: str = ""             # the shape bucket of the pick; why a candidate is unavailable
    cpu_terms: cpu_cost.Terms | None = None     # CPU kernels: the work the time was priced from

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.bytes if self.bytes else float("inf")

    def describe(self) -> str:
        return (f"{_fmt_bytes(self.bytes_read)} read, {_fmt_bytes(self.bytes_written)} written, "
                f"{self.flops:.3g} FLOP, {self.intensity:.2f} FLOP/B, "
                f"{self.seconds * 1e6:.1f} us ({self.bound}-bound)")


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def roofline(bytes_read: float, bytes_written: float, flops: float, device: DeviceSpec,
             dtype=np.float32, unit: str = "simt", passes: int = 1, extra_compute: float = 0.0,
             bandwidth: float | None = None) -> Cost:
    """``bandwidth``: what the kernel's accesses reach, where less than the device's."""
    mem = (bytes_read + bytes_written) / (bandwidth or device.bandwidth)
    comp = flops / device.peak(dtype, unit) + extra_compute
    body = max(mem, comp)
    bound = "memory" if mem >= comp else "compute"
    if device.launch_overhead > body:
        bound = "launch"
    return Cost(int(bytes_read), int(bytes_written), float(flops), body + device.launch_overhead,
                bound, passes, mem, comp)


def node_flops(node: Node, evals: int | None = None, special_scale: float = 1.0) -> float:
    """FLOPs of evaluating ``node`` ``evals`` times (default: once per element; a reduction once
    per input element; a matmul 2*M*N*K per batch)."""
    if node.op is Op.MATMUL:
        a = node.inputs[0]
        k = a.shape[-1] if a.shape else 1
        return 2.0 * node.size * k
    if node.op in LEAF or node.op in MOVEMENT:
        return 0.0
    if evals is None:
        evals = node.inputs[0].size if node.op in REDUCE else node.size
    w = FLOP_WEIGHT.get(node.op, 1.0)
    return (w * special_scale if w >= 8 else w) * evals


def compute_dtype(nodes: Iterable[Node]):
    """The widest floating dtype computed in a group (sets which peak applies)."""
    best = None
    for n in nodes:
        if n.op in LEAF or n.op in MOVEMENT:
            continue
        dt = n.dtype if is_float(n.dtype) else None
        if dt is not None and (best is None or dt.itemsize > best.itemsize):
            best = dt
    if best is None:
        return np.dtype(np.int64)
    if best.itemsize == 2:     # elementwise f16/bf16 math runs in f32 on GPUs and CPUs alike
        return np.dtype(np.float32)
    return best


def estimate(kind: GroupKind, nodes: Iterable[Node], inputs: Iterable[Node], outputs: Iterable[Node],
             device: DeviceSpec, evals: Mapping[Node, int] | None = None, passes: int = 1,
             reread: Iterable[Node] = ()) -> Cost:
    """The roofline cost of one kernel: every input read once (``reread`` ones ``passes`` times;
    one read only through gathers, the elements gathered), every output written once, each node's
    FLOPs times its number of evaluations."""
    nodes, inputs, outputs = list(nodes), list(inputs), list(outputs)
    evals = evals or {}
    reread = set(reread)
    br = sum(_read_bytes(i, nodes) * (passes if i in reread else 1) for i in inputs)
    bw = sum(o.nbytes for o in outputs)
    flops = sum(node_flops(n, evals.get(n), device.special_scale) for n in nodes)
    if kind == GroupKind.MATMUL:
        return _matmul_cost(nodes, list(inputs), list(outputs), br, bw, flops, device)
    if device.cpu is not None and device.levels:
        once = sum(_read_bytes(i, nodes) for i in inputs) + bw       # (re-reads hit the caches)
        t = cpu_cost.terms(kind, nodes, inputs, outputs, br + bw, device.cpu, device.sms, evals, once)
        secs, mem, comp = cpu_cost.seconds(t, device.cpu, device.levels, device.sms)
        bound = "launch" if secs - mem - comp > max(mem, comp) else ("memory" if mem >= comp else "compute")
        return Cost(int(br), int(bw), float(flops), secs, bound, passes, mem, comp, cpu_terms=t)
    c = roofline(br, bw, flops, device, compute_dtype(nodes), "simt", passes,
                 rounding_seconds(nodes, evals, device),
                 column_scan_bandwidth(kind, nodes, device)
                 or gpu_chunks.reread_bandwidth(kind, nodes, outputs, passes, device.bandwidth))
    waves = gpu_chunks.held_row_waves(kind, nodes, outputs, passes, device.sms, device.registers_per_sm) \
        if device.kind == "gpu" else None
    if waves:       # one row an SM at a time: its loads, then its arithmetic, nothing overlapping
        c = dataclasses.replace(c, seconds=(c.memory_seconds + c.compute_seconds) * waves + device.launch_overhead)
    fixed = gpu_chunks.fixed_seconds(kind, nodes, inputs, outputs, device.sms, device.launch_overhead)
    return dataclasses.replace(c, seconds=c.seconds + fixed) if fixed else c


# A GPU column scan runs a thread a column, each walking its rows in order with COL_UNROLL loads
# in flight: few columns keep too few bytes in flight for the bandwidth (Little's law). 8192 x 8192
# float32 cumsum over axis 0: 0.62 ms measured, 8192 threads x 16 loads x 4 bytes / 0.7 us = 0.75 TB/s
SCAN_LOADS_IN_FLIGHT = 16
MEMORY_LATENCY_S = 0.7e-6


def column_scan_bandwidth(kind, nodes: list[Node], device: DeviceSpec) -> float | None:
    """The bandwidth a GPU column scan's columns keep in flight, where below the device's; None
    for other kernels and devices."""
    if kind != GroupKind.SCAN or device.kind != "gpu":
        return None
    scan = next((n for n in nodes if n.op in SCAN), None)
    if scan is None or scan.inputs[0].ndim < 2 or scan.attr("axis") % scan.inputs[0].ndim == scan.inputs[0].ndim - 1:
        return None
    x = scan.inputs[0]
    columns = x.size // max(1, x.shape[scan.attr("axis") % x.ndim])
    reach = columns * SCAN_LOADS_IN_FLIGHT * x.dtype.itemsize / MEMORY_LATENCY_S
    return reach if reach < device.bandwidth else None


def rounding_seconds(nodes: list[Node], evals: Mapping[Node, int], device: DeviceSpec) -> float:
    """Time the kernel's roundings to 16-bit floats take (``DeviceSpec.rounding_rate``): one an
    element of every elementwise op with a float16/bfloat16 result (a load's is none)."""
    rates = device.rounding_rate
    if not rates:
        return 0.0
    t = 0.0
    for n in nodes:
        rate = rates.get(np.dtype(n.dtype).name)
        if rate and n.op in ELEMENTWISE:
            t += evals.get(n, n.size) / rate
    return t


def _read_bytes(i: Node, nodes: list[Node]) -> int:
    """Bytes a kernel reads of input ``i``: all of it, or (read only as gathers' source, an
    embedding table) at most the elements the gathers pick."""
    readers = [n for n in nodes if i in n.inputs]
    if readers and all(n.op is Op.GATHER and i not in n.inputs[1:] for n in readers):
        return min(i.nbytes, sum(n.size for n in readers) * i.dtype.itemsize)
    return i.nbytes


# -- matmul groups: two candidates ---------------------------------------------------------------
# The generated mma.sync kernel's throughput as a fraction of cuBLAS's on the same GEMM, measured on
# an H200 (benchmarks/GEMM_NOTES.md, run 3: 0.35x with the bias+GELU epilogue, 0.48x without; cuBLAS
# uses wgmma there). f32 operands: the generated kernel is a plain-FMA SIMT kernel (no TF32), cuBLAS
# SGEMM the same unit: assumed 0.5x until measured.
GENERATED_EFFICIENCY = {"f16": 0.35, "f32": 0.5, "int8": 0.35}
# sm_90: the TMA + wgmma kernel (codegen.gemm_wgmma) beside cuBLAS alone on an H200 (2026-11-28,
# benchmarks/gemm_bench.py --hopper): 0.82-0.85x with the bias+GELU epilogue at 4096^3 and 8192^3
# (f16, bf16), 0.75x batched 16x2048^3; int8 1500 TOPS = 2.0x cuBLAS's f16 rate (1.0 of the
# int8 ratio below)
WGMMA_EFFICIENCY = {"f16": 0.82, "int8": 1.0}
WGMMA_ARCHS = ("sm_90", "sm_90a")
# int8 tensor-core throughput over float16's (A100, H100: twice); the generated int8 kernel is the
# f16 one with byte tiles and m16n8k32 steps: its efficiency assumed f16's until measured
INT8_TENSOR_RATIO = 2.0
# cuBLAS's fixed cost per call beyond a kernel launch (host-side heuristics, handle, argument
# checks: ~5-10 us measured per cupy.matmul call on small shapes), charged to the cuBLAS candidate.
CUBLAS_CALL_OVERHEAD = 4e-6


def gemm_dims(mm: Node) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of a MATMUL node (1-D operands count as M = 1 / N = 1)."""
    a, b = mm.inputs[0], mm.inputs[1]
    K = int(a.shape[-1]) if a.shape else 1
    M = int(a.shape[-2]) if len(a.shape) >= 2 else 1
    N = int(b.shape[-1]) if len(b.shape) >= 2 else 1
    batch = int(np.prod(mm.shape[:-2])) if len(mm.shape) > 2 else 1
    return batch, M, N, K


def gemm_bucket(batch: int, M: int, N: int, K: int) -> tuple[int, int, int, int]:
    """The shape bucket a GEMM's implementation is picked for: each dim rounded up to a power of 2
    (one pick per bucket, so nearby shapes run the same implementation)."""
    return tuple(1 << max(0, int(np.ceil(np.log2(max(1, v))))) for v in (batch, M, N, K))


def generated_gemm_ok(nodes, outputs) -> str:
    """Why the generated fused GEMM cannot run this matmul group ("" when it can): operand dtype
    f16/f32, no operand casts (the kernel reads the operands as they are) but int8 arrays cast to
    int32/int16 (the int8 kernel), 2-D or 3-D operands, one output, an epilogue the kernel
    applies in registers."""
    mm = next(n for n in nodes if n.op is Op.MATMUL)
    a, b = mm.inputs
    if int8_operands(mm) is None:
        if a.op is Op.CAST or b.op is Op.CAST or a.dtype != b.dtype:
            return "operand casts"
        if np.dtype(a.dtype).name not in ("float16", "float32"):
            return f"operand dtype {np.dtype(a.dtype).name}"
    if a.ndim not in (2, 3) or b.ndim not in (2, 3) or mm.ndim not in (2, 3):
        return "operands not 2-D/3-D"
    if len(outputs) != 1:
        return "several outputs"

    class _G:        # the duck-typed group epilogue_in_registers reads
        pass
    g = _G()
    inside = set(nodes)
    ins = {x for n in nodes for x in n.inputs if x not in inside}
    g.anchor, g.outputs, g.nodes, g.inputs = mm, tuple(outputs), tuple(nodes), tuple(ins)
    if not epilogue_in_registers(g):
        return "epilogue not expressible in registers"
    return ""


def choose_gemm(batch: int, M: int, N: int, K: int, dtype, epi_bytes: float, epi_flops: float,
                out_bytes: float, device: DeviceSpec, generated_ok: bool = True,
                allow_tf32: bool = False, bucket: bool = True, int8: bool = False) -> tuple[str, dict[str, float]]:
    """Pick the implementation of one matmul group for its shape bucket: ``"cublas+epilogue"``
    (cuBLAS product, then the epilogue as one elementwise pass over it, in place) or
    ``"generated"`` (one fused kernel). Returns (pick, {candidate: predicted seconds}); with
    ``bucket`` the predictions are made at the bucket's shape (:func:`gemm_bucket`), so every
    shape of a bucket gets the same pick. ``epi_bytes``/``out_bytes``/``epi_flops``: the epilogue's
    extra inputs, its output and its FLOPs at the real shape (scaled to the bucket). ``int8``: the
    product of int8 operands cast to ``dtype`` (an integer): the cuBLAS candidate is CuPy's integer
    matmul (no tensor cores), the generated kernel runs on the int8 tensor cores."""
    bb, bm, bn, bk = gemm_bucket(batch, M, N, K) if bucket else (batch, M, N, K)
    scale = (bb * bm * bn) / max(1, batch * M * N)        # epilogue bytes/flops scale with the output
    key = _dkey(dtype)
    unit = "tensor" if key == "f16" or (key == "f32" and allow_tf32) else "simt"
    gemm_flops = 2.0 * bb * bm * bn * bk
    peak = device.peak(dtype, unit)
    isz = np.dtype(dtype).itemsize
    op_bytes = isz * bb * (bm * bk + bk * bn)
    prod_bytes = isz * bb * bm * bn
    gemm_s = max(gemm_flops / peak, (op_bytes + prod_bytes) / device.bandwidth)
    # the epilogue pass reads the product and the epilogue inputs and writes the output (in place
    # over the product when dtypes match: the lines are L2-warm, the DRAM estimate is an upper bound)
    epi_s = max((prod_bytes + (epi_bytes + out_bytes) * scale) / device.bandwidth,
                epi_flops * scale / device.peak(np.float32))
    t = {"cublas+epilogue": gemm_s + epi_s + 2 * device.launch_overhead + CUBLAS_CALL_OVERHEAD}
    if generated_ok:
        # the generated kernel never uses TF32 (f32: plain FMA), whatever allow_tf32 says
        eff = WGMMA_EFFICIENCY if device.arch in WGMMA_ARCHS else GENERATED_EFFICIENCY
        gen_peak = (device.peak(dtype, "tensor") * eff["f16"] if key == "f16"
                    else device.peak(np.float32) * GENERATED_EFFICIENCY["f32"])
        if int8:
            gen_peak = device.peak(np.float16, "tensor") * INT8_TENSOR_RATIO * eff["int8"]
            op_bytes //= isz
        gen_s = max(gemm_flops / gen_peak, (op_bytes + (epi_bytes + out_bytes) * scale) / device.bandwidth)
        t["generated"] = gen_s + device.launch_overhead
    return min(t, key=t.get), t


def _matmul_cost(nodes, inputs, outputs, br, bw, flops, device: DeviceSpec,
                 allow_tf32: bool = False) -> Cost:
    mm = next(n for n in nodes if n.op is Op.MATMUL)
    dtype = mm.dtype
    key = _dkey(dtype)
    # f16 on tensor cores; f32 on SIMT FMA unless TF32 is allowed (then cuBLAS uses tensor cores)
    unit = "tensor" if key == "f16" or (key == "f32" and allow_tf32) else "simt"
    base = roofline(br, bw, flops, device, dtype, unit)
    if device.kind != "gpu":
        return base
    batch, M, N, K = gemm_dims(mm)
    op_nodes = set(mm.inputs) | {x.inputs[0] for x in mm.inputs if x.op is Op.CAST}
    epi_bytes = sum(i.nbytes for i in inputs if i not in op_nodes)
    out_bytes = sum(o.nbytes for o in outputs)
    epi_flops = max(0.0, flops - node_flops(mm))
    int8 = int8_operands(mm) is not None
    why = generated_gemm_ok(nodes, outputs) if key in ("f16", "f32") or int8 else f"operand dtype {np.dtype(dtype).name}"
    args = (batch, M, N, K, dtype, epi_bytes, epi_flops, out_bytes, device, not why, allow_tf32)
    pick, _ = choose_gemm(*args, int8=int8)
    _, t_real = choose_gemm(*args, bucket=False, int8=int8)      # explain prints predictions at the real shape
    note = f"bucket {'x'.join(map(str, gemm_bucket(batch, M, N, K)))}"
    if int8 and not why:
        note += "; " + describe_int8(mm, device.arch)
    if why:
        note += f"; generated kernel not applicable: {why}"
    body = t_real[pick] - device.launch_overhead
    return dataclasses.replace(base, seconds=t_real[pick], impl=pick,
                               candidates=tuple(t_real.items()), impl_note=note,
                               bound="launch" if device.launch_overhead > body else base.bound)
