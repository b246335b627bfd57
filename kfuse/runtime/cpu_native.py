"""CPU kernels as native shared objects, loaded with ctypes: a warm-cache call without Numba.

Importing Numba costs a fresh process about 100 ms, its first dispatch 30 ms more: most of a
warm-cache first CPU call. So when Numba compiles a kernel's sequential variant, kfuse also
stores it (``cpu_native_build``) as a shared object: the overload's own optimised LLVM module
emitted as position-independent code (the same LLVM code as the JIT's, so bit-identical results),
linked by ``cc`` with a small C entry point and the three Numba runtime (NRT) functions a kernel's
scratch arrays use. A later process finds it by a key it computes without Numba (this module
imports neither Numba nor llvmlite), ``dlopen``s it and calls it.

The C entry ``kfuse_native_call(tuple)`` takes the Python tuple of the arguments the Numba
dispatcher would take (arrays, then ``np.int64`` scalars) and reads the arrays' data pointers,
shapes, strides and flags straight from NumPy's array structs (its stable ABI); it checks every
argument is what the object was compiled for (exact ``ndarray``, dtype, rank, layout, writeable,
aligned: what Numba's ``typeof`` decides an overload by, and ``np.int64`` scalars) and returns
1 where one is not, 2 where the kernel raised, 0 on success. ctypes releases the GIL around the
call, as the ``nogil`` Numba kernel does. One ctypes argument (the tuple) keeps the call cheap:
measured on the dev box, 0.16 us against 0.23 us for a Numba dispatcher on the same arguments
and 0.44 us for ctypes with four converted arguments, so the native entry also stays the hot
path once Numba is imported.

Policy (``runtime/cpu.py``'s ``_compile_source``): a kernel gets a :class:`NativeKernel` (its
sequential variant) and a :class:`LazyParallel` (its parallel one) only while Numba is not
imported, a disk cache is open and ``KFUSE_CPU_NATIVE`` is not 0. Argument types whose object is
stored run natively; anything else (no object for these types, a parallel variant, which needs
Numba's threading layer, a check that fails, a kernel that raises, an object that does not load)
builds the kernel's Numba dispatchers, importing Numba then, and runs there: today's path. Once
Numba is imported a kernel's new argument types go to Numba; natively loaded ones stay native.

Key: the kernel's source, its argument types, the sequential variant's jit options, this host's
CPU (``/proc/cpuinfo``'s model and feature flags: what LLVM's host CPU name and features derive
from), the Python ABI, NumPy's and Numba's and llvmlite's versions (read from their
``dist-info`` folders, without importing them) and every ``NUMBA_*`` variable. Linux only
(elsewhere nothing is stored or loaded). Before the first object runs, :func:`_abi_ok` checks
the struct offsets the entry reads on a real array, tuple and ``np.int64``.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.util
import json
import os
import sys

import numpy as np

from .. import config
from .keys import dist_version

NATIVE_FORMAT = 1
SEQ_OPTIONS = {"error_model": "numpy", "nogil": True}    # the sequential variant's numba.njit options
LIBRARY = "kernel.so"
RECORD = "native.json"
HOST_RECORD = "host.json"
OK, MISMATCH, RAISED = 0, 1, 2                            # kfuse_native_call's results
_CALL = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.py_object)


def numba_imported() -> bool:
    """Whether Numba is imported in this process (then new kernels take its path)."""
    return "numba" in sys.modules


def enabled() -> bool:
    """Whether native objects are stored and loaded in this process: Linux, the switch on, and
    no ``.numba_config.yaml`` here (Numba's settings from a file, which the key cannot see)."""
    return sys.platform.startswith("linux") and config.get().cpu_native and \
        host_fingerprint() is not None and not os.path.exists(".numba_config.yaml")


@functools.lru_cache(maxsize=None)
def host_fingerprint() -> str | None:
    """sha256 of the CPU's identity and feature flags (the first processor of /proc/cpuinfo), or
    None where there is no such file. LLVM's host CPU name and features, which the machine code is
    compiled for, follow from these."""
    wanted = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags", "features",
              "cpu implementer", "cpu architecture", "cpu variant", "cpu part", "isa", "uarch")
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read().split("\n\n")[0]
    except OSError:
        return None
    fields = []
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() in wanted:
            fields.append(f"{name.strip().lower()}={value.strip()}")
    if not fields:
        return None
    return hashlib.sha256(("\n".join(fields) + "\n" + os.uname().machine).encode()).hexdigest()


@functools.lru_cache(maxsize=None)
def toolchain() -> dict:
    """What a stored object depends on beyond its kernel and host CPU."""
    return {"python": sys.implementation.cache_tag, "debug": hasattr(sys, "gettotalrefcount"),
            "pointer": ctypes.sizeof(ctypes.c_void_p), "numpy": np.__version__,
            "numba": dist_version("numba"), "llvmlite": dist_version("llvmlite"),
            "numba_env": [list(kv) for kv in config.get().numba_env]}


def host_key() -> dict:
    """The store key of this host's record (LLVM's name for its CPU, for tuning keys), kept in
    the store's ``host`` namespace."""
    return {"native-host": NATIVE_FORMAT, "host": host_fingerprint(),
            "llvmlite": dist_version("llvmlite")}


@functools.lru_cache(maxsize=None)
def llvm_cpu_name() -> str:
    """LLVM's name of the host CPU (``llvmlite.binding.get_host_cpu_name()``): read from this
    host's record in the disk cache where llvmlite is not imported (importing it costs 20 ms of a
    warm first call), else asked from llvmlite."""
    if "llvmlite" not in sys.modules and enabled():
        try:
            from .cache import CacheStore
            store = CacheStore.open()
            entry = store.get("host", host_key()) if store is not None else None
            if entry is not None:
                return str(json.loads(entry.read(HOST_RECORD))["llvm_cpu"])
        except Exception:           # (a bad record: ask llvmlite)
            pass
    import llvmlite.binding as ll
    try:
        return ll.get_host_cpu_name()
    except Exception:               # pragma: no cover
        return "unknown"


def native_key(source: str, fn_name: str, argsig: tuple, parallel: bool = False) -> dict:
    """The store key of a kernel's native object for argument types ``argsig``; ``parallel``:
    of the marker saying the store holds the parallel variant's Numba code for them."""
    key = {"native": NATIVE_FORMAT, "backend": "cpu", "fn": fn_name,
           "source": hashlib.sha256(source.encode()).hexdigest(),
           "args": [list(a) for a in argsig], "jit": SEQ_OPTIONS, "host": host_fingerprint(),
           "tools": toolchain()}
    if parallel:
        key["parallel_marker"] = True
    return key


def _layout(a: np.ndarray) -> str:
    f = a.flags
    return "C" if f.c_contiguous else "F" if f.f_contiguous else "A"


def arg_signature(args) -> tuple | None:
    """Each argument as Numba's ``typeof`` would type it, in plain values: an array
    ``("array", dtype.str, ndim, layout, writeable, aligned)``, an integer ``("int64",)``; None
    where an argument is anything else (no native object takes it)."""
    out = []
    for a in args:
        if type(a) is np.ndarray:
            out.append(("array", a.dtype.str, a.ndim, _layout(a), bool(a.flags.writeable),
                        bool(a.flags.aligned)))
        elif type(a) is int or type(a) is np.int64:
            out.append(("int64",))
        else:
            return None
    return tuple(out)


class NativeFn:
    """One loaded object: ``call(args_tuple)`` returns OK, MISMATCH or RAISED."""
    __slots__ = ("call", "lib", "path", "expect", "argsig")

    def __init__(self, path: str, argsig: tuple):
        self.path, self.argsig = path, argsig
        self.lib = ctypes.CDLL(path)                 # (kept: never unloaded)
        dtypes = [np.dtype(a[1]) for a in argsig if a[0] == "array"]
        ids = [id(d) for d in dtypes] + [id(np.ndarray), id(np.int64)]
        self.expect = (ctypes.c_void_p * len(ids))(*ids)
        self.lib.kfuse_native_init(self.expect)
        if not _abi_ok(self.lib):
            raise OSError("NumPy's array or CPython's tuple layout differs from the entry's")
        self.call = _CALL(ctypes.cast(self.lib.kfuse_native_call, ctypes.c_void_p).value)


_ABI: list = []


def _abi_ok(lib) -> bool:
    """Whether the entry reads the fields it reads where NumPy and CPython keep them (checked on
    the first object loaded, with a strided array, a tuple and an ``np.int64``)."""
    if _ABI:
        return _ABI[0]
    probe = lib.kfuse_native_probe
    probe.restype = ctypes.c_int64
    probe.argtypes = (ctypes.py_object, ctypes.c_int64)
    a = np.zeros((3, 5), np.float32)[:, ::2]
    t = (a, np.int64(123456789))
    want = [a.ctypes.data, a.ndim, a.shape[1], a.strides[1], a.flags.num, id(a.dtype), id(np.ndarray),
            len(t), id(a), 123456789]
    got = [probe(t, i) for i in range(len(want))]
    _ABI.append(got == want)
    return _ABI[0]


def load(store, source: str, fn_name: str, argsig: tuple) -> NativeFn | None:
    """The stored object of ``fn_name`` in ``source`` for ``argsig``, loaded; None where the
    store has none or it does not load (the caller then takes Numba's path)."""
    if store is None or argsig is None or not enabled():
        return None
    try:
        entry = store.get("kernels", native_key(source, fn_name, argsig))
    except Exception:
        return None
    if entry is None or LIBRARY not in entry.files:
        return None
    try:
        return NativeFn(os.path.join(entry.path, LIBRARY), argsig)
    except (OSError, AttributeError, TypeError, ValueError):
        return None


class NativeKernel:
    """A kernel's sequential variant where Numba is not imported: callable as its Numba
    dispatcher is, it runs the stored native object for the arguments' types, else (or where a
    check fails or the kernel raises) the Numba dispatcher that ``build()`` makes (``build``:
    ``() -> (seq, par)``, which imports Numba). ``fast`` is the object the last call ran."""
    __slots__ = ("source", "fn_name", "store", "build", "pair", "loaded", "fast")

    def __init__(self, source: str, fn_name: str, store, build):
        self.source, self.fn_name, self.store, self.build = source, fn_name, store, build
        self.pair = None
        self.loaded: dict = {}        # argsig -> NativeFn, or None (none stored, or Numba's path)
        self.fast = None

    def numba(self) -> tuple:
        """The Numba dispatchers ``(seq, par)``, built on first need."""
        if self.pair is None:
            self.pair = self.build()
        return self.pair

    def native_for(self, args) -> NativeFn | None:
        """The native object for these arguments' types: loaded on first need while Numba is not
        imported, else only one loaded before."""
        sig = arg_signature(args)
        if sig is None:
            return None
        if sig not in self.loaded:
            fn = None
            if self.pair is None and not numba_imported():
                fn = load(self.store, self.source, self.fn_name, sig)
            self.loaded[sig] = fn
        return self.loaded[sig]

    def __call__(self, *args):
        fast = self.fast
        if fast is not None and fast.call(args) == OK:
            return None
        fn = self.native_for(args)
        if fn is not None:
            if int in map(type, args):          # (the entry reads np.int64 scalars)
                args = tuple(np.int64(a) if type(a) is int else a for a in args)
            status = fn.call(args)
            if status == OK:
                self.fast = fn
                return None
        return self.numba()[0](*args)       # (raises what the kernel raised)

    def parallel_stored(self) -> bool:
        """Whether the store holds the parallel variant's Numba code for the argument types the
        last native call ran with (a marker ``cpu_native_build.save_marker`` left)."""
        fast = self.fast
        has = getattr(self.store, "has", None)
        return fast is not None and has is not None and \
            has("kernels", native_key(self.source, self.fn_name, fast.argsig, parallel=True))

    @property
    def signatures(self) -> list:
        """Numba's signatures compiled or loaded so far (none while only native objects ran)."""
        return self.pair[0].signatures if self.pair is not None else []

    @property
    def overloads(self) -> dict:
        return self.pair[0].overloads if self.pair is not None else {}

    def __getattr__(self, name):            # (the dispatcher's, once built: targetctx, _cache)
        if name == "pair" or self.pair is None:
            raise AttributeError(name)
        return getattr(self.pair[0], name)


class LazyParallel:
    """A kernel's parallel variant beside a :class:`NativeKernel`: Numba's dispatcher, built (and
    Numba imported) at its first call."""
    __slots__ = ("seq",)

    def __init__(self, seq: NativeKernel):
        self.seq = seq

    def __call__(self, *args):
        return self.seq.numba()[1](*args)

    @property
    def signatures(self) -> list:
        return self.seq.pair[1].signatures if self.seq.pair is not None else []

    @property
    def overloads(self) -> dict:
        return self.seq.pair[1].overloads if self.seq.pair is not None else {}

    def __getattr__(self, name):            # (the dispatcher's, once built: targetctx, _cache)
        if self.seq.pair is None:
            raise AttributeError(name)
        return getattr(self.seq.pair[1], name)


def lazy_pair(source: str, fn_name: str, store, build) -> tuple | None:
    """``(NativeKernel, LazyParallel)`` standing in for a kernel's two dispatchers, or None where
    the native path does not apply in this process (Numba imported, no store, switched off)."""
    if store is None or numba_imported() or not enabled():
        return None
    seq = NativeKernel(source, fn_name, store, build)
    return seq, LazyParallel(seq)
