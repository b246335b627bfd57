"""Build and store a Numba overload as a native shared object (read by ``cpu_native``).

Called by ``cpu_persist`` when Numba has compiled a kernel's sequential variant (so in a process
that has Numba): the overload's final LLVM module (already optimised by Numba) is copied, every
function but the kernel made internal and dropped where unused (the CPython and cfunc wrappers,
which call into Python and Numba's C helpers), and emitted as position-independent object code
for the JIT's own CPU name and features at Numba's optimisation level: the kernel's LLVM code is
the JIT's, so its results are bit for bit the Numba dispatcher's. ``cc`` links it with a C file
(:func:`c_entry`): the entry ``kfuse_native_call`` that unpacks the argument tuple into Numba's
calling convention (an array is meminfo, parent, size, itemsize, data, shape, strides), a probe
of the struct offsets it reads, and the NRT allocation functions (a scratch array's MemInfo,
allocated and freed inside one call, never seen by Numba's runtime). ``-z defs`` makes any other
external symbol a link error, and then nothing is stored: a kernel that calls into Numba's C
helpers (or SVML) runs through Numba only.

Anything that fails here (no ``cc``, an unexpected argument type or LLVM signature, a link
error) stores nothing and says so only under ``KFUSE_DEBUG``: the kernel still works, through
Numba. The link runs in a thread beside the compiling call (:func:`save`).
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading

import numpy as np

from . import cpu_native as N

_LOG = logging.getLogger("kfuse")
_FLAGS = {"C": (0x1, 0x1), "F": (0x3, 0x2), "A": (0x3, 0x0)}    # NumPy's C/F_CONTIGUOUS bits
_ALIGNED, _WRITEABLE = 0x100, 0x400

_PRELUDE = r'''#include <stdint.h>
#include <stdlib.h>
#define HIDDEN __attribute__((visibility("hidden")))
typedef struct { intptr_t refcnt; void *type; char *data; int nd; int64_t *dims; int64_t *strides;
                 void *base; void *descr; int flags; } kf_arr;            /* NumPy's array struct */
typedef struct { intptr_t refcnt; void *type; intptr_t size; void *item[1]; } kf_tuple;
typedef struct { intptr_t refcnt; void *type; int64_t value; } kf_i64;    /* an np.int64 */
typedef void (*kf_dtor)(void *, size_t, void *);
typedef struct { size_t refct; kf_dtor dtor; void *dtor_info; void *data; size_t size;
                 void *ext; } kf_meminfo;                                 /* Numba's NRT_MemInfo */

HIDDEN kf_meminfo *NRT_MemInfo_alloc_aligned(size_t size, unsigned align) {
    if (align < 1) align = 1;
    char *base = malloc(sizeof(kf_meminfo) + size + 2 * (size_t)align);
    if (!base) return NULL;
    kf_meminfo *mi = (kf_meminfo *)base;
    char *data = base + sizeof(kf_meminfo);
    size_t rem = (uintptr_t)data % align;
    if (rem) data += align - rem;
    mi->refct = 1; mi->dtor = NULL; mi->dtor_info = NULL; mi->data = data; mi->size = size;
    mi->ext = NULL;
    return mi;
}
HIDDEN kf_meminfo *NRT_MemInfo_alloc_safe_aligned(size_t size, unsigned align) {
    return NRT_MemInfo_alloc_aligned(size, align);
}
HIDDEN void NRT_MemInfo_call_dtor(kf_meminfo *mi) {
    if (mi->dtor) mi->dtor(mi->data, mi->size, mi->dtor_info);
    free(mi);
}
HIDDEN void NRT_Free(void *p) { free(p); }
HIDDEN void *NRT_Allocate(size_t size) { return malloc(size); }

static void *kf_expect[NEXPECT];      /* each array's dtype, then ndarray and np.int64 */
void kfuse_native_init(void *const *expect) {
    for (int i = 0; i < NEXPECT; i++) kf_expect[i] = expect[i];
}
int64_t kfuse_native_probe(kf_tuple *t, int64_t what) {
    kf_arr *a = (kf_arr *)t->item[0];
    switch (what) {
    case 0: return (int64_t)(intptr_t)a->data;   case 1: return a->nd;
    case 2: return a->dims[1];                    case 3: return a->strides[1];
    case 4: return a->flags;                      case 5: return (int64_t)(intptr_t)a->descr;
    case 6: return (int64_t)(intptr_t)a->type;    case 7: return t->size;
    case 8: return (int64_t)(intptr_t)t->item[0]; case 9: return ((kf_i64 *)t->item[1])->value;
    }
    return -1;
}
'''


def compiler() -> str | None:
    """The path of ``cc``, or None where there is none."""
    return shutil.which("cc")


def signature_of(argtypes) -> tuple | None:
    """``cpu_native.arg_signature``'s form of Numba argument types, or None (not supported)."""
    from numba.core import types
    from numba.np import numpy_support
    out = []
    for t in argtypes:
        if type(t) is types.Array:
            dt = numpy_support.as_dtype(t.dtype)
            if dt.hasobject or dt.names is not None:
                return None
            out.append(("array", dt.str, t.ndim, t.layout, bool(t.mutable), bool(t.aligned)))
        elif t == types.int64:
            out.append(("int64",))
        else:
            return None
    return tuple(out)


def _llvm_params(argsig) -> list[str]:
    """Numba's calling convention's LLVM parameters for ``argsig`` (pointers as "ptr")."""
    out = ["ptr", "ptr"]                     # the return slot, the exception slot
    for a in argsig:
        if a[0] == "array":
            out += ["ptr", "ptr", "i64", "i64", "ptr"] + ["i64"] * (2 * a[2])
        else:
            out.append("i64")
    return out


def c_entry(symbol: str, argsig: tuple) -> str:
    """The C file linked with the kernel's object: prelude, prototype and entry."""
    arrays = [a for a in argsig if a[0] == "array"]
    nexp = len(arrays) + 2
    params = ", ".join("void *" if p == "ptr" else "int64_t" for p in _llvm_params(argsig))
    lines = [_PRELUDE.replace("NEXPECT", str(nexp)),
             f'extern int32_t kf_kernel({params}) __asm__("{symbol}");',
             "int32_t kfuse_native_call(kf_tuple *t) {",
             f"    if (t->size != {len(argsig)}) return {N.MISMATCH};"]
    call, j = ["ret", "&exc"], 0
    for i, a in enumerate(argsig):
        if a[0] == "int64":
            lines += [f"    kf_i64 *s{i} = (kf_i64 *)t->item[{i}];",
                      f"    if (s{i}->type != kf_expect[{nexp - 1}]) return {N.MISMATCH};"]
            call.append(f"s{i}->value")
            continue
        _, dt, nd, layout, writeable, aligned = a
        mask, want = _FLAGS[layout]
        mask |= _ALIGNED | _WRITEABLE
        want |= (_ALIGNED if aligned else 0) | (_WRITEABLE if writeable else 0)
        lines += [f"    kf_arr *a{i} = (kf_arr *)t->item[{i}];",
                  f"    if (a{i}->type != kf_expect[{nexp - 2}] || a{i}->descr != kf_expect[{j}]"
                  f" || a{i}->nd != {nd} || (a{i}->flags & {mask:#x}) != {want:#x}) return {N.MISMATCH};"]
        size = " * ".join(f"a{i}->dims[{d}]" for d in range(nd)) or "1"
        call += ["0", "0", f"(int64_t)({size})", str(np.dtype(dt).itemsize), f"a{i}->data"]
        call += [f"a{i}->dims[{d}]" for d in range(nd)] + [f"a{i}->strides[{d}]" for d in range(nd)]
        j += 1
    lines += ["    int64_t ret[8] = {0};", "    void *exc = 0;",
              f"    int32_t status = kf_kernel({', '.join(call)});",
              f"    return (status == 0 || status == -2) ? {N.OK} : {N.RAISED};", "}", ""]
    return "\n".join(lines)


class _Skip(Exception):
    """This overload is not stored natively (the message says why)."""


def _object_code(cres, symbol: str, argsig: tuple) -> bytes:
    """Position-independent object code of the overload's kernel alone (see the docstring)."""
    import llvmlite.binding as ll
    from numba.core import config as nconfig
    lib = cres.library
    final = getattr(lib, "_final_module", None)
    if final is None:
        raise _Skip("no final LLVM module (a library loaded from the cache)")
    mod = ll.parse_bitcode(final.as_bitcode())
    for g in list(mod.functions) + list(mod.global_variables):
        if not g.is_declaration and g.name != symbol:
            g.linkage = "internal"
    pb = ll.create_pass_builder(lib.codegen._tm, ll.create_pipeline_tuning_options(0))
    mpm = ll.create_new_module_pass_manager()
    mpm.add_global_dead_code_eliminate_pass()
    mpm.run(mod, pb)
    if any(g.name.startswith("_ZN08NumbaEnv") for g in mod.global_variables):
        raise _Skip("the kernel uses its Numba environment (Python objects)")
    got = ["ptr" if str(a.type) == "ptr" or str(a.type).endswith("*") else str(a.type)
           for a in mod.get_function(symbol).arguments]
    if got != _llvm_params(argsig):
        raise _Skip(f"LLVM parameters {got}")
    tm = ll.Target.from_triple(ll.get_process_triple()).create_target_machine(
        cpu=lib.codegen._get_host_cpu_name(), features=lib.codegen._tm_features,
        opt=nconfig.OPT, reloc="pic", codemodel="default")
    return tm.emit_object(mod)


def link(obj: bytes, csrc: str, cc: str) -> bytes:
    """``cc`` links the kernel's object code with its C entry into a shared object."""
    with tempfile.TemporaryDirectory(prefix="kfuse-native-") as d:
        with open(os.path.join(d, "kernel.o"), "wb") as f:
            f.write(obj)
        with open(os.path.join(d, "entry.c"), "w") as f:
            f.write(csrc)
        out = os.path.join(d, N.LIBRARY)
        r = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", out, "entry.c", "kernel.o", "-lm",
                            "-Wl,-z,defs", "-Wl,-Bsymbolic", "-Wl,-z,noexecstack"],
                           cwd=d, capture_output=True, text=True, timeout=120)
        if r.returncode:
            raise _Skip(f"link failed: {r.stderr.strip()[-400:]}")
        with open(out, "rb") as f:
            return f.read()


_PENDING: list = []            # link threads not yet finished (joined by wait(), and at exit)
_PENDING_LOCK = threading.Lock()


def save(store, source: str, fn_name: str, cres) -> bool:
    """Store ``cres`` (a sequential variant's Numba overload of ``fn_name`` in ``source``) as a
    native object; False where it cannot be. The LLVM code generation (under Numba's compiler
    lock: LLVM's context is not thread-safe), the ``cc`` link and the store's write run in a
    thread, so the compiling call does not wait for them (about 90 ms); the thread is not a
    daemon: a process that exits sooner waits for it, and the next one finds the object."""
    if store is None or not N.enabled():
        return False
    try:
        cc = compiler()
        if cc is None:
            raise _Skip("no cc")
        argsig = signature_of(cres.signature.args)
        if argsig is None:
            raise _Skip(f"argument types {cres.signature.args}")
        symbol = cres.fndesc.mangled_name
        if '"' in symbol or "\\" in symbol:
            raise _Skip("symbol name")
        codegen = cres.target_context.codegen()
        meta = {"function": fn_name, "kind": "cpu-native", "backend": "cpu",
                "arch": codegen.magic_tuple()[1], "signature": [str(t) for t in cres.signature.args]}
    except _Skip as e:
        _LOG.info("kfuse: %s not stored natively: %s", fn_name, e)
        return False
    except Exception as e:          # (never fails the compile)
        _LOG.info("kfuse: %s not stored natively: %s: %s", fn_name, type(e).__name__, e)
        return False
    t = threading.Thread(target=_link_and_store, name="kfuse-native-link",
                         args=(store, source, fn_name, argsig, symbol, cres, cc, meta))
    with _PENDING_LOCK:
        _PENDING.append(t)
    t.start()
    return True


def _link_and_store(store, source, fn_name, argsig, symbol, cres, cc, meta) -> None:
    from numba.core.compiler_lock import global_compiler_lock
    try:
        with global_compiler_lock:          # (LLVM's context is shared with Numba's compiles)
            obj = _object_code(cres, symbol, argsig)
            save_host(store)
        csrc = c_entry(symbol, argsig)
        so = link(obj, csrc, cc)
        record = {"format": N.NATIVE_FORMAT, "symbol": symbol, "args": [list(a) for a in argsig]}
        files = {N.LIBRARY: so, "entry.c": csrc.encode(), N.RECORD: json.dumps(record).encode(),
                 "kernel.py": source.encode()}
        store.put("kernels", N.native_key(source, fn_name, argsig), files, meta)
    except Exception as e:          # (a link error: nothing stored, the kernel runs on Numba)
        _LOG.info("kfuse: %s not stored natively: %s: %s", fn_name, type(e).__name__, e)
    finally:
        with _PENDING_LOCK:
            _PENDING.remove(threading.current_thread())


def wait() -> None:
    """Wait for the native objects being linked (tests; the interpreter does it at exit)."""
    while True:
        with _PENDING_LOCK:
            if not _PENDING:
                return
            t = _PENDING[0]
        t.join()


def save_host(store) -> None:
    """Store this host's record (``cpu_native.llvm_cpu_name``) where it is missing."""
    import llvmlite.binding as ll
    key = N.host_key()
    if getattr(store, "has", None) is not None and store.has("host", key):
        return
    record = {"llvm_cpu": ll.get_host_cpu_name()}
    store.put("host", key, {N.HOST_RECORD: json.dumps(record).encode()},
              {"kind": "cpu-host", "backend": "cpu", "arch": record["llvm_cpu"]})


def save_marker(store, source: str, fn_name: str, cres) -> None:
    """Mark that the store holds the parallel variant's Numba code for ``cres``'s argument types
    (``NativeKernel.parallel_stored``: what getting it costs a process without Numba)."""
    argsig = signature_of(cres.signature.args)
    if store is None or argsig is None or not N.enabled():
        return
    store.put("kernels", N.native_key(source, fn_name, argsig, parallel=True),
              {"kernel.py": source.encode()},
              {"function": fn_name, "kind": "cpu-parallel-marker", "backend": "cpu"})
