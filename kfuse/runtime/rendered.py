"""Rendered CUDA C kernels on disk, found by what they are rendered from: no CUDA C on a warm hit.

A CUBIN is filed under a hash of its CUDA C source (``gpu_store``), and a tuning result under one
of its default variant's source (``autotune.tuner``), so a warm first call rendered each kernel
twice only to find them (0.4-0.8 ms a variant for a row softmax, more for larger kernels). This
index files each rendered kernel (``codegen.cuda_shapes.CudaKernel``: its source, name, fast
divisors and scalar slots) in the cache store (its own namespace, ``rendered``) under everything
the text depends on:

* the kernel IR without its size values (what ``shape_class.normal_form`` keeps, and what the
  process memo ``runtime.cuda.emitted_kernel`` is keyed by) and the variant, as one strict
  canonical text (:func:`canonical`: every value tagged by its type, a float by its repr, so
  -0.0 is not 0.0 nor 1 1.0; a value of another type makes no key, and the kernel is rendered);
* the code that renders it: the kfuse version and ``keys.emitter_hash`` (the sources of
  ``kfuse/codegen`` and of every kfuse module the code generators import; the hash itself read
  from the store's record of it, keyed by every such file's stat facts, where one is filed);
* the Python and NumPy versions (the text prints values through them).

The CUBIN is still found by the source's own hash, with the arch and the NVRTC version in its key,
so an index entry can only name the source; a source the current code would not render is what a
wrong index key would give, which is why the code's hash is in it. Best effort: a store that
fails, a bad entry or an entry that does not read back as the kernel that was filed is a miss.
Only a miss imports the renderer (``codegen.cuda``); a hit needs ``codegen.cuda_shapes`` alone.
"""
from __future__ import annotations

import dataclasses
import enum
import hashlib
import json

from ..codegen.cuda_shapes import CudaKernel
from ..codegen import kernel_ir as K
from . import keys

FORMAT = 2       # 2: the source is rendered.cu (1 named it kernel.cu: an old entry is never
                 # replaced, so under the old key it would be missed for good)
NAMESPACE = "rendered"   # (apart from the kernels: one entry a kernel there, its CUBIN)
SOURCE, FACTS = "rendered.cu", "rendered.json"   # (names no kernel entry uses)
# the sizes of the plan a kernel IR was lowered from: passed at launch, not in the code
_UNSIZED = {K.Buffer: frozenset({"shape"}), K.SizeParam: frozenset({"value"})}
_FIELDS: dict = {}
_IR_TEXT: dict = {}             # kernel IR normal form -> canonical(kir); a cache only


def kernel(store, kir: K.KernelIR, variant) -> CudaKernel:
    """``codegen.cuda.emit_kernel(kir, variant)``: read from the index in ``store`` where it holds
    it, else rendered and filed there (``store`` None: rendered). The renderer is imported only
    here, on a miss: a warm process never imports ``codegen.cuda`` and its emitter classes."""
    key = None if store is None else index_key(kir, variant, store)
    if key is not None:
        hit = load(store, key, variant)
        if hit is not None:
            return hit
    from ..codegen import cuda as cuda_emit
    made = cuda_emit.emit_kernel(kir, variant)
    if key is not None:
        save(store, key, made)
    return made


def index_key(kir: K.KernelIR, variant, store=None) -> dict | None:
    """The store key of ``kir`` rendered in ``variant``, or None where a value in them has no
    canonical text (``store``: where ``keys.emitter_hash`` may find the code hashes filed)."""
    from .shape_class import normal_form
    try:
        nf = normal_form(kir)
        ir = _IR_TEXT.get(nf)
        if ir is None:      # (a launch variant and the tuning key's default one: one text)
            ir = _IR_TEXT[nf] = canonical(kir)
        return {"rendered": FORMAT, "kfuse": keys.kfuse_version(), "emitter": keys.emitter_hash(store),
                "toolchain": keys.toolchain_versions(()),
                "ir": hashlib.sha256((ir + canonical(variant)).encode()).hexdigest()}
    except (TypeError, OSError):
        return None


def load(store, key: dict, variant) -> CudaKernel | None:
    try:
        entry = store.get(NAMESPACE, key)
        if entry is None:
            return None
        facts = json.loads(entry.read(FACTS))
        return CudaKernel(str(facts["name"]), entry.read(SOURCE).decode(), variant,
                                    _tuples(facts["divisors"]), tuple(bool(x) for x in facts["scalars"]))
    except Exception:                   # noqa: BLE001 - a bad entry is a miss
        return None


def save(store, key: dict, made: CudaKernel) -> None:
    """File ``made`` under ``key``, where its facts read back as they are (JSON keeps them)."""
    facts = {"name": made.name, "divisors": [list(d) for d in made.divisors], "scalars": list(made.scalars)}
    if (_tuples(facts["divisors"]), tuple(facts["scalars"])) != (made.divisors, made.scalars):
        return
    try:
        store.put(NAMESPACE, key, {SOURCE: made.source.encode(), FACTS: json.dumps(facts).encode()},
                  {"kind": "cuda-source", "backend": "cuda", "arch": "source"})   # (`cache ls`: not a CUBIN)
    except Exception:                   # noqa: BLE001 - the store is best effort
        pass


def _tuples(rows) -> tuple:
    return tuple(tuple(r) for r in rows)


def canonical(value) -> str:
    """A text naming ``value`` exactly: None, bools, ints, floats, complex numbers, strings,
    tuples, lists, (frozen)sets, enums and dataclasses (the kernel IR, a variant) of them, each
    tagged by its type; size values left out (:data:`_UNSIZED`). Raises TypeError for any other
    type (no key rather than a loose one)."""
    out: list = []
    _canon(value, out)
    return "".join(out)


def _canon(v, out: list) -> None:
    t = type(v)
    if v is None:
        out.append("N")
    elif t is bool:
        out.append("T" if v else "F")
    elif t is int:
        out.append(f"i{v};")
    elif t is float or t is complex:
        out.append(f"{t.__name__[0]}{v!r};")
    elif t is str:
        out.append(json.dumps(v))
    elif t is tuple or t is list:
        out.append("(" if t is tuple else "[")
        for x in v:
            _canon(x, out)
            out.append(",")
        out.append(")")
    elif t is frozenset or t is set:
        out.append("{" + ",".join(sorted(canonical(x) for x in v)) + "}")
    elif isinstance(v, enum.Enum):
        out.append(f"E{t.__module__}.{t.__qualname__}.{v.name};")
    elif dataclasses.is_dataclass(v) and not isinstance(v, type):
        names = _FIELDS.get(t)
        if names is None:
            skip = _UNSIZED.get(t, ())
            names = _FIELDS[t] = tuple(f.name for f in dataclasses.fields(v) if f.name not in skip)
        out.append(f"D{t.__module__}.{t.__qualname__}(")
        for n in names:
            out.append(n + "=")
            _canon(getattr(v, n), out)
            out.append(",")
        out.append(")")
    else:
        raise TypeError(f"no canonical text for a {t.__module__}.{t.__qualname__}")
