"""The cost model: device specs by name and from live properties, and roofline predictions."""
from __future__ import annotations

import numpy as np
import pytest

import fusion_builders as fb
from kfuse.fusion.cost import DEVICES, from_properties, get_device_spec, roofline
from kfuse.fusion.pipeline import optimize, plan


@pytest.mark.parametrize("name", ["h100", "h200", "a100-40gb", "a100-80gb", "l4", "rtx4090", "cpu"])
def test_known_devices(name):
    d = get_device_spec(name)
    assert d.name == name and d.bandwidth > 0 and d.sms > 0 and d.launch_overhead > 0
    assert d.peak(np.float32) > 0 and d.peak(np.float16, "tensor") > 0
    if d.kind == "gpu":
        assert d.peak(np.float16, "tensor") > d.peak(np.float32) and d.registers_per_sm == 65536
        assert d.shared_mem_per_block > 0 and d.l2_bytes > 0


def test_cpu_spec_is_the_ci_machine():
    d = get_device_spec(None)
    assert d.kind == "cpu" and 10e9 <= d.bandwidth <= 40e9 and 20e9 <= d.peak(np.float32) <= 100e9
    assert get_device_spec("H100") is DEVICES["h100"]
    with pytest.raises(ValueError, match="unknown device"):
        get_device_spec("tpu")


def test_from_properties_known_and_unknown():
    props = {"name": b"NVIDIA H100 80GB HBM3", "multiProcessorCount": 132, "regsPerMultiprocessor":
             65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472,
             "l2CacheSize": 52428800, "major": 9, "minor": 0}
    d = from_properties(props)
    assert d.arch == "sm_90" and d.bandwidth == DEVICES["h100"].bandwidth
    assert d.shared_mem_per_block == 232448 and d.name.startswith("NVIDIA H100")
    u = from_properties({"name": "Mystery GPU", "multiProcessorCount": 40, "memoryClockRate": 1_000_000,
                         "memoryBusWidth": 256, "major": 8, "minor": 6})
    assert u.arch == "sm_86" and u.sms == 40 and 40e9 < u.bandwidth < 64e9


def test_roofline_bound_and_launch():
    d = get_device_spec("h100")
    mem = roofline(1e9, 1e9, 1e6, d)
    assert mem.bound == "memory" and mem.seconds == pytest.approx(2e9 / d.bandwidth + d.launch_overhead)
    comp = roofline(1e3, 1e3, 1e13, d)
    assert comp.bound == "compute" and comp.intensity > 1e9
    assert roofline(8, 8, 1, d).bound == "launch"


def test_group_cost_counts_bytes_and_flops():
    p = plan(optimize(fb.p1(256, 128)), "h100")
    (g,) = p.kernels
    assert g.cost.bytes_read == 256 * 128 * 4 + 2 * 128 * 4
    assert g.cost.bytes_written == 256 * 128 * 4
    assert g.cost.flops > 10 * 256 * 128           # tanh and pow weighted
    assert g.cost.intensity == pytest.approx(g.cost.flops / (g.cost.bytes_read + g.cost.bytes_written))


def test_matmul_uses_tensor_peak_and_is_compute_bound_when_big():
    p = plan(optimize(fb.matmul_bias_gelu(4096, 4096, 4096)), "h100")
    (g,) = p.kernels
    assert g.cost.bound == "compute"
    assert g.cost.flops >= 2 * 4096 ** 3
    assert g.cost.seconds < 2 * 4096 ** 3 / 300e12          # tensor cores, not SIMT f32


def test_fusion_predicted_faster_than_unfused():
    """The plan's predicted time beats one kernel per op (the point of fusing)."""
    g = optimize(fb.layernorm(1024, 4096))
    fused = sum(k.cost.seconds for k in plan(g, "h100").kernels)
    d = get_device_spec("h100")
    unfused = sum(roofline(sum(i.nbytes for i in n.inputs if i.op.value != "const"), n.nbytes,
                           n.size, d).seconds for n in g.nodes() if n.op.value not in
                  ("input", "const", "broadcast"))
    assert fused < unfused / 3


def test_16_bit_roundings_are_priced_on_sm90():
    """A GELU chain over bfloat16 rounds every op's result: on an H200 the roundings (a quarter of
    float16's rate) make it compute-bound where the same chain in float32 is memory-bound; a
    device without a rounding rate prices none."""
    import kfuse

    def gelu(x):
        return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    def kernel(dtype, device):
        p = kfuse.jit(gelu, backend="cuda").lower(np.zeros((4096, 4096), dtype)).plan
        return plan(p.graph, device).kernels[0].cost

    import ml_dtypes
    bf16, f16, f32 = (kernel(t, "h200") for t in (ml_dtypes.bfloat16, np.float16, np.float32))
    assert f32.bound == "memory" and bf16.bound == "compute"
    assert bf16.compute_seconds > f16.compute_seconds > f32.compute_seconds
    assert kernel(ml_dtypes.bfloat16, "a100-80gb").compute_seconds < bf16.compute_seconds


def test_column_scans_priced_by_the_bytes_their_columns_keep_in_flight():
    """A cumsum over axis 0 walks each column in one thread: with 8192 columns it is priced well
    above the bandwidth's time (0.62 ms measured on an H200 against 0.13 at the copy rate); one
    over the last axis is not."""
    import kfuse

    def cost(axis, device="h200"):
        p = kfuse.jit(lambda x: np.cumsum(x, axis=axis), backend="cuda").lower(np.zeros((8192, 8192), np.float32)).plan
        return plan(p.graph, device).kernels[0].cost

    col, row = cost(0), cost(1)
    assert row.seconds < 2 * row.bytes / DEVICES["h200"].bandwidth
    assert 0.31e-3 < col.seconds < 1.24e-3 and col.bound == "memory"


def test_odd_long_gpu_rows_count_in_vector_units():
    """A GPU row that is not a whole number of 16-byte units runs peeled (codegen.cuda_peel: its
    head and tail element by element, its body in vectors), so the cost model counts it in vector
    units as an even row: a 50257-wide float32 logsumexp streams its maximum and sum in one pass as
    the 50256-wide one does (element by element it re-read the row twice: the corpus's
    cross-entropy, 127 us measured on an H200), and a layernorm holds a 65537-wide row (16384
    units, reduction.HELD_UNITS) and re-reads a 65541-wide one (16385) in two passes (its variance
    folded into the mean's pass: codegen.variance)."""
    import kfuse
    from kfuse.fusion.kinds import GroupKind
    def lse(x):
        m = x.max(axis=1, keepdims=True)
        return np.log(np.exp(x - m).sum(axis=1)) + m[:, 0]

    def norm(x):
        mu = x.mean(axis=1, keepdims=True)
        return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)

    def passes(fn, width, rows=1024):
        p = kfuse.jit(fn).lower(f"f32[{rows},{width}]", backend="cuda", device="h200").plan
        g = next(g for g in p.groups if g.kind == GroupKind.REDUCE and g.domain[1] == width)
        return g.cost.passes, g.reason
    assert passes(lse, 50257)[0] == passes(lse, 50256)[0] == 1
    assert passes(norm, 65537, 256)[0] == 1
    got, why = passes(norm, 65541, 256)
    assert got == 2 and "16385 units" in why, why


def test_streamed_rows_are_priced_as_re_read():
    """Rows past reduction.STREAMED_MIN_UNITS with a max and a sum of exp run streamed
    (codegen.online_softmax): the two join one pass and any other pass re-reads the row (a
    softmax's normalising pass); a sum shifted by the row's log-sum-exp (a label-smoothed
    cross-entropy, 4096 x 32000 f32) joins it too (codegen.shifted_sum): one pass."""
    import kfuse
    from kfuse.fusion.kinds import GroupKind

    def smoothed(x):
        m = x.max(axis=1, keepdims=True)
        lse = np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m
        return np.mean(x - lse, axis=1)

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    p = kfuse.jit(softmax).lower("f32[4096,32000]", backend="cuda", device="h200").plan
    g = next(g for g in p.groups if g.kind == GroupKind.REDUCE)
    assert g.cost.passes == 2 and "streamed" in g.reason, g.reason
    p = kfuse.jit(smoothed).lower("f32[4096,32000]", backend="cuda", device="h200").plan
    assert next(g for g in p.groups if g.kind == GroupKind.REDUCE).cost.passes == 1
    p = kfuse.jit(smoothed).lower("f32[4096,8192]", backend="cuda", device="h200").plan    # held
    assert next(g for g in p.groups if g.kind == GroupKind.REDUCE).cost.passes == 1
