"""CUDA C of a row sort: every row of a C-contiguous ``(rows, n)`` array sorted in shared memory by
one block (a bitonic network over the row padded to a power of two), for ``np.sort`` /
``np.argsort`` along an axis whose rows fit on chip. CuPy's ``sort`` along an axis sorts the whole
array with row keys (5.4 ms for 4096 rows of 4096 float32 on an H200, 2026-11-27, where the
normalisation and softmax around it take 0.09 ms), so a row sort is the library kernel kfuse runs.

Values are sorted as order-preserving unsigned keys (floats: sign-flipped bits, every NaN the
largest key, so NaNs go last as in NumPy; padding is the largest key too and never read back).
``argsort`` sorts (key, index) pairs compared key first, then index: NumPy's ``kind="stable"``
order, a valid order for its default kind. The block's threads each take pairs of the network's
stage (``P / 2`` pairs a stage, ``P`` the padded length); a barrier between stages."""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

_KEY = {1: ("unsigned int", 32), 2: ("unsigned int", 32), 4: ("unsigned int", 32),
        8: ("unsigned long long", 64)}
_CTYPE = {"float16": "unsigned short", "float32": "float", "float64": "double", "bool": "unsigned char",
          "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
          "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
          "uint64": "unsigned long long"}
SORTABLE = tuple(_CTYPE)


@dataclasses.dataclass(frozen=True)
class RowSort:
    """A row sort kernel: the dtype sorted and whether it returns indices (``argsort``)."""
    dtype: str
    indices: bool = False

    @property
    def name(self) -> str:
        return f"kfuse_row_{'argsort' if self.indices else 'sort'}_{self.dtype}"

    @property
    def key_bytes(self) -> int:
        return 8 if np.dtype(self.dtype).itemsize == 8 else 4

    def smem_bytes(self, padded: int) -> int:
        """Shared memory for a row padded to ``padded`` elements: keys, and indices for argsort."""
        return padded * (self.key_bytes + (4 if self.indices else 0))


def _to_key(dtype: str, K: str, bits: int) -> tuple[str, str]:
    """(key from value ``v``, value from key ``k``) expressions for ``dtype``."""
    dt = np.dtype(dtype)
    top = f"(({K})1 << {bits - 1})"
    if dt.kind == "f":
        if dtype == "float16":                       # bits as unsigned short; NaN: exponent all ones, mantissa set
            nan = "((v & 0x7c00u) == 0x7c00u && (v & 0x03ffu))"
            key = f"({nan} ? ~({K})0 : ((v & 0x8000u) ? ({K})(0xffffu & ~v) : ({K})(v | 0x8000u)))"
            val = "(unsigned short)((k & 0x8000u) ? (k & 0x7fffu) : (~k & 0xffffu))"
            return key, val
        U = "unsigned int" if dtype == "float32" else "unsigned long long"
        cast = "__float_as_uint" if dtype == "float32" else "(unsigned long long)__double_as_longlong"
        back = "__uint_as_float" if dtype == "float32" else "__longlong_as_double"
        ub = 32 if dtype == "float32" else 64
        sign = f"(({U})1 << {ub - 1})"
        key = f"(v != v ? ~({K})0 : ((({cast}(v)) & {sign}) ? ({K})(~{cast}(v)) : ({K})({cast}(v) | {sign})))"
        val = f"{back}(({'long long' if ub == 64 else 'unsigned int'})((k & {sign}) ? (k & ~{sign}) : ~k))"
        return key, val
    if dt.kind in "iub":
        if dt.kind == "i":       # offset binary: flip the sign bit of the value widened to the key
            key = f"(({K})(long long)v ^ {top})"
            val = f"({_CTYPE[dtype]})(long long)(k ^ {top})"
        else:
            key = f"(({K})v)"
            val = f"({_CTYPE[dtype]})k"
        return key, val
    raise ValueError(dtype)


@functools.cache
def source(spec: RowSort) -> str:
    """The kernel: ``(const T* in, T* out | int64* idx, int rows, int n, int padded)``, a block a
    row, ``spec.smem_bytes(padded)`` bytes of dynamic shared memory."""
    K, bits = _KEY[np.dtype(spec.dtype).itemsize]
    T = _CTYPE[spec.dtype]
    key, val = _to_key(spec.dtype, K, bits)
    if spec.indices:
        out = "long long* __restrict__ out"
        idx_decl = "  unsigned int* sidx = (unsigned int*)(skey + padded);\n"
        idx_init = "    sidx[i] = i;\n"
        less = ("const unsigned int ia = sidx[lo], ib = sidx[hi];\n"
                "        const bool swap = up ? (kb < ka || (kb == ka && ib < ia)) : (ka < kb || (ka == kb && ia < ib));")
        swap_idx = " sidx[lo] = ib; sidx[hi] = ia;"
        store = "out[base + i] = (long long)sidx[i];"
    else:
        out, idx_decl, idx_init, swap_idx = f"{T}* __restrict__ out", "", "", ""
        less = "const bool swap = up ? (kb < ka) : (ka < kb);"
        store = f"{{ const KEY k = skey[i]; out[base + i] = {val}; }}"
    return f"""typedef {K} KEY;
extern "C" __global__ void {spec.name}(const {T}* __restrict__ in, {out}, int rows, int n, int padded) {{
  extern __shared__ __align__(16) unsigned char smem_raw[];
  KEY* skey = (KEY*)smem_raw;
{idx_decl}  const long long base = (long long)blockIdx.x * n;
  for (int i = threadIdx.x; i < padded; i += blockDim.x) {{
    if (i < n) {{ const {T} v = in[base + i]; skey[i] = {key}; }} else skey[i] = ~(KEY)0;
{idx_init}  }}
  __syncthreads();
  const int half = padded >> 1;
  for (int k = 2; k <= padded; k <<= 1) {{
    for (int j = k >> 1; j > 0; j >>= 1) {{
      for (int i = threadIdx.x; i < half; i += blockDim.x) {{
        const int lo = 2 * i - (i & (j - 1)), hi = lo + j;
        const bool up = (lo & k) == 0;
        const KEY ka = skey[lo], kb = skey[hi];
        {less}
        if (swap) {{ skey[lo] = kb; skey[hi] = ka;{swap_idx} }}
      }}
      __syncthreads();
    }}
  }}
  for (int i = threadIdx.x; i < n; i += blockDim.x) {store}
}}
"""
