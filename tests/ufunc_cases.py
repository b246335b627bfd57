"""Values shared by the tests: edge values of the ufunc tests (trace and end to end: every integer
dtype's extremes and small values, ldexp exponents that wrap, saturate or land in subnormals, float
specials) and random arrays of any dtype (:func:`random_array`)."""
import numpy as np

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
EXPONENTS = [-2 ** 63, -2 ** 40, -2 ** 32 - 1, -2 ** 31, -1100, -1075, -1074, -150, -149, -25, -24,
             -1, 0, 1, 15, 16, 127, 128, 1023, 1024, 2 ** 31 - 1, 2 ** 32 + 1, 2 ** 63 - 1]


def int_edges(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    vals = (info.min, info.min + 1, -12, -7, -1, 0, 1, 2, 6, 7, 12, info.max - 1, info.max)
    return np.array(sorted({v for v in vals if info.min <= v <= info.max}), dtype)


def float_specials(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    tiny, big = float(info.smallest_subnormal), float(info.max)
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1.5, -1.5, 3.0, tiny, -tiny,
                     float(info.smallest_normal), 3 * tiny, big, -big], dtype)


def random_array(rng, shape, dtype, span: int = 50) -> np.ndarray:
    """Random values of ``dtype``: standard normal floats, fair bools, integers in [-span, span)
    (cast, so an unsigned dtype wraps the negative ones)."""
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    return rng.integers(-span, span, shape).astype(dtype)
