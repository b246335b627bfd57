"""The CPU backend's float16 conversions (codegen.cpu_helpers ``_h2f``, ``_f2hf``): branch-free so
loops vectorise, and bit for bit NumPy's: every float16 to float32, and float32 to float16 at every
float16 midpoint and its neighbours, the overflow and subnormal edges, NaN and signed zeros,
random bit patterns."""
import numba
import numpy as np

from kfuse.codegen.cpu_helpers import HELPERS


def _helpers():
    ns: dict = {}
    exec("import math\nimport numpy as np\nimport numba\n\n"
         + "\n\n".join(HELPERS[k][0] for k in ("_h2f", "_f2hf")), ns)
    h2f, f2hf = ns["_h2f"], ns["_f2hf"]

    @numba.njit
    def widen(bits, out):
        for i in range(bits.shape[0]):
            out[i] = h2f(bits[i])

    @numba.njit
    def narrow(x, out):
        for i in range(x.shape[0]):
            out[i] = f2hf(x[i])
    return widen, narrow


WIDEN, NARROW = _helpers()


def test_every_float16_widens_exactly():
    bits = np.arange(65536, dtype=np.uint16)
    got = np.empty(65536, np.float32)
    WIDEN(bits, got)
    want = bits.view(np.float16).astype(np.float32)
    nan = np.isnan(want)
    assert np.array_equal(got.view(np.uint32)[~nan], want.view(np.uint32)[~nan])
    assert np.isnan(got[nan]).all() and np.array_equal(np.signbit(got), np.signbit(want))


def test_float32_narrows_as_numpy_rounds():
    h = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    h = h[np.isfinite(h)]
    mids = ((h[:-1].astype(np.float64) + h[1:]) / 2).astype(np.float32)
    up, down = np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))
    edges = np.array([65504, 65519.996, 65520, 65536, 1e9, np.inf, -np.inf, 0.0, -0.0, 5.96e-8, 2.98e-8,
                      2.9802322e-08, 1e-10, 6.1035156e-05, 6.097555e-05], np.float32)
    rnd = np.random.default_rng(1).integers(0, 2 ** 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([h, mids, up, down, -mids, edges, -edges, rnd])
    got = np.empty(x.shape, np.uint16)
    NARROW(x, got)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], want[~nan])
    assert ((got[nan] & 0x7c00) == 0x7c00).all() and ((got[nan] & 0x3ff) != 0).all()
    assert np.array_equal(got[nan] >> 15, (x[nan].view(np.uint32) >> 31).astype(np.uint16))
