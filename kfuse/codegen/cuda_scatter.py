"""The CUDA emitter's scatter stores (a mixin of ``codegen.cuda._Gen``).

A scatter kernel (``KernelIR.kind == "scatter"``) is the elementwise kernel's scalar grid-stride
loop over its domain (``Variant`` mode ``"elementwise"`` with ``vec == 1``: the store's address is
data-dependent, so no vector store); its one :class:`~kfuse.codegen.kernel_ir.Store` writes at
positions read from index arrays, into an output the runtime filled with a copy of the base first.

A plain store (``combine == ""``) is ``out[offset] = v``, as any other kernel's: where two elements
hit one position one of the writes lands (NumPy does not specify which either). A combining store
(``ufunc.at``) updates the element to ``cast(op(cast(old, loop), v), out dtype)`` atomically:

* one hardware atomic where it computes exactly that (``loop`` is the output's dtype):
  ``atomicAdd`` for ``add`` on float32, float64, int32, uint32 and int64/uint64 (as
  ``unsigned long long``: two's complement wraps alike), ``atomicMax``/``atomicMin`` for
  ``maximum``/``minimum`` (and ``fmax``/``fmin``, the same on integers) of 32- and 64-bit
  integers. Float adds land in the order the atomics run (a sum's deviation, see
  ``kfuse/testing.py``); float32's ``atom.add`` also flushes subnormal inputs and results to a
  zero of their sign (PTX ISA), float64's does not.
* every other combine (any binary op, bool, 8- and 16-bit integers, float16/bfloat16, a cast
  through ``loop``): a compare-and-swap loop on the aligned word holding the element, the element
  itself for 4- and 8-byte types, the 32-bit word containing it for narrower ones (the other bytes
  of that word are written back as they were read). Each trip reads the word, takes the element's
  bits out, computes the combine with the :class:`~kfuse.codegen.kernel_ir.Op` statements
  ``Store.combine_ops`` gives, rendered as every op of the kernel is (``_Gen.stmt``: float16
  rounds each result, ``maximum`` propagates NaN...), puts the result's bits back and swaps the word
  in if no thread changed it meanwhile, else tries again. Words compare as integers: a NaN element
  cannot keep the loop spinning.
"""
from __future__ import annotations

import numpy as np

from . import kernel_ir as K
from .cuda_ops import LOWP, ctype, store_value

# (combine, output dtype) -> (the hardware atomic, the C type it takes), for loop == output dtype
_ONE_ATOMIC = {("add", "float32"): ("atomicAdd", "float"), ("add", "float64"): ("atomicAdd", "double"),
               ("add", "int32"): ("atomicAdd", "int"), ("add", "uint32"): ("atomicAdd", "unsigned int"),
               ("add", "int64"): ("atomicAdd", "unsigned long long"),
               ("add", "uint64"): ("atomicAdd", "unsigned long long")}
_ONE_ATOMIC.update({(op, dt): (fn, ct)
                    for op, fn in (("maximum", "atomicMax"), ("fmax", "atomicMax"),
                                   ("minimum", "atomicMin"), ("fmin", "atomicMin"))
                    for dt, ct in (("int32", "int"), ("uint32", "unsigned int"), ("int64", "long long"),
                                   ("uint64", "unsigned long long"))})


def one_atomic(st: K.Store, out_dtype: str) -> tuple[str, str] | None:
    """``(atomic function, C type)`` of the one hardware atomic computing combining store ``st``
    into an ``out_dtype`` buffer exactly, or None (then a compare-and-swap loop does)."""
    return _ONE_ATOMIC.get((st.combine, out_dtype)) if st.loop == out_dtype else None


def value_of_bits(bits: str, dt: str) -> str:
    """The register value of an element of ``dt`` whose storage bits are the low bits of the
    unsigned integer expression ``bits`` (the rest zero)."""
    if dt in LOWP:
        return f"{LOWP[dt][0]}((unsigned short){bits})"
    if dt == "float32":
        return f"__uint_as_float({bits})"
    if dt == "float64":
        return f"__longlong_as_double((long long){bits})"
    if dt == "bool":
        return f"({bits} != 0u)"
    return f"(({ctype(dt)}){bits})"


def bits_of_value(v: str, dt: str, word: str) -> str:
    """The storage bits of register value ``v`` stored as ``dt``, as the unsigned ``word`` type
    (a narrow signed value sign-extends: the caller masks it to the element's bits)."""
    if dt == "float32":
        return f"__float_as_uint({v})"
    if dt == "float64":
        return f"(u64)__double_as_longlong({v})"
    return f"(({word}){store_value(v, dt, dt)})"


class ScatterEmitter:
    """Combining stores for ``codegen.cuda._Gen`` (which sets ``kir`` and ``dt`` and renders
    statements with ``stmt`` and addresses with ``offset``)."""

    def combine_store(self, st: K.Store) -> str:
        """``st`` (a Store with ``combine``) as one atomic update of its element."""
        dt = self.kir.outputs[st.buf].dtype
        ptr = f"out{st.buf} + ({self.offset('out', st.buf, st.index)})"
        fast = one_atomic(st, dt)
        if fast is not None:
            fn, ct = fast
            return f"{fn}(({ct}*)({ptr}), ({ct}){st.src});"
        return "\n".join(self.cas_loop(st, dt, ptr))

    def cas_loop(self, st: K.Store, dt: str, ptr: str) -> list[str]:
        """A compare-and-swap loop on the aligned word holding element ``ptr`` of ``dt``."""
        old, new = f"{st.src}_old", f"{st.src}_new"
        size = 2 if dt in LOWP else np.dtype(dt).itemsize
        word = "unsigned long long" if size == 8 else "unsigned int"
        if size >= 4:
            head = [f"{word}* const w_ = ({word}*)({ptr});"]
            elem, swapped = "want_", bits_of_value(new, dt, word)
        else:   # the 32-bit word containing the element (little-endian: byte k is bits 8k..8k+7)
            mask = f"{(1 << 8 * size) - 1:#x}u"
            head = [f"unsigned char* const p_ = (unsigned char*)({ptr});",
                    "unsigned int* const w_ = (unsigned int*)(p_ - ((size_t)p_ & 3));",
                    "const unsigned int sh_ = (unsigned int)((size_t)p_ & 3) * 8u;"]
            elem = f"((want_ >> sh_) & {mask})"
            swapped = f"((want_ & ~({mask} << sh_)) | (({bits_of_value(new, dt, word)} & {mask}) << sh_))"
        self.dt[old] = dt
        body = ["want_ = seen_;", f"const {ctype(dt)} {old} = {value_of_bits(elem, dt)};"]
        body += [self.stmt(op) for op in st.combine_ops(dt, old, new)]
        body.append(f"seen_ = atomicCAS(w_, want_, {swapped});")
        return (["{  // " + str(st)] + ["  " + x for x in head] + [f"  {word} seen_ = *w_, want_;", "  do {"]
                + ["    " + x for x in body] + ["  } while (seen_ != want_);", "}"])
