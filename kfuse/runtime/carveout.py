"""The L1/shared-memory carve-out of the CUDA C row kernels: the tuned percentage a kind of row
kernel asks for on a known GPU (``DeviceSpec.row_carveout``), raised to what the blocks an SM can
hold need, and set on a loaded kernel through CuPy's driver module."""
from __future__ import annotations

from ..fusion import cost

CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9   # cuFuncSetAttribute: percent of L1/shared as shared
CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1     # cuFuncGetAttribute: a block's static shared memory
MAX_BLOCKS_PER_SM = 32                      # resident blocks an SM (sm_80, sm_90)
BLOCK_RESERVED_SHARED = 1024                # shared memory the system reserves a block (sm_80+)


def row_carveout(variant, device_name: str, writes_rows: bool = True) -> int | None:
    """The preferred L1/shared carve-out (percent shared) of a one-pass row kernel on this device
    (``DeviceSpec.row_carveout``; ``writes_rows``: the kernel stores full-size rows), or None."""
    known = cost.known_device(device_name)
    if variant.mode != "row" or variant.split or not known or not known.row_carveout:
        return None
    c = known.row_carveout
    return c.reread if variant.reload else c.rows if writes_rows else c.reduction


def static_shared(driver, func) -> int | None:
    """A loaded kernel's static shared memory a block (bytes), None where the driver module cannot
    say (then the tuned carve-out stays as it is)."""
    get = getattr(driver, "funcGetAttribute", None)
    if get is None:
        return None
    try:
        return int(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func.ptr))
    except driver.CUDADriverError:
        return None


def carveout_for_occupancy(pct: int, block: int, static_bytes: int, props: dict) -> int:
    """Carve-out ``pct`` raised to what the blocks an SM can hold by threads need, so it never caps
    occupancy. Why: the H200's 0% for row kernels was tuned on large blocks; a 1024-wide masked
    softmax (64-thread blocks, 2 KiB of shared memory each with the reserve: 32 an SM need 64 KiB)
    ran its CUDA C kernel in 231 us where Numba-CUDA's, the same variant and instruction mix but no
    carve-out set, ran in 136 (H200, one corpus run). Not yet measured with this rule."""
    known = cost.known_device(props.get("name", ""))
    per_sm = known.shared_mem_per_sm if known else props.get("shared_mem_per_block_optin", 0)
    if per_sm <= 0:
        return pct
    blocks = min(MAX_BLOCKS_PER_SM, props.get("max_threads_per_sm", 2048) // max(block, 1))
    need = blocks * (static_bytes + BLOCK_RESERVED_SHARED)
    return max(pct, min(100, -(-100 * need // per_sm)))


def set_carveout(func, pct: int, block: int, props: dict) -> None:
    """Set ``pct`` (raised for occupancy where the kernel's static shared memory is known) on the
    loaded kernel ``func`` (a CuPy ``Function``)."""
    import cupy
    static = static_shared(cupy.cuda.driver, func)
    if static is not None:
        pct = carveout_for_occupancy(pct, block, static, props)
    cupy.cuda.driver.funcSetAttribute(func.ptr, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, pct)
