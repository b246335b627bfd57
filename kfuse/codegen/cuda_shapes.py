"""Launch shapes for the CUDA emitter (:mod:`kfuse.codegen.cuda`): the :class:`Variant` a kernel is
emitted for and the :class:`CudaKernel` it is rendered to, which accesses can be 16-byte vectors,
the row kernels' block and register slots, and where re-loading rows through L1 beats holding
them (``reload_pays``). The runtime (:mod:`kfuse.runtime.cuda`) picks a variant from these per
call; the emitter only reads it. The runtime imports this module, not the renderer: a warm first
call reads its rendered kernels from disk (``runtime.rendered``) and never imports
``codegen.cuda`` and its emitter classes (tests/runtime/test_rendered.py checks it)."""
from __future__ import annotations

import math

import numpy as np

from . import kernel_ir as K
from ..errors import CompileError
from .cuda_complex import PROD_SCAN
from ..fusion.kinds import ROW_KINDS, GroupKind
from ..fusion.gpu_chunks import GRID_COMBINE_DIRECT, grid_combine_groups  # (the model prices the combine too)
from ..fusion.reduction import PEEL_MIN_UNITS
from ..ir.ops import BY_UFUNC, FLOP_WEIGHT
from ..records import record


@record
class Variant:
    """The code shape a kernel is emitted for, chosen per call by the runtime (fields below)."""
    mode: str = "elementwise"   # "elementwise" | "tile" | "row" | "col" | "scan"
    vec: int = 1                # elements per vector access (elementwise)
    idx64: bool = False         # 64-bit index math
    cache_k: int = 0            # row mode: register slots a thread (0: re-read from L2)
    block: int = 256            # threads per block
    barriers: int = 2           # row mode: __syncthreads per block reduction (1: double-buffered smem)
    ept: int = 1                # elementwise: vector units a thread handles per loop trip (loads in flight)
    stream: bool = False        # evict-first vector loads/stores of data touched once (full-domain buffers)
    min_blocks: int = 0         # __launch_bounds__ minimum resident blocks a SM (caps registers; 0: none)
    reload: bool = False        # row mode with cache_k: later phases re-load the row (L1/L2 hints) instead
                                # of holding it in registers; float32 sums then accumulate in float32
    exact: bool = False         # the grid covers the domain once, exactly: elementwise (2+ units a thread, or
                                # 1 where a StreamTile says one pass), grid x block x ept
                                # units; row, a block per row of cache_k x block units (no loop, no guards,
                                # a shared slot per reduction and no barrier after reading it)
    split: int = 0              # row mode, a reduction too long for its few rows to fill the GPU: each
                                # row in ``split`` chunks, in two kernels (``stage``), deterministic:
    stage: int = 0              # 1: a block (row) or thread (col) a chunk writes its accumulators to a
                                # workspace; 2: a block a row combines its chunks' (a fixed tree), finishes it
    lanes: int = 32             # row mode, packed: short rows, ``lanes`` threads a row, block / lanes rows a
                                # block at a time, combined by shuffles alone (no barrier); scan mode:
                                # lanes sharing a row (32 / lanes rows a warp), a chunk ``vec``
                                # segments of lanes elements (kfuse.codegen.cuda_scan) ...
    packed: bool = False        # ... or, rows no longer than lanes, ``vec`` segments each of other rows
    tile_t: int = -1            # tile mode (codegen.cuda_tile2d): the domain dim the staged loads run along ...
    staged: tuple = ()          # ... and those loads (their statements' variables), read through shared memory
    side: int = 32              # tile mode: a tile's side in elements (block / side thread rows)
    tail: bool = False          # elementwise, one loop dim: vector units over the first N - N % vec
                                # elements, the last N % vec one by one (codegen.flat_domain)
    grid_sync: bool = False     # col or row mode, several passes over columns or rows too few to fill the
                                # GPU: a thread (col) or block (row) a chunk of ``split``, every block resident
                                # (a cooperative launch); each pass's chunk accumulators meet in a workspace
                                # at grid barriers, combined in chunk order by chunk 0 (deterministic)
    peel: bool = False          # row mode, vec > 1, rows not all starting aligned: each row's head (up to its
                                # first aligned element, from the pointer) and tail element by element, its
                                # body in vectors; accesses aligned otherwise lane by lane (codegen.cuda_peel)

    @property
    def tag(self) -> str:
        t = f"{self.mode[0]}v{self.vec}{'l' if self.idx64 else 'i'}k{self.cache_k}b{self.block}"
        t += f"u{self.ept}" if self.ept > 1 and self.mode == "elementwise" else ""
        t += "c" if self.stream else ""
        t += f"m{self.min_blocks}" if self.min_blocks else ""
        t += "r" if self.reload else ""
        t += "x" if self.exact else ""
        t += "t" if self.tail else ""
        t += f"p{self.split}" if self.stage == 1 else f"q{self.split}" if self.stage == 2 else ""
        t += f"g{self.lanes}{'w' if self.packed else ''}" if self.mode == "scan" else ""
        t += f"y{self.split}" if self.grid_sync else ""
        t += f"w{self.lanes}" if self.mode == "row" and self.packed else ""
        t += "h" if self.peel else ""
        t += f"d{self.tile_t}_" + "_".join(self.staged) + (f"t{self.side}" if self.side != 32 else "") if self.mode == "tile" else ""
        return t + ("s2" if self.barriers == 2 and self.mode == "row" else "")


@record
class CudaKernel:
    """A rendered kernel: its name, CUDA C source and variant, and what the host passes it
    (``codegen.cuda.emit_kernel`` makes it; it lives here, with the variant, so that the runtime
    and the index of rendered kernels, ``runtime.rendered``, read one without the renderer)."""
    name: str
    source: str
    variant: Variant
    # index divisors the host passes as (multiplier, shift) pairs after the strides, in order:
    # (domain dim, vector width): divide by extent(dim) // width (runtime.cuda.fast_divisor);
    # (size name, 1): divide by that size
    divisors: tuple = ()
    # which of the conventional scalar parameters (sizes, input strides, output strides, divisor
    # pairs: codegen.cuda's _Gen.scalar_params) the kernel declares, a bool each in that order; () = all
    scalars: tuple = ()

    def keep_scalars(self, values: list) -> list:
        """``values`` (every conventional scalar, in order) cut to the ones this kernel takes."""
        if not self.scalars:
            return values
        if len(values) != len(self.scalars):
            raise CompileError(f"kfuse: {self.name} takes {len(self.scalars)} scalar slots, got {len(values)}")
        return [x for x, keep in zip(values, self.scalars) if keep]


def vector_access(index, last: str) -> bool:
    """True when an access's last index is the innermost loop variable plus an offset free of it
    (a slice's start: the runtime checks that the offset keeps the vector aligned,
    :func:`vector_offset`) and no other component uses it (a contiguous run along the vector);
    False means it ignores that var.
    A GATHER's position that does not depend on it (an embedding row) qualifies: the emitter
    computes the position before the vector load (:func:`lane_invariant`)."""
    if not index:
        return False
    uses = [last in K.expr_vars(e) for e in index]
    return K.unit_offset(index[-1], last) is not None and not any(uses[:-1])


def vector_offset(index, last: str):
    """The offset (an index expression of sizes and literals) of a vector access's last index
    from the vector's loop variable; None where it also depends on loop variables (no vector)."""
    off = K.unit_offset(index[-1], last)
    return None if off is None or any(v.startswith("i") for v in K.expr_vars(off)) else off


def _innermost(kir: K.KernelIR) -> tuple[str | None, list]:
    """(the innermost loop variable a vector runs along, or None; the statements run along it):
    elementwise, the innermost domain dim and the kernel's statements; reduce, the innermost
    reduced dim and the phases' loop bodies."""
    if kir.kind in ROW_KINDS:
        dims = kir.loop_dims(kir.inner)
        stmts = [s for ph in kir.phases for s in ph.body]
    else:
        dims = kir.loop_dims(range(len(kir.domain)))
        stmts = list(kir.phases[0].pre)
    return (f"i{dims[-1]}" if dims else None), stmts


def vector_accesses(kir: K.KernelIR):
    """(last loop var, the Loads/Stores that would use vector accesses), or None when some access
    uses the innermost loop variable in another way (then only the scalar variant fits).
    Elementwise: the innermost domain dim; reduce: the innermost reduced dim (row mode), where a
    load may also use it blockwise (:func:`blockwise`: read once a vector unit, the runtime
    checking :func:`blockwise_divisors` per call)."""
    last, stmts = _innermost(kir)
    if last is None:
        return None
    vec = []
    for s in stmts:
        if isinstance(s, K.Load) and K.gathers(s.index) and kir.kind in ROW_KINDS:
            return None     # a row's gather: loaded in statement order, element by element
        if isinstance(s, (K.Load, K.Store)):
            if vector_access(s.index, last):
                vec.append(s)
            elif isinstance(s, K.Load) and kir.kind in ROW_KINDS and blockwise(s.index, last) is not None:
                continue
            elif isinstance(s, K.Store) or any(last in K.expr_vars(e) for e in s.index):
                return None
    return last, vec


def blockwise(index, last: str) -> list | None:
    """The ``(offset, divisor)`` pairs of an access that uses the loop variable ``last`` only as
    ``(last + offset) // divisor`` (a divisor of sizes and literals): a per-channel weight read
    along a GroupNorm row, ``g[(i1 * s + i2) // (h * w)]``. Within a vector unit (``last`` a
    multiple of the width) such a position is one element wherever every offset and divisor is a
    multiple of the width, so the load runs once a unit. None where ``last`` appears otherwise."""
    out: list = []

    def walk(e) -> bool:
        if last not in K.expr_vars(e):
            return True
        if isinstance(e, K.IBin) and e.op == "//":
            off = K.unit_offset(e.lhs, last)
            if off is not None and not any(v.startswith("i") for v in K.expr_vars(e.rhs)):
                out.append((off, e.rhs))
                return True
        if isinstance(e, K.IBin) and e.op in ("+", "-", "*"):
            return walk(e.lhs) and walk(e.rhs)
        return False
    return out if all(walk(e) for e in index) and out else None


def peel_fits(kir: K.KernelIR) -> str | None:
    """Why ``kir`` cannot render a peeled row (Variant.peel, codegen.cuda_peel; None: it can): one
    row loop dim, and no blockwise load (read once a unit, which assumes units start at multiples
    of the width)."""
    if len(kir.loop_dims(kir.inner)) != 1:
        return "a row of several loop dims"
    if blockwise_divisors(kir):
        return "a blockwise load"
    return None


def blockwise_divisors(kir: K.KernelIR) -> list:
    """Every ``(offset, divisor)`` of the blockwise loads :func:`vector_accesses` admits."""
    last, stmts = _innermost(kir)
    return [p for s in stmts if isinstance(s, K.Load) and not vector_access(s.index, last)
            for p in (blockwise(s.index, last) or ())] if last is not None and kir.kind in ROW_KINDS else []


def blockwise_fits(kir: K.KernelIR, vec: int, env: dict) -> bool:
    """Whether every blockwise load of ``kir`` (:func:`blockwise_divisors`) reads one element a
    ``vec``-wide unit at the sizes ``env``: its offsets and divisors whole vectors."""
    return all(multiple_of(o, vec, env) and multiple_of(d, vec, env) for o, d in blockwise_divisors(kir))


def multiple_of(e, n: int, env: dict) -> bool:
    """Whether index expression ``e`` is a multiple of ``n`` for every value of its loop variables
    (names starting with ``i``: unknown), its sizes read from ``env``: a sufficient test."""
    if n == 1:
        return True
    if isinstance(e, K.ILit):
        return e.value % n == 0
    if isinstance(e, K.IVar):
        return e.name in env and int(env[e.name]) % n == 0
    if isinstance(e, K.IBin) and e.op in ("+", "-"):
        return multiple_of(e.lhs, n, env) and multiple_of(e.rhs, n, env)
    if isinstance(e, K.IBin) and e.op == "*":
        return multiple_of(e.lhs, n, env) or multiple_of(e.rhs, n, env)
    return False


def vector_ok(kir: K.KernelIR, lanes: bool = False) -> bool:
    """Whether the elementwise IR admits the vector variant: every store contiguous along the
    innermost loop variable, every load contiguous along it or independent of it (read once) --
    except in a kernel with a PAD along it (an index test on it): there a load using it another
    way (the PAD's wrapped read) is gathered lane by lane, as a GATHER's load always is. Never a
    scatter: its store goes to a data-dependent address, element by element. ``lanes``: loads
    running along another dim too (a permuted operand whose own contiguous dim is too short to
    tile: NHWC bytes read for an NCHW output), gathered lane by lane, the stores still vectors."""
    if kir.kind in (GroupKind.REDUCE, GroupKind.SCAN, GroupKind.SCATTER) or not kir.phases:
        return False
    dims = kir.loop_dims(range(len(kir.domain)))
    if not dims:
        return False
    last = f"i{dims[-1]}"
    stmts = kir.phases[0].pre
    if any(isinstance(s, K.Store) and not vector_access(s.index, last) for s in stmts):
        return False
    gathers = [s for s in stmts if isinstance(s, K.Load) and not K.gathers(s.index)
               and not vector_access(s.index, last) and any(last in K.expr_vars(e) for e in s.index)]
    # (a flattened domain, codegen.flat_domain: a broadcast operand's b[L % C] lane by lane)
    return not gathers or lanes or pads_along(stmts, last) or len(dims) == 1


def pads_along(stmts, last: str) -> bool:
    """Whether a PAD tests the innermost loop variable ``last`` (an index statement using it)."""
    return any(isinstance(s, K.Index) and last in K.expr_vars(s.expr) for s in stmts)


def lane_invariant(stmts, loads, last: str) -> list:
    """The statements computing the positions (``IVal``) of the gathered ``loads``, in order:
    none depends on the innermost loop variable ``last``, so they run once a vector unit,
    before its loads, instead of once a lane."""
    need = K.dependencies(stmts, [e.name for s in loads for e in _ivals(s.index)])
    out = [s for s in stmts if getattr(s, "dst", None) in need]
    assert not any(last in set().union(*map(K.expr_vars, K.stmt_index(s))) for s in out)
    return out


def _ivals(index) -> list:
    out = []
    for e in index:
        if isinstance(e, K.IVal):
            out.append(e)
        elif isinstance(e, K.IBin):
            out += _ivals((e.lhs, e.rhs))
    return out


def lane_itemsize(kir: K.KernelIR) -> int:
    """The widest element a kernel moves along its innermost loop variable (what sets its vector
    width). Elementwise: loads independent of that variable are read once a unit, so an int64
    index broadcast along an embedding row does not halve the float32 row's vector. Reduce: the
    rows' loads and stores (in the phases' loops); a value read or written once a row (a picked
    label's logit) is scalar."""
    last, stmts = _innermost(kir)
    if last is None:
        return max_itemsize(kir)
    sizes = [np.dtype(kir.outputs[s.buf].dtype if isinstance(s, K.Store) else s.dtype).itemsize
             for s in stmts if isinstance(s, (K.Load, K.Store))
             and (isinstance(s, K.Store) or any(last in K.expr_vars(e) for e in s.index))]
    return max(sizes or [max_itemsize(kir)])


# An elementwise kernel whose arithmetic is heavy for the bytes it moves runs EW_HEAVY_UNITS vector
# units a thread, every unit's loads issued before any unit's arithmetic (Variant.ept): independent
# chains hide the special functions' latency. H200, 2026-11-28, us at 1 / 2 units a thread: mish
# (3.6 weighted FLOPs a byte) 158 / 140, float64 tanh-GELU (2.4) 81 / 75, float64 normal density
# (2.8) 125 / 117; the float32 tanh-GELU (2.0) 130 / 131, a memory-bound P1 0.129 / 0.130 ms.
HEAVY_FLOPS_PER_BYTE = 2.25
F64_SPECIAL_SCALE = 4           # a float64 special function's weight over its float32 one (FP64 pipes)


def flops_per_byte(kir: K.KernelIR) -> float:
    """An elementwise kernel's weighted FLOPs (``ir.ops.FLOP_WEIGHT``, float64 special functions
    ``F64_SPECIAL_SCALE`` times theirs) over the bytes of its full-domain loads and stores, per
    domain element (operands broadcast along a dim are read from cache)."""
    full = {f"i{d}" for d in kir.loop_dims(range(len(kir.domain)))}
    flops = nbytes = 0.0
    for s in kir.phases[0].pre:
        if isinstance(s, K.Op):
            op = BY_UFUNC.get(s.op)
            w = 0.0 if s.op == "cast" else FLOP_WEIGHT.get(op, 1.0) if op is not None else 1.0
            flops += w * (F64_SPECIAL_SCALE if w >= 8 and s.dtype == "float64" else 1)
        elif isinstance(s, (K.Load, K.Store)) and full <= set().union(*map(K.expr_vars, s.index)):
            nbytes += np.dtype(kir.outputs[s.buf].dtype if isinstance(s, K.Store) else s.dtype).itemsize
    return flops / nbytes if nbytes else 0.0


def max_itemsize(kir: K.KernelIR) -> int:
    return max([np.dtype(b.dtype).itemsize for b in kir.inputs + kir.outputs] or [1])


def default_variant(kir: K.KernelIR) -> Variant:
    """The variant for contiguous, aligned buffers at the sizes the IR was lowered for."""
    vals = [s.value for s in kir.sizes]
    big = any(v >= 2 ** 31 for v in vals) or np.prod([max(v, 1) for v in vals], dtype=float) >= 2 ** 31
    if kir.kind == GroupKind.SCATTER:      # its positions reach anywhere in the output, not only the domain
        big = big or any(math.prod(b.shape) >= 2 ** 31 for b in kir.outputs)
    if kir.kind == GroupKind.SCAN:       # contiguous rows: lanes of a warp a row
        lanes, vec, packed = scan_shape(kir.extent(kir.loop_dims(kir.inner)[-1]), max_itemsize(kir))
        return Variant("scan", vec, bool(big), 0, 128, lanes=lanes, packed=packed)
    if kir.kind == GroupKind.REDUCE:
        L = math.prod(kir.extent(d) for d in kir.inner)
        vec = max(1, 16 // lane_itemsize(kir)) if vector_accesses(kir) else 1
        lv = kir.extent(kir.loop_dims(kir.inner)[-1]) if kir.loop_dims(kir.inner) else 1
        env = {s.name: s.value for s in kir.sizes}
        peel = bool(lv % vec) and L // vec >= PEEL_MIN_UNITS and peel_fits(kir) is None
        if (lv % vec and not peel) or not blockwise_fits(kir, vec, env):
            vec, peel = 1, False
        block, kc = row_shape(L // vec)
        return Variant("row", vec, bool(big), kc, block, peel=peel)
    vec = max(1, 16 // lane_itemsize(kir)) if vector_ok(kir) else 1
    return Variant("elementwise", vec, bool(big), 0, 256)


def scan_shape(row_len: int, itemsize: int) -> tuple[int, int, bool]:
    """(lanes a row, segments a chunk, packed) of a scan row (Variant mode ``"scan"``): a row of
    up to 32 elements takes as few lanes as cover it and a chunk is ``vec`` segments of other rows
    (packed); a longer row 32 lanes and up to 32 bytes a lane a chunk (8 float32). Either way a
    lane's ``vec`` loads are in flight together, each coalesced across the warp."""
    lanes = min(32, 1 << max(0, row_len - 1).bit_length())
    emax = max(1, min(8, 32 // itemsize))
    if row_len <= lanes:
        return lanes, emax, True
    return lanes, min(emax, 1 << max(0, -(-row_len // lanes) - 1).bit_length()), False


def ordered_product(sc: K.Scan) -> bool:
    """A product scan whose tree may leave NumPy's values past a non-finite prefix: complex (which
    parts are NaN follows the order), or floating (NumPy's running product, once it overflows,
    stays infinite; a tree's grouping can come back to a finite value: float16 cumprod, fuzz seed
    27 #191 on cuda)."""
    return sc.op == PROD_SCAN or (sc.op == "multiply" and sc.dtype.startswith(("float", "bfloat", "complex")))


def scan_split_ok(kir: K.KernelIR) -> bool:
    """Whether a scan kernel's rows can be cut into chunks scanned in two stages (each chunk's
    total first, then every chunk from the totals before it): no scan reads another's values,
    and no complex or floating product scans (multiplying chunk totals is another association than
    NumPy's running product, which past an infinite or NaN factor changes which parts are NaN, and
    past an overflow stays infinite where chunk totals can come back to finite values)."""
    after: set = set()          # values computed from a scan
    for s in (s for ph in kir.phases for s in ph.body):
        reads = set(K.stmt_reads(s))
        if isinstance(s, K.Scan) and ordered_product(s):
            return False
        if isinstance(s, K.Scan) and reads & after:
            return False
        if isinstance(s, K.Scan) or reads & after:
            after.add(getattr(s, "dst", None))
    return True


def split_ok(kir: K.KernelIR) -> bool:
    """Whether a reduce kernel can run as two stages (Variant.split): one pass over the row (one
    looping phase, with accumulators), so a chunk's accumulators are all a row needs of it."""
    loops = [ph for ph in kir.phases if ph.has_loop]
    return kir.kind == GroupKind.REDUCE and len(loops) == 1 and bool(loops[0].accs) and not wide_accs(kir)


def wide_accs(kir: K.KernelIR) -> bool:
    """Whether an accumulator is wider than ``SPLIT_SLOT`` (a complex128 argmax/argmin pair, 32
    bytes): no workspace slots (split, grid_sync), two shared-memory slots' room each row combine."""
    return any(a.kind in ("argmax", "argmin") and a.acc_dtype == "complex128" for ph in kir.phases for a in ph.accs)


SPLIT_SLOT = 16     # workspace bytes an accumulator a chunk (the widest: KfArg<double>)
GRID_SYNC_HEAD = 16  # grid_sync: workspace bytes before the accumulators (the barrier's counter)
def grid_sync_ok(kir: K.KernelIR) -> bool:
    """Whether a reduce kernel can run as one grid-synchronised launch (Variant.grid_sync): a pass
    with accumulators and more looping passes than ``split_ok`` takes (a single accumulating pass
    splits into two kernels instead), no scan."""
    return (kir.kind == GroupKind.REDUCE and not wide_accs(kir)
            and sum(1 for ph in kir.phases if ph.has_loop and ph.accs) >= 1 and not split_ok(kir))


def rereads_rows(kir: K.KernelIR) -> bool:
    """Whether a later phase loads what an earlier phase loaded (a row read by several passes)."""
    seen = set()
    for ph in kir.phases:
        keys = {(s.buf, s.index) for s in ph.body if isinstance(s, K.Load)}
        if keys & seen:
            return True
        seen |= keys
    return False


def reload_pays(kir: K.KernelIR) -> bool:
    """Whether Variant.reload is the faster row kernel: rows read by several passes whose
    reductions are all float32 sums (layernorm, RMSNorm: P3 0.1319 vs 0.1352 ms held in
    registers); not with a max/min pass (softmax: 0.1456 vs 0.134 ms), H200, 2026-11-22."""
    accs = [a for ph in kir.phases for a in ph.accs]
    return bool(accs) and rereads_rows(kir) and all(a.kind == "sum" and a.src_dtype == "float32" for a in accs)


# ops worth a register slot a unit rather than computing again in a later pass over a held row
COSTLY = frozenset({"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "sinh", "cosh", "sin", "cos",
                    "tan", "arcsin", "arccos", "arctan", "arctan2", "arcsinh", "arccosh", "arctanh", "power",
                    "logaddexp", "logaddexp2", "cbrt"})


def reloaded_buffers(kir: K.KernelIR) -> dict[int, int]:
    """The input buffers a reduce kernel's accumulating passes load along the row (what
    Variant.reload keeps in L1), with their element sizes."""
    last, _ = _innermost(kir)
    return {s.buf: np.dtype(s.dtype).itemsize for ph in kir.phases if ph.accs for s in ph.body
            if isinstance(s, K.Load) and last is not None and any(last in K.expr_vars(e) for e in s.index)}


def recomputed_values(kir: K.KernelIR) -> list:
    """The value keys (``kernel_ir.value_keys``) of float ops in ``COSTLY`` that two or more
    passes over a row compute alike (a softcap's tanh in a softmax's three), in order."""
    counts: dict = {}
    for ph in kir.phases:
        keys = K.value_keys(ph.body)
        mine = {keys[s.dst] for s in ph.body
                if isinstance(s, K.Op) and s.op in COSTLY and s.dtype in ("float32", "float64")}
        for k in mine:
            counts[k] = counts.get(k, 0) + 1
    return [k for k, n in counts.items() if n >= 2]


def writes_rows(kir: K.KernelIR) -> bool:
    """Whether a row kernel stores full-size rows (softmax), not only a value a row (a row norm)."""
    return any(isinstance(s, K.Store) for ph in kir.phases for s in ph.body)


def row_shape(units: int, per_thread: int = 4) -> tuple[int, int]:
    """(threads a block, register slots a thread) for a row of ``units`` vector units: about
    ``per_thread`` units a thread, 32..1024 threads; rows longer than 16 slots a thread are
    re-read from L2."""
    block = max(32, min(1024, 1 << max(0, (units - 1) // per_thread).bit_length()))
    kc = -(-units // block)
    if kc > 16:
        return 1024, 0
    return block, (1 << (kc - 1).bit_length()) if kc > 1 else kc
