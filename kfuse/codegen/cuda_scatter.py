"""The CUDA emitter's scatter stores (a mixin of ``codegen.cuda._Gen``).

A scatter kernel (``KernelIR.kind == "scatter"``) is the elementwise kernel's scalar grid-stride
loop over its domain (``Variant`` mode ``"elementwise"`` with ``vec == 1``: the store's address is
data-dependent, so no vector store); its one :class:`~kfuse.codegen.kernel_ir.Store` writes at
positions read from index arrays, into an output the runtime filled with a copy of the base first.

A plain store (``combine == ""``) is ``out[offset] = v``, as any other kernel's: where two elements
hit one position one of the writes lands (NumPy does not specify which either). A combining store
(``ufunc.at``) updates the element to ``cast(op(cast(old, loop), v), out dtype)`` atomically, by
one of four means (:func:`strategy` says which):

* **One hardware atomic** where it computes exactly that (``loop`` is the output's dtype, or made
  so, see "narrowing" below): ``atomicAdd`` for ``add`` on float32, float64, int32, uint32 and
  int64/uint64 (as ``unsigned long long``: two's complement wraps alike), and for ``subtract`` as
  the add of the negated value (``x - v == x + (-v)`` in IEEE arithmetic and in wrapping
  integers); ``red.add.noftz.f16`` for float16 ``add``/``subtract`` (sm_70+: it rounds each sum
  to nearest float16 and keeps subnormals, which is NumPy's float16 add: its float32 sum rounded to
  float16 rounds once, 24 >= 2 * 11 + 2 bits); ``atomicMax``/``atomicMin`` for
  ``maximum``/``minimum`` (and ``fmax``/``fmin``, the same on integers) of 32- and 64-bit
  integers; ``atomicAnd``/``atomicOr``/``atomicXor`` for ``bitwise_and``/``_or``/``_xor`` of 32-
  and 64-bit integers. Float adds land in the order the atomics run (a sum's deviation, see
  ``kfuse/testing.py``); float32's ``atom.add`` also flushes subnormal inputs and results to a
  zero of their sign (PTX ISA), float64's and float16's do not.
* **A bit atomic on the 32-bit word holding a narrow element** (bool, 8- and 16-bit integers): the
  element's bits shifted into place, the word's other bits 0 for ``atomicOr``/``atomicXor`` and 1
  for ``atomicAnd``, so the other elements of the word are left as they are. Exact: each bit of the
  element is combined on its own. It serves ``bitwise_and``/``_or``/``_xor`` of 8- and 16-bit
  integers, and of bool (0 or 1 a byte) ``logical_or``, ``bitwise_or``, ``add``, ``maximum``,
  ``fmax`` (or), ``logical_and``, ``bitwise_and``, ``multiply``, ``minimum``, ``fmin`` (and),
  ``logical_xor``, ``bitwise_xor`` (xor: parity): a bool byte is 0 or 1 (as NumPy, CuPy and torch
  store them; a byte of another value would and as its bits). No retry loop, and a contended
  word costs no more than any other atomic on it.
* **A compare-and-swap loop** on the aligned word holding the element: the element itself for 4-
  and 8-byte types, the 32-bit word containing it for narrower ones (the other bytes of that word
  are written back as they were read). Each trip reads the word, takes the element's bits out,
  computes the combine with the :class:`~kfuse.codegen.kernel_ir.Op` statements
  ``Store.combine_ops`` gives, rendered as every op of the kernel is (``_Gen.stmt``: float16 rounds
  each result, ``maximum`` propagates NaN...), puts the result's bits back and swaps the word in if
  no thread changed it meanwhile, else waits a little (``__nanosleep``, doubling from
  :data:`CAS_BACKOFF_NS` up to its cap, with jitter: contenders that retry at once only delay the
  winner) and tries again. Words compare as integers: a NaN element cannot keep the loop spinning.

**Warp aggregation** (:data:`WARP_AGGREGATE`; not where the lanes of a warp write different
elements of a row and one hardware atomic applies each value, :func:`lanes_apart`: an embedding
gradient's rows). Before the atomic or the compare-and-swap, the
lanes of a warp that update one word (``__match_any_sync`` on its address, among the lanes
``__activemask()`` names: the lanes of the grid-stride loop with an element here; a lane past the
end of the domain is not there) combine their values with shuffles: every lane of such a group
runs the same loop over the group's lanes in ascending order (one ``__shfl_sync(group, ...)`` a
lane, so the group's shuffles match whatever the other groups of the warp do), and only the lowest
lane applies the result. A narrow element's group is its word's: the lanes' values are combined
per element of the word, and one compare-and-swap updates every element the warp touched in it.
A contended histogram then costs one update per word per warp, not one per value. This is done
only where combining the values first gives a result that applying them one at a time gives:

* applying ``v1`` then ``v2`` to ``x`` (in the group's lane order) is ``op(op(x, v1), v2)``; the
  aggregate applies ``op(x, op(v1, v2))``, the same value where ``op`` is associative as rendered.
  Exact: integer ``add``, ``multiply`` (wrapping: arithmetic modulo 2^n is a ring),
  ``subtract`` (its values are added first: ``x - a - b == x - (a + b)`` modulo 2^n),
  ``maximum``/``minimum``/``fmax``/``fmin`` of integers and of floats (each keeps the first or the
  last of equal values, NaN first: a selection, associative; which NaN payload lands is the only
  freedom, as in any order), the bit operations, and bool's or/and/xor (xor: the parity of the
  group's true values).
* float ``add``/``multiply``/``subtract`` are not associative, but their order already is the
  atomics' (a documented deviation, ``kfuse/testing.py``): the group's values are summed (or
  multiplied) first, each op rounded in the output dtype as NumPy's loop rounds it (float16 rounds
  every partial sum), then applied once.
* **narrowing**: an integer ``add``/``subtract``/``multiply``/``bitwise_*`` computed in a wider
  integer ``loop`` and cast back (``np.add.at(int8_array, i, 1)``: the Python int makes the loop
  int64) is the same op in the output dtype on the value cast to it first (truncation modulo 2^n
  is a ring homomorphism, and it keeps every bit of a narrow bitwise result), so such a store is
  handled as one whose ``loop`` is the output's dtype: aggregated, and a hardware atomic where one
  exists.

Every other combine (a cast through a ``loop`` of another kind or of a narrower width, a
``maximum`` computed in a wider loop, ``true_divide``, ``power``, ``floor_divide``, the shifts,
...) keeps the per-element compare-and-swap loop, each value applied on its own: there the order of
the values changes the result, and the one a warp's aggregate would give is not always one that
some order gives.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from . import cuda_complex as cx
from . import kernel_ir as K
from .cuda_ops import LOWP, ctype, store_value

# Combine the values of a warp's lanes that update one word before the atomic (see above). A knob
# for measurements: False emits one atomic (or compare-and-swap loop) a value.
WARP_AGGREGATE = True
# A failed compare-and-swap's wait before it retries: the first, and the cap (ns, doubling between)
CAS_BACKOFF_NS = (32, 65536)

_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_FLOATS = ("float16", "bfloat16", "float32", "float64")
_WRAPPING = ("add", "subtract", "multiply", "bitwise_and", "bitwise_or", "bitwise_xor")
_SELECT = ("maximum", "minimum", "fmax", "fmin")
# bool combines and the bit operation each is on 0/1 bytes
_BOOL_BITS = {"logical_or": "or", "bitwise_or": "or", "add": "or", "maximum": "or", "fmax": "or",
              "logical_and": "and", "bitwise_and": "and", "multiply": "and", "minimum": "and", "fmin": "and",
              "logical_xor": "xor", "bitwise_xor": "xor"}
_BIT_FN = {"or": "atomicOr", "and": "atomicAnd", "xor": "atomicXor"}
_BIT_SYM = {"or": "|", "and": "&", "xor": "^"}

# (combine, output dtype) -> (the hardware atomic, the C type it takes), for loop == output dtype
_ONE_ATOMIC = {("add", "float32"): ("atomicAdd", "float"), ("add", "float64"): ("atomicAdd", "double"),
               ("add", "int32"): ("atomicAdd", "int"), ("add", "uint32"): ("atomicAdd", "unsigned int"),
               ("add", "int64"): ("atomicAdd", "unsigned long long"),
               ("add", "uint64"): ("atomicAdd", "unsigned long long"),
               ("add", "float16"): ("red.add.noftz.f16", "unsigned short")}
# subtract: the add of the negated value (an integer's negated in its unsigned type: it wraps)
_ONE_ATOMIC.update({("subtract", dt): (fn, "unsigned int" if ct == "int" else ct)
                    for (op, dt), (fn, ct) in list(_ONE_ATOMIC.items()) if op == "add"})
_ONE_ATOMIC.update({(op, dt): (fn, ct)
                    for op, fn in (("maximum", "atomicMax"), ("fmax", "atomicMax"),
                                   ("minimum", "atomicMin"), ("fmin", "atomicMin"))
                    for dt, ct in (("int32", "int"), ("uint32", "unsigned int"), ("int64", "long long"),
                                   ("uint64", "unsigned long long"))})
_ONE_ATOMIC.update({(f"bitwise_{b}", dt): (_BIT_FN[b], ct)
                    for b in ("and", "or", "xor")
                    for dt, ct in (("int32", "unsigned int"), ("uint32", "unsigned int"),
                                   ("int64", "unsigned long long"), ("uint64", "unsigned long long"))})


def _itemsize(dt: str) -> int:
    return 2 if dt in LOWP else np.dtype(dt).itemsize


def narrowed(st: K.Store, out_dtype: str) -> K.Store:
    """``st`` with ``loop`` the output's dtype where that computes the same result (an integer
    wrapping op in a wider integer loop, see the module docstring); else ``st`` itself. The
    narrowed store's ``src`` is to be the value cast to ``out_dtype`` (the caller emits it)."""
    if (st.combine in _WRAPPING and st.loop != out_dtype and st.loop in _INTS and out_dtype in _INTS
            and _itemsize(st.loop) >= _itemsize(out_dtype)):
        return dataclasses.replace(st, loop=out_dtype)
    return st


def aggregate_op(st: K.Store, out_dtype: str) -> str | None:
    """The op combining two values of ``st`` (a store whose ``loop`` is ``out_dtype`` after
    :func:`narrowed`) before one update applies them (``subtract``'s values are added), or None
    where values must be applied one at a time (see the module docstring)."""
    if st.loop != out_dtype:
        return None
    op = st.combine
    if out_dtype == "bool":
        return op if op in _BOOL_BITS else None
    if out_dtype in _INTS and (op in _WRAPPING or op in _SELECT):
        return "add" if op == "subtract" else op
    if out_dtype in _FLOATS and op in ("add", "subtract", "multiply") + _SELECT:
        return "add" if op == "subtract" else op
    return None


def bit_atomic(st: K.Store, out_dtype: str) -> str | None:
    """``"or"``, ``"and"`` or ``"xor"``: the bit operation that combining store ``st`` (after
    :func:`narrowed`) is on a narrow element's bits (a 32-bit bit atomic on its word), or None."""
    if st.loop != out_dtype:
        return None
    if out_dtype == "bool":
        return _BOOL_BITS.get(st.combine)
    if out_dtype in ("int8", "uint8", "int16", "uint16") and st.combine.startswith("bitwise_"):
        return st.combine.removeprefix("bitwise_")
    return None


def one_atomic(st: K.Store, out_dtype: str) -> tuple[str, str] | None:
    """``(atomic function, C type)`` of the one hardware atomic computing combining store ``st``
    (after :func:`narrowed`) into an ``out_dtype`` buffer exactly, or None (then a bit atomic or
    a compare-and-swap loop does). ``subtract`` adds the negated value."""
    return _ONE_ATOMIC.get((st.combine, out_dtype)) if st.loop == out_dtype else None


def strategy(st: K.Store, out_dtype: str) -> tuple[str, bool]:
    """How combining store ``st`` updates an ``out_dtype`` element: ``("atomic" | "bits" | "cas",
    aggregated)``, ``aggregated`` whether a warp's lanes combine their values first."""
    n = narrowed(st, out_dtype)
    agg = WARP_AGGREGATE and aggregate_op(n, out_dtype) is not None
    if bit_atomic(n, out_dtype):
        return "bits", agg
    return ("atomic" if one_atomic(n, out_dtype) else "cas"), agg


def lanes_apart(st: K.Store, kir: K.KernelIR) -> bool:
    """Whether store ``st`` writes the output's innermost dim at the domain's innermost loop
    variable (``np.add.at(table, ids, g)`` of rows: ``out[v, i1]``): consecutive lanes of a warp
    then update consecutive elements of a row, where a warp's groups (``__match_any_sync`` each
    value) would cost and combine nothing; one hardware atomic each (rows shorter than a warp may
    still meet in an element: the atomic applies both)."""
    dims = kir.loop_dims(range(len(kir.domain)))
    return bool(dims and st.index) and isinstance(st.index[-1], K.IVar) and st.index[-1].name == f"i{dims[-1]}"


# float32/float64 registers and their storage bits: (value of bits, bits of value)
_FLOAT_BITS = {"float32": ("__uint_as_float({})", "__float_as_uint({})"),
               "float64": ("__longlong_as_double((long long){})", "(u64)__double_as_longlong({})")}


def value_of_bits(bits: str, dt: str) -> str:
    """The register value of an element of ``dt`` whose storage bits are the low bits of the
    unsigned integer expression ``bits`` (the rest zero)."""
    if dt in LOWP:
        return f"{LOWP[dt][0]}((unsigned short){bits})"
    if dt in _FLOAT_BITS:
        return _FLOAT_BITS[dt][0].format(bits)
    if dt == "bool":
        return f"({bits} != 0u)"
    return f"(({ctype(dt)}){bits})"


def bits_of_value(v: str, dt: str, word: str) -> str:
    """The storage bits of register value ``v`` stored as ``dt``, as the unsigned ``word`` type
    (a narrow signed value sign-extends: the caller masks it to the element's bits)."""
    if dt in _FLOAT_BITS:
        return _FLOAT_BITS[dt][1].format(v)
    return f"(({word}){store_value(v, dt, dt)})"


def shfl(v: str, dt: str, lane: str) -> str:
    """Register value ``v`` of ``dt`` read from lane ``lane`` of the group ``peers_``."""
    ct = ctype(dt)
    if dt == "bool":
        return f"(__shfl_sync(peers_, (int){v}, {lane}) != 0)"
    if dt in ("int8", "int16", "uint8", "uint16"):
        return f"(({ct})__shfl_sync(peers_, (int){v}, {lane}))"
    return f"__shfl_sync(peers_, {v}, {lane})"


def _mask(size: int) -> str:
    return f"{(1 << 8 * size) - 1:#x}u"


_SUBWORD_HEAD = ["unsigned int* const w_ = (unsigned int*)(p_ - ((size_t)p_ & 3));",
                 "const unsigned int sh_ = (unsigned int)((size_t)p_ & 3) * 8u;"]


class ScatterEmitter:
    """Combining stores for ``codegen.cuda._Gen`` (which sets ``kir`` and ``dt`` and renders
    statements with ``stmt``, op values with ``op_value`` and addresses with ``offset``)."""

    def combine_store(self, st: K.Store) -> str:
        """``st`` (a Store with ``combine``) as one atomic update of its element."""
        dt = self.kir.outputs[st.buf].dtype
        ptr = f"out{st.buf} + ({self.offset('out', st.buf, st.index)})"
        if cx.is_complex(dt) or cx.is_complex(st.loop):
            return cx.combine_store(st, dt, ptr, self.stmt)
        pre = []
        n = narrowed(st, dt)
        if n is not st:             # the value in the output's dtype: see narrowed()
            name = f"{st.src}_n"
            pre.append(self.stmt(K.Op(name, "cast", dt, (st.src,), (st.loop,))))
            n = dataclasses.replace(n, src=name)
        agg = aggregate_op(n, dt) if WARP_AGGREGATE else None
        bits = bit_atomic(n, dt)
        fast = one_atomic(n, dt)
        if fast is not None and bits is None and lanes_apart(st, self.kir):
            agg = None              # the lanes of a warp update different elements: no groups
        if bits is not None:
            body = self.bit_atomic_store(n, dt, ptr, bits, agg is not None)
        elif fast is not None:
            body = self.one_atomic_store(n, dt, ptr, fast, agg)
        elif agg is not None:
            body = self.aggregated_cas(n, dt, ptr, agg)
        else:
            body = self.cas_loop(n, dt, ptr)
        return "\n".join(["{  // " + str(st)] + ["  " + x for x in pre + body] + ["}"])

    # -- the warp's groups
    @staticmethod
    def group(key: str) -> list[str]:
        """``peers_``: the active lanes whose ``key`` (an address) is this lane's; ``lead_``:
        whether this lane is the group's lowest."""
        return ["const unsigned int am_ = __activemask();",
                f"const unsigned int peers_ = __match_any_sync(am_, (unsigned long long)({key}));",
                'unsigned int ln_; asm("mov.u32 %0, %%laneid;" : "=r"(ln_));',
                "const bool lead_ = ln_ == (unsigned int)(__ffs(peers_) - 1);"]

    def combined(self, agg: str, dt: str, acc: str, x: str) -> str:
        """The C value of ``agg(acc, x)`` on ``dt`` values, rendered as the kernel's ops are."""
        return self.op_value(K.Op(acc, agg, dt, (acc, x), (dt, dt)))

    def reduce_one(self, src: str, dt: str, agg: str, out: str) -> list[str]:
        """``out``: the group's values of ``src`` combined in lane order (the lowest lane's first),
        valid in the lowest lane. Every lane of the group runs the same shuffles."""
        ct = ctype(dt)
        self.dt[out] = dt
        return [f"{ct} {out} = {src};",
                "for (unsigned int rest_ = peers_ & (peers_ - 1u); rest_; rest_ &= rest_ - 1u) {",
                f"  const {ct} xv_ = {shfl(src, dt, '__ffs(rest_) - 1')};",
                f"  {out} = {self.combined(agg, dt, out, 'xv_')};",
                "}"]

    # -- the four stores
    def one_atomic_store(self, st: K.Store, dt: str, ptr: str, fast: tuple[str, str], agg: str | None) -> list[str]:
        fn, ct = fast
        lines = [f"auto* const ep_ = {ptr};"]
        v = st.src
        if agg is not None:
            lines += self.group("ep_")
            v = f"{st.src}_g"
            lines += self.reduce_one(st.src, dt, agg, v)
        neg = st.combine == "subtract"
        if fn.startswith("red."):           # float16: the PTX reduction on the element's 16 bits
            bits = f"(unsigned short)({store_value(v, dt, dt)}{' ^ 0x8000u' if neg else ''})"
            op = f'asm volatile("{fn} [%0], %1;" :: "l"(ep_), "h"({bits}) : "memory");'
        elif neg and dt in _INTS:
            op = f"{fn}(({ct}*)(ep_), ({ct})0 - ({ct}){v});"
        else:
            op = f"{fn}(({ct}*)(ep_), {'-' if neg else ''}({ct}){v});"
        return lines + ([f"if (lead_) {op}"] if agg is not None else [op])

    def bit_atomic_store(self, st: K.Store, dt: str, ptr: str, bits: str, agg: bool) -> list[str]:
        """A narrow element's bits or-ed, and-ed or xor-ed into its 32-bit word."""
        mask = _mask(_itemsize(dt))
        c = f"(({bits_of_value(st.src, dt, 'unsigned int')} & {mask}) << sh_)"
        if bits == "and":
            c = f"({c} | ~({mask} << sh_))"
        lines = [f"unsigned char* const p_ = (unsigned char*)({ptr});"] + _SUBWORD_HEAD
        lines.append(f"const unsigned int bits_ = {c};")
        fn = _BIT_FN[bits]
        if not agg:
            return lines + [f"{fn}(w_, bits_);"]
        lines += self.group("w_")
        lines += ["unsigned int acc_ = bits_;",
                  "for (unsigned int rest_ = peers_ & (peers_ - 1u); rest_; rest_ &= rest_ - 1u)",
                  f"  acc_ {_BIT_SYM[bits]}= __shfl_sync(peers_, bits_, __ffs(rest_) - 1);",
                  f"if (lead_) {fn}(w_, acc_);"]
        return lines

    def aggregated_cas(self, st: K.Store, dt: str, ptr: str, agg: str) -> list[str]:
        """The warp's values for one word combined (per element of a narrow type's word), then one
        compare-and-swap loop applying them, in the group's lowest lane."""
        size = _itemsize(dt)
        ct = ctype(dt)
        if size >= 4:
            word = "unsigned long long" if size == 8 else "unsigned int"
            lines = [f"{word}* const w_ = ({word}*)({ptr});"] + self.group("w_")
            g = f"{st.src}_g"
            lines += self.reduce_one(st.src, dt, agg, g)
            slots = [(None, g, None)]
            return lines + ["if (lead_) {"] + ["  " + x for x in self.cas_body(st, dt, word, slots)] + ["}"]
        n = 4 // size
        lines = [f"unsigned char* const p_ = (unsigned char*)({ptr});"] + _SUBWORD_HEAD
        lines += self.group("w_")
        gs = [f"{st.src}_g{k}" for k in range(n)]
        for g in gs:
            self.dt[g] = dt
        lines += [f"const unsigned int slot_ = sh_ / {8 * size}u;",     # the element's slot in the word
                  f"{ct} {', '.join(f'{g} = {st.src}' for g in gs)};",
                  "unsigned int has_ = 0u;",
                  "for (unsigned int rest_ = peers_; rest_; rest_ &= rest_ - 1u) {",
                  "  const int src_ = __ffs(rest_) - 1;",
                  f"  const {ct} xv_ = {shfl(st.src, dt, 'src_')};",
                  "  const unsigned int slotx_ = __shfl_sync(peers_, slot_, src_);"]
        for k, g in enumerate(gs):
            lines.append(f"  if (slotx_ == {k}u) {g} = (has_ & {1 << k}u) ? {self.combined(agg, dt, g, 'xv_')} : xv_;")
        lines += ["  has_ |= 1u << slotx_;", "}"]
        slots = [(str(8 * size * k), g, f"has_ & {1 << k}u") for k, g in enumerate(gs)]
        body = self.cas_body(st, dt, "unsigned int", slots)
        return lines + ["if (lead_) {"] + ["  " + x for x in body] + ["}"]

    def cas_loop(self, st: K.Store, dt: str, ptr: str) -> list[str]:
        """A compare-and-swap loop on the aligned word holding element ``ptr`` of ``dt``, applying
        ``st.src`` alone."""
        size = _itemsize(dt)
        if size >= 4:
            word = "unsigned long long" if size == 8 else "unsigned int"
            return [f"{word}* const w_ = ({word}*)({ptr});"] + self.cas_body(st, dt, word, [(None, st.src, None)])
        head = [f"unsigned char* const p_ = (unsigned char*)({ptr});"] + _SUBWORD_HEAD
        return head + self.cas_body(st, dt, "unsigned int", [("sh_", st.src, None)])

    def cas_body(self, st: K.Store, dt: str, word: str, slots) -> list[str]:
        """The loop on ``w_`` (a ``word``): each slot ``(shift, value, present)`` is an element at
        bit ``shift`` of the word (None: the word is the element) updated with ``value`` combined
        as ``st`` says (where the C condition ``present`` holds, when given)."""
        size = _itemsize(dt)
        mask = _mask(size)
        body = ["want_ = seen_;", f"{word} put_ = want_;"]
        for shift, src, present in slots:
            old, new = f"{src}_old", f"{src}_new"
            self.dt[old] = dt
            elem = "want_" if shift is None else f"((want_ >> {shift}) & {mask})"
            upd = [self.decl(dt, old, value_of_bits(elem, dt))]
            upd += [self.stmt(op) for op in dataclasses.replace(st, src=src).combine_ops(dt, old, new)]
            if shift is None:
                upd.append(f"put_ = {bits_of_value(new, dt, word)};")
            else:
                upd.append(f"put_ = (put_ & ~({mask} << {shift})) | "
                           f"(({bits_of_value(new, dt, word)} & {mask}) << {shift});")
            body += upd if present is None else [f"if ({present}) {{"] + ["  " + x for x in upd] + ["}"]
        first, cap = CAS_BACKOFF_NS
        body += ["seen_ = atomicCAS(w_, want_, put_);",
                 "if (seen_ != want_) {     // lost to another thread: back off, then retry with its word",
                 f"  bo_ = bo_ == 0u ? {first}u : (bo_ < {cap // 2}u ? 2u * bo_ : {cap}u);",
                 "  __nanosleep(bo_ + ((unsigned int)clock() & (bo_ - 1u)));",
                 "}"]
        return ([f"{word} seen_ = *w_, want_;", "unsigned int bo_ = 0u;", "do {"]
                + ["  " + x for x in body] + ["} while (seen_ != want_);"])
