"""The CPU backend's float16 conversions (codegen.cpu_half: ``_h2f``, ``_f2hf``, ``_f2h``,
``_rf16f``, ``_rf16``), the hardware ones (LLVM's fpext/fptrunc of half) and the integer ones
kept for CPUs without F16C: bit for bit NumPy's: every float16 to float32, float32 and float64
to float16 at every float16 midpoint and its neighbours, the overflow and subnormal edges, NaN
and signed zeros, random bit patterns; float64 rounded once, as NumPy rounds it (not through
float32); and the hardware loops vectorised (vcvtph2ps/vcvtps2ph on x86)."""
import platform

import numba
import numpy as np
import pytest

from kfuse.codegen import cpu_half
from kfuse.codegen.cpu_helpers import HELPERS

SETS = {"hardware": cpu_half.HARDWARE, "software": cpu_half.SOFTWARE}


def _loops(sources: dict):
    ns: dict = {}
    exec("import math\nimport numpy as np\nimport numba\n\n"
         + "\n\n".join(src for src, _ in sources.values()), ns)

    def loop(fn):
        @numba.njit(error_model="numpy")
        def run(x, out):
            for i in range(x.shape[0]):
                out[i] = fn(x[i])
        return run
    return {name: loop(ns[name]) for name in ("_h2f", "_f2hf", "_f2h", "_rf16f", "_rf16")}


LOOPS = {k: _loops(v) for k, v in SETS.items()}


def _call(kind, name, x, dtype):
    out = np.empty(x.shape, dtype)
    LOOPS[kind][name](x, out)
    return out


def _check_f16(got, x, want=None):
    """got (uint16 bits) is x cast to float16 by NumPy, a NaN as any NaN of x's sign."""
    if want is None:
        with np.errstate(over="ignore", invalid="ignore"):
            want = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], want[~nan]), np.flatnonzero(got[~nan] != want[~nan])[:10]
    assert ((got[nan] & 0x7c00) == 0x7c00).all() and ((got[nan] & 0x3ff) != 0).all()
    assert np.array_equal(got[nan] >> 15, np.signbit(x[nan]).astype(np.uint16))


def _float16_grid(dtype):
    """Every finite float16 value, the midpoints between neighbours and the values next to them
    in ``dtype``, both signs."""
    h = np.unique(np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float64))
    h = h[np.isfinite(h)]
    mids = (h[:-1] + h[1:]) / 2                     # exact in float64 and float32
    m = mids.astype(dtype)
    parts = [h.astype(dtype), m, np.nextafter(m, dtype(np.inf)), np.nextafter(m, dtype(-np.inf))]
    if dtype == np.float64:                         # below float32's resolution: double rounding
        parts += [mids * (1 + s * 2.0 ** -k) for s in (1, -1) for k in (25, 30, 40, 52)]
    x = np.concatenate(parts)
    return np.concatenate([x, -x])


EDGES = [65504, 65519.996, 65520, 65536, 1e9, np.inf, 0.0, 5.96e-8, 2.98e-8, 2.9802322e-08,
         1e-10, 6.1035156e-05, 6.097555e-05, 2.0 ** -24, 2.0 ** -25, np.nan]


@pytest.mark.parametrize("kind", SETS)
def test_every_float16_widens_exactly(kind):
    bits = np.arange(65536, dtype=np.uint16)
    got = _call(kind, "_h2f", bits, np.float32)
    want = bits.view(np.float16).astype(np.float32)
    nan = np.isnan(want)
    assert np.array_equal(got.view(np.uint32)[~nan], want.view(np.uint32)[~nan])
    assert np.isnan(got[nan]).all() and np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("kind", SETS)
def test_float32_narrows_as_numpy_rounds(kind):
    edges = np.array(EDGES, np.float32)
    rnd = np.random.default_rng(1).integers(0, 2 ** 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([_float16_grid(np.float32), edges, -edges, rnd])
    got = _call(kind, "_f2hf", x, np.uint16)
    _check_f16(got, x)
    rounded = _call(kind, "_rf16f", x, np.float32)          # the same rounding, widened back
    _check_f16(_call(kind, "_f2hf", rounded, np.uint16), x)
    _check_f16(_call(kind, "_f2h", x, np.uint16), x)         # float32 through _f2h: as exact


@pytest.mark.parametrize("kind", SETS)
def test_float64_narrows_once_as_numpy_rounds(kind):
    """NumPy rounds float64 to float16 once (1 + 2**-11 + 2**-40 -> 1.001, through float32 1.0)."""
    rng = np.random.default_rng(2)
    n = 1 << 20
    edges = np.array(EDGES + [65519.99999999, 65520.0000001, 2.0 ** -25 * (1 + 2 ** -40),
                              2.0 ** -25 * (1 - 2 ** -40), 1 + 2 ** -11 + 2 ** -40, 1e-300, 5e-324,
                              3.4028235677973366e+38, 3.4028236e38, 1e39, 1e300], np.float64)
    scaled = np.ldexp(rng.random(n) + 1, rng.integers(-40, 17, n))    # every float16 exponent
    rnd = rng.integers(0, 2 ** 64, n, dtype=np.uint64).view(np.float64)
    x = np.concatenate([_float16_grid(np.float64), edges, -edges, scaled, -scaled, rnd])
    got = _call(kind, "_f2h", x, np.uint16)
    _check_f16(got, x)
    assert got[np.flatnonzero(x == 1 + 2 ** -11 + 2 ** -40)[0]] == np.float16(1.001).view(np.uint16)
    _check_f16(_call(kind, "_f2hf", _call(kind, "_rf16", x, np.float32), np.uint16), x)


def test_hardware_chosen_where_the_host_has_it():
    assert cpu_half.hardware_conversions() == (
        platform.machine() in ("aarch64", "arm64") or
        ("f16c" in open("/proc/cpuinfo").read().split() if platform.machine() == "x86_64" else False))
    want = cpu_half.HARDWARE if cpu_half.hardware_conversions() else cpu_half.SOFTWARE
    assert all(HELPERS[k][0] == want[k][0].strip("\n") for k in ("_h2f", "_f2hf", "_f2h", "_rf16f"))


@pytest.mark.skipif(not (platform.machine() == "x86_64" and cpu_half.hardware_conversions()),
                    reason="x86 with F16C")
def test_hardware_loops_vectorise():
    """The loops convert several lanes an instruction (LLVM's fpext/fptrunc of <N x half>: packed
    vcvtph2ps/vcvtps2ph; float64 through vcvtpd2ps), not one element at a time, nor by a call."""
    loops = LOOPS["hardware"]
    for name, arg, dt, ir_op, insns in (
            ("_h2f", np.zeros(64, np.uint16), np.float32, "fpext <", ("vcvtph2ps",)),
            ("_f2hf", np.zeros(64, np.float32), np.uint16, "fptrunc <", ("vcvtps2ph",)),
            ("_f2h", np.zeros(64, np.float64), np.uint16, "x half>", ("vcvtpd2ps", "vcvtps2ph"))):
        out = np.empty(64, dt)
        loops[name](arg, out)
        sig = (numba.typeof(arg), numba.typeof(out))
        ir = loops[name].inspect_llvm(sig)
        assert any(ir_op in ln and "x half>" in ln for ln in ir.splitlines()), name
        asm = loops[name].inspect_asm(sig)
        assert all(insn in asm for insn in insns) and "hf2" not in asm, name   # no libcall
