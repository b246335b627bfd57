"""KernelIR -> the Python source of a ``numba.cuda.jit`` kernel, and its PTX via ``numba.cuda.compile_ptx``.

The kernel has the same parameters as :mod:`kfuse.codegen.cuda`'s (so both GPU backends share one
launch convention): output pointers, input pointers, the KernelIR's int64 size parameters, the
strides (in elements) of every input dim, then of every output dim, then (an elementwise variant
with ``fastdiv``) a (multiplier, shift) pair for each non-leading loop dim. Pointers are typed
``CPointer(storage type)`` (bool as uint8), so nothing about a size or a stride is compiled in: a
new size reuses the compiled kernel. A host scalar input (``Buffer.host``) is a parameter of its
storage type, by value (a bool a byte, a float16 its two bytes), as CUDA C's ``KfHost<T>``. The source is self-contained: it defines the kernel
``kfuse_kernel``, its signature ``SIG`` and ``LAUNCH_BOUNDS``; the source text is the memo key.

Kernel shapes (an :class:`NVariant`: the CUDA C backend's ``cuda_shapes.Variant`` for the same
arguments, as ``runtime.numba_cuda`` renders it; the schedule is chosen once, by one set of rules):
* elementwise: grid-stride over units of ``vec`` elements (16 bytes where every access along the
  innermost dim is contiguous and aligned: one ``ldv``/``stv`` vector access a unit,
  :mod:`kfuse.codegen.numba_cuda_mem`; a load not depending on that dim once a unit), ``ilp``
  units a thread per step (all loads issued before any compute, then the stores), then a scalar
  remainder, and with ``tail`` (a flattened domain, ``codegen.flat_domain``) its last ``N % vec``
  elements one by one; with ``fastdiv`` (a domain under 2^31 elements) the flat index is unravelled
  by multiply-high with host-computed divisors (``fast_div_dims``; runtime ``fast_divisor``), not by
  64-bit ``%``/``//`` (a software routine on the GPU: P1 on an H200 ran at 31% of the copy bandwidth with it);
  A ``where`` selecting by index alone with a costly arm (a concatenation's piece) runs as
  ``if``/``else`` (:mod:`kfuse.codegen.numba_cuda_branches`), and an index expression's division
  by a size is a multiply-high by a host pair (``NVariant.divs``), as CUDA C's;
* tile (elementwise, operands transposed against the output): ``side x side`` tiles of two
  dims staged through shared memory (:mod:`kfuse.codegen.numba_cuda_tile2d`);
* scatter: the elementwise loop, its ``ufunc.at`` store an atomic (``numba_cuda_scatter``);
* row (reduce): one block per outer index, threads stride over the reduced dims a unit of ``vec``
  elements at a time, warp shuffles then a shared-memory combine in a fixed order
  (deterministic); with ``cache_k > 0`` the row's loads are kept in registers (``cache_k``
  unrolled slots a thread), so each row is read once (softmax, layernorm), or with ``reload``
  loaded again by each reduction pass (float32 sums in float32, as CUDA C's);
* packed rows (row, ``packed``: rows of up to 128 units): ``lanes`` threads a row, ``block / lanes``
  rows a block at a time (a last group's spare threads redo the last row), shuffles among the row's
  lanes alone (no shared memory, no barrier); ``lanes`` 1 a thread a row;
* col (reduce, outer dim contiguous): one thread per outer index, a serial loop (coalesced), its
  rows unrolled as CUDA C's (``cuda_cols.COL_UNROLL``; chunks and re-read rows likewise), a trip's
  loads issued before its arithmetic and stores;
* scan (scan kernels, rows contiguous): lanes of a warp a row, shuffle-up trees
  (:mod:`kfuse.codegen.numba_cuda_scan`); a column scan is ``col``, in order;
* rows or columns too few to fill the GPU: two stages (``split``/``stage``) or one
  grid-synchronised launch (``grid_sync``), :mod:`kfuse.codegen.numba_cuda_rows`.
A row whose tree value a complex product's or max/min's association changes (a non-finite part,
``codegen.accs.redo_ops``) is reduced again in NumPy's order by each thread holding it (row mode).
Semantics follow NumPy: integer results wrap to the node dtype, ``//``/``%``/shifts/powers follow
NumPy's integer loops (0 for a zero divisor), ``maximum``/``minimum`` propagate NaN, reductions follow
``kernel_ir.ACC_KINDS``. float16 values live in float32 registers and every float16 op result is
rounded to float16, as NumPy's float16 loops do (and the CUDA backend). Math uses libdevice (``numba.cuda.libdevice``).

numba-cuda 0.30 does not import with NumPy >= 2.5: :func:`import_numba_cuda` is the one place that
imports it, turning a failure into one :class:`~kfuse.errors.DeviceError` naming the versions and
the fix; :func:`numba_cuda_available` says whether it imports (``backend="auto"`` checks it).
libNVVM: numba-cuda finds it through ``cuda-pathfinder`` (a CUDA toolkit under /usr/local/cuda*,
``CUDA_HOME``, or the ``nvidia-cuda-nvcc`` wheel); ``compile_ptx`` needs no GPU or driver.
The scalar rules and device-helper templates are in :mod:`kfuse.codegen.numba_cuda_ops`; the reduction
accumulators in :mod:`kfuse.codegen.numba_cuda_accs`.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import threading

import numpy as np

from ..errors import CompileError, DeviceError
from . import kernel_ir as K
from ..fusion.kinds import ROW_KINDS, GroupKind
from . import numba_cuda_scatter as scatter
from .cuda_rows import RowEmitter as CudaRows
from .cuda_shapes import blockwise, vector_access, vector_accesses
from .decompose import decompose
from .numba_cuda_accs import AccEmitter
from .numba_cuda_branches import BranchEmitter, branch_plan
from .numba_cuda_peel import PeelEmitter
from .numba_cuda_rows import RowEmitter, _first_factor
from .numba_cuda_scan import ScanEmitter, scan_renders
from .numba_cuda_tile2d import Tile2dEmitter
from .numba_cuda_variant import NVariant, default_variant, fast_div_dims, fast_div_pairs, fastdiv_fits, row_variant, size_divisors  # noqa: F401
from .numba_cuda_ops import NARROW_INTS, _HELPERS, _STORE, _const_value, op_expr, store_value

FN_NAME = "kfuse_kernel"

# --------------------------------------------------------------------------- importing numba-cuda


def _versions() -> str:
    try:
        from importlib.metadata import version
        nc = version("numba-cuda")
    except Exception:
        nc = "not installed"
    return f"numpy {np.__version__}, numba-cuda {nc}"


@functools.lru_cache(maxsize=None)
def _import():
    try:
        from numba import cuda
        from numba.cuda import libdevice, types  # noqa: F401
        del libdevice, types                     # imported only to check that they load
        return cuda, None
    except Exception as e:      # ImportError, AttributeError (np.row_stack), ...
        fix = ("pip install 'numpy<2.5'" if "row_stack" in str(e) or np.lib.NumpyVersion(np.__version__) >= "2.5.0"
               else "pip install numba-cuda 'numpy<2.5'")
        return None, (f"kfuse: the numba-cuda backend cannot import numba.cuda ({type(e).__name__}: {e}); "
                      f"installed: {_versions()}. numba-cuda 0.30 needs NumPy < 2.5 (np.row_stack was "
                      f"removed in 2.5). Fix: {fix}")


def import_numba_cuda():
    """The ``numba.cuda`` module, or one :class:`DeviceError` naming the versions and the fix."""
    mod, reason = _import()
    if mod is None:
        raise DeviceError(reason)
    return mod


def numba_cuda_available() -> tuple[bool, str]:
    """``(True, "")`` when numba.cuda imports, else ``(False, reason)``."""
    mod, reason = _import()
    return (mod is not None), (reason or "")


# --------------------------------------------------------------------------- the emitter


def _sum_terms(e: K.Expr) -> list:
    """The terms of index expression ``e`` as a sum (``a + b`` split, anything else one term)."""
    if isinstance(e, K.IBin) and e.op == "+":
        return _sum_terms(e.lhs) + _sum_terms(e.rhs)
    return [e]


class _Gen(K.StatementRenderer, AccEmitter, RowEmitter, PeelEmitter, ScanEmitter, Tile2dEmitter, BranchEmitter):
    def __init__(self, kir: K.KernelIR, variant: NVariant):
        self.kir, self.v = kir, variant
        va = vector_accesses(kir) if variant.vec > 1 and variant.mode != "scan" else None   # (scan: vec segments)
        self.unit_var = va[0] if va else None
        self.used: list[str] = []
        self.dt: dict[str, str] = {}       # var -> dtype name
        self.consts: dict[str, tuple] = {}  # var -> (value, dtype)
        self.globals: list[str] = []
        self.sfx = ""                       # name suffix of per-lane copies (ilp / cache slots)
        self.local: set[str] = set()        # names that get the suffix
        self.size_names = frozenset(s.name for s in kir.sizes)
        for ph in kir.phases:
            for s in ph.pre + ph.body:
                if isinstance(s, K.Const):
                    self.consts[s.dst] = (s.value, s.dtype)
                    self.dt[s.dst] = s.dtype

    def use(self, name: str) -> str:
        if name not in self.used:
            self.used.append(name)
        return name

    # -- names and index math
    def n(self, var: str) -> str:
        return var + self.sfx if var in self.local else var

    def ix(self, e: K.Expr) -> str:
        if isinstance(e, K.ILit):
            return str(e.value)
        if isinstance(e, (K.IVar, K.IVal)):
            return self.n(e.name)
        if e.op in ("//", "%") and self.v.fastdiv and self.v.mode in ("row", "col") and not (
                isinstance(e.rhs, K.IVar) and e.rhs.name in self.v.divs):
            # 32-bit index math (no offset reaches 2^30), indices never negative: one unsigned
            # division, as CUDA C's int "/", not a 64-bit floor division with its sign fix-ups
            return f"np.int64(np.uint32({self.ix(e.lhs)}) {e.op} np.uint32({self.ix(e.rhs)}))"
        if e.op in ("//", "%") and isinstance(e.rhs, K.IVar) and e.rhs.name in self.v.divs:
            lhs, d = self.ix(e.lhs), e.rhs.name      # (0 <= lhs < 2^31: runtime.gpu_launch.fast_divisor)
            q = f"((np.int64(ld.umulhi(np.int32({lhs}), dz{d}_m)) + {lhs}) >> dz{d}_s)"
            return q if e.op == "//" else f"({lhs} - {q} * {d})"
        return f"({self.ix(e.lhs)} {e.op} {self.ix(e.rhs)})"

    def offset(self, kind: str, k: int, index) -> str:
        """An access's element offset: the terms of loop variables first, then those of sizes
        alone (a slice's start), ``(i0 * st0 + i1 * st1) + (s5 * st0 + s6 * st1)``: a unit's
        accesses share the first sum, the second is loop-invariant (``(s5 + i0) * st0`` was a
        64-bit multiply an access: a 7-point stencil's 21 an element, compute-bound). An access
        along the vector's loop variable has unit stride (no multiply, as CUDA C's)."""
        unit = self.unit_var is not None and vector_access(index, self.unit_var)
        moving, fixed = [], []
        for d, e in enumerate(index):
            if isinstance(e, K.ILit) and e.value == 0:
                continue
            st = "" if unit and d == len(index) - 1 else f" * st_{kind}{k}_{d}"
            for t in _sum_terms(e):
                term = self.ix(t) + st
                (fixed if K.expr_vars(t) <= self.size_names else moving).append(term)
        if moving and fixed:
            return f"({' + '.join(moving)}) + ({' + '.join(fixed)})"
        return " + ".join(moving + fixed) or "0"

    # -- statements: K.StatementRenderer dispatches to on_<statement>
    stmt = K.StatementRenderer.statement

    def on_load(self, s: K.Load) -> str:
        # (a host scalar is the parameter's value itself: Buffer.host)
        ref = f"in{s.buf}" if self.kir.inputs[s.buf].host else f"in{s.buf}[{self.offset('in', s.buf, s.index)}]"
        if s.dtype == "float16":
            ref = f"np.float32({ref})"
        elif s.dtype == "bool":
            ref = f"({ref} != 0)"
        return f"{self.n(s.dst)} = {ref}"

    def on_const(self, s: K.Const) -> str:
        return ""                       # hoisted to the kernel's top

    def on_index(self, s: K.Index) -> str:
        return f"{self.n(s.dst)} = np.int64({self.ix(s.expr)})"

    def on_op(self, s: K.Op) -> str:
        return f"{self.n(s.dst)} = {self.op_value(s)}"

    def on_search(self, s: K.Search) -> str:        # a binary search of the flat table (int_helpers)
        return (f"{self.n(s.dst)} = {self.use('_search_' + s.side)}(in{s.buf}, {self.ix(s.n)}, "
                f"st_in{s.buf}_0, {self.n(s.key)})")

    def on_scan(self, s: K.Scan) -> str:            # the running value is dst itself (started before the loop)
        self.dt[s.dst] = s.dtype
        if _first_factor(s):     # a complex cumprod: its first factor itself, as NumPy's accumulate
            return (f"{self.n(s.dst)}, _F{s.dst} = ({self.n(s.src)} if _F{s.dst} else "
                    f"{self.op_value(s.step(s.dst))}), False")
        return f"{self.n(s.dst)} = {self.op_value(s.step(s.dst))}"

    def on_combine(self, s: K.Store) -> str:        # a scatter's ufunc.at: an atomic
        return scatter.combine_store(s, self.kir.outputs[s.buf].dtype, self.offset("out", s.buf, s.index),
                                     self.n(s.src))

    def on_store(self, s: K.Store) -> str:
        b = self.kir.outputs[s.buf]
        return (f"out{s.buf}[{self.offset('out', s.buf, s.index)}] = "
                f"{store_value(self.n(s.src), self.dt.get(s.src, b.dtype), b.dtype)}")

    def op_value(self, s: K.Op) -> str:
        expr = op_expr(s, [self.n(x) for x in s.args], self.use, self.consts)
        if s.dtype == "float16" and s.op not in ("cast", "where"):
            expr = f"np.float32(np.float16({expr}))"     # NumPy's float16 loops round every op
        return expr

    # -- common pieces
    def signature(self) -> tuple[list[str], list[str]]:
        kir = self.kir
        names, types = [], []
        for pre, bufs in (("out", kir.outputs), ("in", kir.inputs)):
            for k, b in enumerate(bufs):
                names.append(f"{pre}{k}")
                t = f"T.{_STORE.get(b.dtype, b.dtype)}"
                types.append(t if b.host else f"T.CPointer({t})")
        for s in kir.sizes:
            names.append(s.name)
            types.append("T.int64")
        for pre, bufs in (("in", kir.inputs), ("out", kir.outputs)):
            for k, b in enumerate(bufs):
                for d in range(b.ndim):
                    names.append(f"st_{pre}{k}_{d}")
                    types.append("T.int64")
        if self.v.fastdiv:       # uint32 values, read as int32 (libdevice's umulhi takes int32)
            for d, _ in fast_div_pairs(kir, self.v):
                names += [f"dv{d}_m", f"dv{d}_s"]
                types += ["T.int32", "T.int32"]
        for d in self.v.divs:   # (uint32 values, read as int32, as fastdiv's)
            names += [f"dz{d}_m", f"dz{d}_s"]
            types += ["T.int32", "T.int32"]
        if self.v.workspace:
            names.append("ws_")
            types.append("T.CPointer(T.uint8)")
        return names, types

    def decompose(self, lin: str, dims: list[int], out: list[str], vec: int = 1) -> None:
        """Unravel linear index ``lin`` over loop dims ``dims`` (C order) into ``i<d>``; with
        ``vec > 1`` ``lin`` counts units of ``vec`` elements along the last dim."""
        if not dims:
            return
        last = self.n(f"i{dims[-1]}")
        if len(dims) == 1:
            out.append(f"{last} = {lin}" + (f" * {vec}" if vec > 1 else ""))
            return
        r = self.n("r_")
        out.append(f"{r} = {lin}")
        fast = set(fast_div_pairs(self.kir, self.v)) if self.v.fastdiv and self.v.mode != "tile" else set()
        for pos in range(len(dims) - 1, 0, -1):
            d = dims[pos]
            ext = self.ix(self.kir.domain[d])
            if vec > 1 and pos == len(dims) - 1:
                ext = f"({ext} // {vec})"
            if (d, vec if pos == len(dims) - 1 else 1) in fast:    # r // ext for 0 <= r < 2^31 (gpu_launch.fast_divisor)
                q = self.n(f"q{d}_")
                out.append(f"{q} = (np.int64(ld.umulhi(np.int32({r}), dv{d}_m)) + {r}) >> dv{d}_s")
                out.append(f"{self.n(f'i{d}')} = {r} - {q} * {ext}")
                out.append(f"{r} = {q}")
                continue
            out.append(f"{self.n(f'i{d}')} = {r} % {ext}")
            out.append(f"{r} = {r} // {ext}")
        out.append(f"{self.n(f'i{dims[0]}')} = {r}")
        if vec > 1:
            out.append(f"{last} = {last} * {vec}")

    def const_lines(self) -> list[str]:
        lines = []
        for var, (value, dt) in self.consts.items():
            self.globals.append(f"_K_{var} = {_const_value(value, dt)}")
            lines.append(f"{var} = _K_{var}")
        return lines

    # -- elementwise
    def elementwise(self) -> list[str]:
        kir, v = self.kir, self.v
        ilp, vec = max(1, v.ilp), max(1, v.vec)
        stmts = [s for s in kir.phases[0].pre if not isinstance(s, K.Const)]
        dims = kir.loop_dims(range(len(kir.domain)))
        self.local = ({s.dst for s in stmts if hasattr(s, "dst")} | {f"i{d}" for d in dims}
                      | {f"q{d}_" for d in dims} | {"r_", "u_"})
        body = self.const_lines()
        exts = [self.ix(kir.domain[d]) for d in dims]
        if vec > 1:
            body.append(f"n_el_ = {' * '.join(exts)}")
            exts[-1] = f"({exts[-1]} // {vec})"
        body.append(f"n_ = {' * '.join(exts) or '1'}")
        body.append("step_ = np.int64(cuda.gridDim.x) * np.int64(cuda.blockDim.x)")
        body.append("g_ = np.int64(cuda.blockIdx.x) * np.int64(cuda.blockDim.x) + np.int64(cuda.threadIdx.x)")
        body.append("u_ = g_")
        # loads first (a gather's load after the statements computing its position)
        early = [s for s in stmts if isinstance(s, (K.Load, K.Index)) and not K.gathers(K.stmt_index(s))]
        ids = {id(s) for s in early}
        order = (early + [s for s in stmts if isinstance(s, (K.Op, K.Load, K.Index, K.Search)) and id(s) not in ids]
                 + [s for s in stmts if isinstance(s, K.Store)])
        plan = branch_plan(kir) if kir.kind == GroupKind.ELEMENTWISE else None

        def lanes(n: int, vec: int) -> list[str]:       # (where-arms as branches: codegen.numba_cuda_branches)
            return (self.branch_lanes(list(kir.phases[0].pre), plan, dims, n, vec) if plan
                    else self._lanes(order, dims, n, vec))
        if ilp > 1:
            body.append(f"while u_ + {ilp - 1} * step_ < n_:")
            body += ["    " + x for x in lanes(ilp, vec)]
            body.append(f"    u_ += {ilp} * step_")
        body.append("while u_ < n_:")
        body += ["    " + x for x in lanes(1, vec)]
        body.append("    u_ += step_")
        if v.tail:          # a flat domain's last n % vec elements, one by one
            body += [f"u_ = n_ * {vec} + g_", "while u_ < n_el_:"]
            body += ["    " + x for x in lanes(1, 1)]
            body.append("    u_ += step_")
        return body

    def _lanes(self, order: list, dims: list, n: int, vec: int) -> list[str]:
        """``n`` units (grid-stride steps apart) of ``vec`` elements each: every unit's indices,
        then each statement for every element of every unit (all loads before any arithmetic).
        An access along the innermost dim is one vector a unit, a load not depending on it one
        load a unit."""
        last = f"i{dims[-1]}" if dims else ""
        outer = {f"i{d}" for d in dims[:-1]}
        vload, vstore, once = set(), set(), set()
        for s in order:
            if vec == 1 or not isinstance(s, (K.Load, K.Store)):
                continue
            if self.along(s, last, vec):
                (vload if isinstance(s, K.Load) else vstore).add(id(s))
            elif isinstance(s, K.Load) and (self.kir.inputs[s.buf].host
                                            or set().union(*map(K.expr_vars, s.index)) <= outer):
                once.add(id(s))
        names = [[f"_{k}_{e}" if n * vec > 1 else "" for e in range(vec)] for k in range(n)]
        out: list[str] = []
        for k in range(n):
            self.sfx = names[k][0]
            out.append(f"{self.n('u_')} = u_ + {k} * step_" if k else f"{self.n('u_')} = u_")
            self.decompose(self.n("u_"), dims, out, vec)
            out += self.element_indices(dims, names[k])
        for s in order:
            for k in range(n):
                for e in range(vec):
                    self.sfx = names[k][e]
                    if id(s) in vload:
                        out += self._vector_load(s, names[k]) if e == 0 else []
                    elif id(s) in vstore:
                        out += [self._vector_store(s, names[k])] if e == vec - 1 else []
                    elif id(s) in once and e:
                        out.append(f"{s.dst}{names[k][e]} = {s.dst}{names[k][0]}")
                    else:
                        out.append(self.stmt(s))
        self.sfx = ""
        return out

    @staticmethod
    def element_indices(dims: list, sfx: list[str]) -> list[str]:
        """A unit's later elements' loop indices from its first's (suffix ``sfx[0]``): the
        innermost dim's plus the element's place, the others the same."""
        last = f"i{dims[-1]}" if dims else ""
        return [f"i{d}{x} = i{d}{sfx[0]}" + (f" + {e}" if f"i{d}" == last else "")
                for e, x in enumerate(sfx) if e for d in dims]

    def along(self, s, last: str, vec: int) -> bool:
        """Whether load or store ``s`` is one 16-byte vector a unit of ``vec`` elements: it runs
        along the innermost loop dim ``last`` (a host scalar is no access)."""
        return (vec > 1 and not (isinstance(s, K.Load) and self.kir.inputs[s.buf].host)
                and vector_access(s.index, last))

    def unit_load(self, s: K.Load, sfx: list[str], last: str) -> list[str]:
        """Load ``s`` for each of a unit's elements (suffixes ``sfx``): one vector where it runs
        along ``last``, else element by element."""
        if self.along(s, last, len(sfx)):
            return self._vector_load(s, sfx)
        out = []
        if len(sfx) > 1 and self.v.mode == "row" and blockwise(s.index, last) is not None:
            # a GroupNorm row's per-channel weight, g[(i1 * s + i2) // (h * w)]: one element a unit
            # (cuda_shapes.blockwise_fits), read and divided once, as CUDA C's
            self.sfx = sfx[0]
            out.append(self.stmt(s))
            return out + [f"{s.dst}{x} = {s.dst}{sfx[0]}" for x in sfx[1:]]
        for x in sfx:
            self.sfx = x
            out.append(self.stmt(s))
        return out

    def _vector_load(self, s: K.Load, sfx: list[str]) -> list[str]:
        """One 16-byte load of a unit's ``len(sfx)`` elements (indices of its first element)."""
        self.dt[s.dst] = s.dtype
        self.sfx = sfx[0]
        t = f"{s.dst}{sfx[0]}v_"
        off, flag = self.offset('in', s.buf, s.index), self.peel_flag(s)
        out = [f"{t} = ldv(in{s.buf}, {off}, {len(sfx)})" if flag is None else
               f"{t} = ldv(in{s.buf}, {off}, {len(sfx)}) if {flag} else ldl(in{s.buf}, {off}, {len(sfx)})"]
        for e, x in enumerate(sfx):
            ref = f"{t}[{e}]"
            ref = f"np.float32({ref})" if s.dtype == "float16" else f"({ref} != 0)" if s.dtype == "bool" else ref
            out.append(f"{s.dst}{x} = {ref}")
        return out

    def _vector_store(self, s: K.Store, sfx: list[str]) -> str:
        """One 16-byte store of a unit's values (indices of its first element)."""
        b = self.kir.outputs[s.buf]
        vals = []
        for x in sfx:
            self.sfx = x
            vals.append(store_value(self.n(s.src), self.dt.get(s.src, b.dtype), b.dtype))
        self.sfx = sfx[0]
        flag = self.peel_flag(s)        # (a peeled row's access not aligned as its lead: element by element)
        return (f"stv(out{s.buf}, {self.offset('out', s.buf, s.index)}, ({', '.join(vals)},))" if flag is None else
                f"stvp({flag}, out{s.buf}, {self.offset('out', s.buf, s.index)}, ({', '.join(vals)},))")

    # -- the module
    def source(self) -> str:
        kir, v = self.kir, self.v
        names, types = self.signature()
        if kir.kind in (GroupKind.ELEMENTWISE, GroupKind.MATMUL, GroupKind.SCATTER):
            tile = v.mode == "tile" and kir.kind == GroupKind.ELEMENTWISE and not kir.in_place
            if v.mode != "elementwise" and not tile:
                raise CompileError(f"kfuse: variant {v} does not fit a {kir.kind} kernel")
            body = self.tile2d() if tile else self.elementwise()
        elif kir.kind in ROW_KINDS:
            if v.mode not in (("col", "scan") if K.has_scan(kir) else ("row", "col")):
                if K.has_scan(kir):
                    raise CompileError(f"kfuse: a scan runs its row in order in one thread (col) or in lanes of "
                                       f"a warp (scan), not in variant {v}")
                raise CompileError(f"kfuse: variant {v} does not fit a reduce kernel")
            if v.peel and (v.mode != "row" or v.vec < 2 or v.split or v.grid_sync or len(kir.loop_dims(kir.inner)) != 1):
                raise CompileError(f"kfuse: a peeled row is a row of vector units of one loop dim, unchunked: not {v}")
            if any(a.kind == "maxsumexp" for ph in kir.phases for a in ph.accs) and (
                    v.mode != "row" or v.split or v.stage or v.grid_sync):
                raise CompileError(f"kfuse: an online max-and-sum accumulator runs in an unchunked row, not in "
                                   f"variant {v}")
            if v.mode == "scan" and not scan_renders(kir):
                raise CompileError(f"kfuse: this scan kernel runs a thread a row (numba_cuda_scan.scan_renders), "
                                   f"not in variant {v}")
            body = self.scan_rows() if v.mode == "scan" else self.reduce()
            for ph in kir.phases:
                for a in ph.accs:
                    if self.acc_vt(a) not in ("bool",) and not (a.acc_dtype == "bool"):
                        self.globals.append(f"_I{a.dst} = {_const_value(a.init, a.acc_dtype)}")
        else:
            raise CompileError(f"kfuse: unknown kernel kind {kir.kind!r}")
        ins = ", ".join(f"in{k}: {b.dtype}" + (" (host scalar)" if b.host else f"[{b.ndim}d]")
                        for k, b in enumerate(kir.inputs))
        outs = ", ".join(f"out{k}: {b.dtype}[{b.ndim}d]" for k, b in enumerate(kir.outputs))
        head = [f'"""kfuse Numba-CUDA kernel {kir.name} [{kir.kind}] variant {v.tag}, generated by '
                'kfuse.codegen.numba_cuda."""',
                "import numpy as np", "from numba import cuda", "from numba.cuda import libdevice as ld",
                "from numba.cuda import types as T",
                "from kfuse.codegen.numba_cuda_narrow import " + ", ".join(f"narrow_{t}" for t in NARROW_INTS),
                "from kfuse.codegen.numba_cuda_mem import addr, at, grid_arrive, grid_seen, ldl, ldv, stv, stvp"]
        head += [scatter.IMPORT] if scatter.combining_stores(kir) else []
        head += ["",
                "INF32 = np.float32(np.inf)", "INF64 = np.float64(np.inf)"]
        head += self.globals + [""]
        for h in self.used:
            head += [_HELPERS[h], ""]
        head += ["SIG = (" + ", ".join(types) + ("," if len(types) == 1 else "") + ")",
                 f"LAUNCH_BOUNDS = {(v.block, v.min_blocks) if v.min_blocks else v.block}", "VARIANT = " + repr(dataclasses.astuple(v)), "", ""]
        fn = [f"def {FN_NAME}({', '.join(names)}):",
              f'    """({ins}) -> ({outs}); outer={list(kir.outer)} inner={list(kir.inner)}"""']
        fn += ["    " + x for x in body if x != ""]
        return "\n".join(head + fn) + "\n"


def emit(kir: K.KernelIR, variant: NVariant | None = None) -> str:
    """KernelIR -> Python source of a numba.cuda kernel ``kfuse_kernel`` (+ ``SIG``, ``LAUNCH_BOUNDS``)."""
    K.refuse_bfloat16(kir, "the Numba-CUDA backend")
    scatter.refuse_unsupported(kir)
    variant = variant or default_variant(kir)
    if variant.reload:      # float32 sums in float32, as CUDA C's re-loaded rows
        kir = dataclasses.replace(kir, phases=tuple(CudaRows.acc32_phase(ph) for ph in kir.phases))
    return _Gen(decompose(kir), variant).source()


# --------------------------------------------------------------------------- PTX

_MODULES: dict = {}
_PTX: dict = {}
_LOCK = threading.Lock()


def load_source(source: str):
    """Execute generated source once per distinct text; returns its namespace."""
    ns = _MODULES.get(source)
    if ns is None:
        import_numba_cuda()
        import hashlib
        import linecache
        h = hashlib.sha256(source.encode()).hexdigest()[:12]
        filename = f"<kfuse-numba-cuda {h}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        ns = {"__name__": f"kfuse_numba_cuda_{h}"}
        try:
            exec(compile(source, filename, "exec"), ns)
        except Exception as e:
            raise CompileError(f"kfuse: generated numba-cuda source does not load: {e}\n{source}") from e
        _MODULES[source] = ns
    return ns


def _cc(arch: str) -> tuple[int, int]:
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)(\d)[a-z]?", str(arch).strip().lower())
    if not m:
        raise ValueError(f"bad CUDA arch {arch!r} (expected e.g. sm_90)")
    return int(m.group(1)), int(m.group(2))


def compile_ptx(source: str, fn_name: str = FN_NAME, arch: str = "sm_90") -> str:
    """PTX of ``fn_name`` in generated ``source`` for ``arch`` (needs libNVVM, not a GPU)."""
    key = (source, fn_name, arch)
    hit = _PTX.get(key)
    if hit is not None:
        return hit
    cuda = import_numba_cuda()
    ns = load_source(source)
    with _LOCK:
        try:
            ptx = _ptx_without_contraction(cuda, ns[fn_name], ns["SIG"], _cc(arch), ns.get("LAUNCH_BOUNDS"))
            ptx = keep_negative_zero_selects(ptx)
        except Exception as e:
            raise CompileError(f"kfuse: numba.cuda.compile_ptx failed for {fn_name} ({arch}): "
                               f"{type(e).__name__}: {e}\n{source}") from e
    _PTX[key] = ptx
    return ptx


def _ptx_without_contraction(cuda, fn, sig, cc, launch_bounds) -> str:
    """PTX compiled by NVVM with ``-fma=0``: every float add, subtract and multiply rounds on its
    own, as NumPy's ufunc loops do (NVVM's default contracts ``a * b + c`` into one fma; the CUDA C
    backend passes ``--fmad=false`` for the same reason). ``cuda.compile_ptx`` has no option for
    it; numba-cuda 0.30's own steps do (its kernel library keeps the NVVM options), and NVVM then
    writes every such op with ``.rn``. Where those internals differ, ``compile_ptx`` as it is, with
    ``.rn`` added to the plain ops so that ptxas at least cannot fuse what NVVM left apart."""
    from numba.cuda import compiler
    try:
        lib, _ = compiler._compile_pyfunc_with_fixup(fn, sig, device=False, fastmath=False, cc=cc,
                                                     abi="numba", launch_bounds=launch_bounds)
        lib._nvvm_options["fma"] = False
        (ptx,) = lib.get_asm_strs(cc=cc)
        return ptx
    except (AttributeError, TypeError, ValueError):
        ptx, _ = cuda.compile_ptx(fn, sig, cc=cc, fastmath=False, launch_bounds=launch_bounds)
        return _ROUND_EACH.sub(r"\1.rn.\2", ptx)


# f32/f64 add, sub, mul with no rounding modifier: ptxas may contract them into an fma
_ROUND_EACH = re.compile(r"\b(add|sub|mul)\.(f32|f64)\b")


def keep_negative_zero_selects(ptx: str) -> str:
    """Float selects with a -0.0 immediate as bitwise selects (``selp.b32``/``.b64``, the same
    bits). ptxas (13.0, and the 580 driver's JIT) turns ``selp.f32 d, 1.0, -0.0, p`` into
    ``FSET.BF`` (1.0 or +0.0) and ``selp.f32 d, -1.0, -0.0, p`` into the code of ``-1.0, +0.0``:
    the zero loses its sign. NVVM writes such a select for ``maximum(bool.astype(float32), -0.0)``
    (fuzz seed 43 #1602, docs/FUZZING.md bug 26); NumPy keeps -0.0."""
    return _NEG_ZERO_SELECT.sub(lambda m: m.group(0).replace(f"selp.f{m.group(1)}", f"selp.b{m.group(1)}", 1), ptx)


_NEG_ZERO_SELECT = re.compile(r"\bselp\.f(32|64)\b[^;\n]*\b(?:0f80000000|0d8000000000000000)\b[^;\n]*;")


def entry_name(ptx: str) -> str:
    """The (mangled) name of the PTX's kernel entry."""
    m = re.search(r"\.entry\s+([A-Za-z0-9_$]+)\s*\(", ptx)
    if not m:
        raise CompileError("kfuse: no .entry in numba-cuda PTX")
    return m.group(1)
