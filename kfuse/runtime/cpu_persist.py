"""Reload Numba machine code from the disk store without recompiling, and without pickle.

How: a kfuse CPU kernel is a ``numba.njit`` dispatcher built from generated source. We give the
dispatcher our own cache object (the ``_cache`` slot Numba consults in ``Dispatcher.compile``
for every new signature, before compiling and after). ``save_overload`` stores, per Numba
signature, the overload's object code and shared bitcode (``library.serialize_using_object_code``)
plus a JSON record of the few function-descriptor fields needed to call it (mangled names, env
name, return type, reload hooks). ``load_overload`` rebuilds the ``CompileResult`` from those:
``codegen.unserialize_library`` (object code straight into the JIT: no LLVM optimisation or
code generation), a fresh ``Environment`` over the kernel's globals, and the CPython wrapper's
address. What Numba's own ``cache=True`` pickles (fndesc, environment, types) is rebuilt from
JSON and from the live dispatcher (argument types come from the call itself); anything we
cannot rebuild that way (non-empty environment constants, unknown reload hooks, exotic return
types) is simply not persisted. Afterwards the dispatcher's C fast path calls the loaded code:
the hot path is Numba's own.

Numba's runtime (NRT: the reference counts and allocations of arrays a kernel makes) is LLVM code
that Numba compiles in every process (about 15 ms). Each entry also stores the NRT's object code
(``nrt.o``, ``nrt.bc``: same toolchain and CPU as the kernel, as its key says), and a process that
loads a kernel before it has compiled anything loads the NRT from that entry too (about 2 ms):
:func:`init_nrt`.

The sequential variant's dispatcher is attached with ``native=True``: each overload it compiles
is also stored as a native shared object (``cpu_native_build``), which a process without Numba
runs instead (``cpu_native``); the parallel one leaves a marker that its code is stored, for the
thread policy's price of getting it there (``cpu_par_policy.par_cost``).

Trust: an imported entry holds machine code; ``kfuse cache import`` checks integrity, not
provenance, so only import archives from machines you trust.

API: ``load_or_compile(store, key_dict, source, fn_name, compile_fn=None, **jit_options)``.
"""
from __future__ import annotations

import hashlib
import json
import warnings

from .cache import CacheStore, CacheWarning, warn_once
from .keys import canonical_json, normalise_key, toolchain_versions

PERSIST_FORMAT = 2         # 2: sequential overloads also stored natively (cpu_native): a cache of
                           # format 1 compiles each kernel once more, which stores its native object
CPU_TOOLS = ("numba",)         # the compilers of a CPU kernel (its key holds their versions)
_RELOAD_HOOKS = {"numba.core.typed_passes:_reload_parfors"}


def module_name_for(source: str) -> str:
    """A module name unique to ``source``: Numba mangles it into every symbol name, so two
    different kernels never define the same symbol in the process-wide JIT."""
    return "kfuse_cpu_" + hashlib.sha256(source.encode()).hexdigest()[:20]


def exec_module(source: str, modname: str | None = None) -> dict:
    """The globals of generated ``source`` exec'd once (``__name__`` unique to the source)."""
    glb = {"__name__": modname or module_name_for(source), "__builtins__": __builtins__}
    exec(compile(source, f"<kfuse:{glb['__name__']}>", "exec"), glb)
    return glb


def exec_source(source: str, fn_name: str, modname: str | None = None, glb: dict | None = None,
                **jit_options):
    """Exec generated ``source`` in fresh globals (or take ``glb``, :func:`exec_module`'s) and
    wrap ``fn_name`` with ``numba.njit(**jit_options)`` (default ``parallel=True``). Lazy: nothing
    is compiled until the first call."""
    import numba
    if glb is None:
        glb = exec_module(source, modname)
    opts = {"parallel": True}
    opts.update(jit_options)
    return numba.njit(**opts)(glb[fn_name])


def load_or_compile(store: CacheStore | None, key_dict: dict, source: str, fn_name: str,
                    compile_fn=None, **jit_options):
    """A Numba dispatcher for ``fn_name`` in ``source`` whose overloads persist in ``store``.

    ``compile_fn(source, fn_name) -> numba dispatcher`` (not yet compiled) builds it; by default
    :func:`exec_source`. It must give the exec'd globals a ``__name__`` unique to the source
    (use :func:`module_name_for`). Each signature seen at call time is loaded from the store
    when present (about 5 ms) or compiled and stored. ``store=None`` means uncached.
    """
    disp = compile_fn(source, fn_name) if compile_fn is not None else \
        exec_source(source, fn_name, **jit_options)
    if store is not None:
        attach(disp, store, key_dict, source, fn_name)
    return disp


def attach(dispatcher, store: CacheStore, key_dict: dict, source: str, fn_name: str,
           native: bool = False) -> None:
    """Make ``dispatcher`` (a ``numba.njit`` function defined by exec'ing ``source`` in globals
    whose ``__name__`` is :func:`module_name_for(source) <module_name_for>`) load and save its
    overloads through ``store``. Several dispatchers of one source may each be attached.
    ``native``: each compiled overload is also stored as a native shared object
    (``cpu_native_build``; the sequential variant, whose options are ``cpu_native.SEQ_OPTIONS``)."""
    dispatcher._cache = NumbaDiskCache(store, key_dict, source, fn_name, dispatcher, native)


def is_stored(dispatcher, argtypes: tuple) -> bool:
    """Whether the disk store holds ``dispatcher``'s machine code for the Numba ``argtypes``
    (without reading it: a load may still find it bad and compile)."""
    cache = getattr(dispatcher, "_cache", None)
    if not isinstance(cache, NumbaDiskCache) or not cache.enabled:
        return False
    key = cache.key(tuple(argtypes), dispatcher.targetctx.codegen())
    has = getattr(cache.store, "has", None)
    return key is not None and has is not None and has("kernels", key)


class NumbaDiskCache:
    """Numba's cache protocol (load_overload/save_overload/...) over the kfuse store."""

    def __init__(self, store, key_dict, source, fn_name, dispatcher, native: bool = False):
        self.store = store
        self.native = native
        self.base_key = normalise_key(key_dict)
        self.source = source
        self.fn_name = fn_name
        self.py_func = dispatcher.py_func
        self.targetoptions = _plain_options(dispatcher.targetoptions)
        # Numba mangles the module name into every symbol: only a name unique to the source keeps
        # two different kernels from defining the same symbol in the process-wide JIT.
        self.enabled = self.py_func.__module__ == module_name_for(source)
        if not self.enabled:
            warn_once("module", "cpu_persist",
                      "kfuse cache: CPU kernels are not persisted: exec the generated source in "
                      "globals whose __name__ is cpu_persist.module_name_for(source) "
                      f"(got {self.py_func.__module__!r})")
        self.loads = 0
        self.saves = 0

    # numba's _Cache interface ---------------------------------------------------------------
    cache_path = None

    def enable(self):
        self.enabled = True

    def disable(self):
        self.enabled = False

    def flush(self):
        pass

    def key(self, argtypes, codegen) -> dict | None:
        names = [str(t) for t in argtypes]
        if any("0x" in n or "<" in n for n in names):     # address-bearing types: not stable
            return None
        return {"persist": PERSIST_FORMAT, "base": self.base_key,
                "source": hashlib.sha256(self.source.encode()).hexdigest(),
                "fn": self.fn_name, "module": self.py_func.__module__,
                "numba_args": names, "jit": self.targetoptions,
                "codegen": [str(x) for x in codegen.magic_tuple()],
                "toolchain": toolchain_versions(CPU_TOOLS)}

    def load_overload(self, sig, target_context):
        if not self.enabled:
            return None
        from numba.core import sigutils
        args, _ = sigutils.normalize_signature(sig)
        key = self.key(args, target_context.codegen())
        if key is None:
            return None
        entry = self.store.get("kernels", key)
        init_nrt(target_context, entry)     # (a miss compiles it here, where it can be stored)
        if entry is None:
            return None
        try:
            cres = _rebuild(entry, tuple(args), target_context, self.py_func)
        except _Skip:
            return None
        except Exception as e:      # a bad record: recompile (and the save replaces it)
            warn_once("bad", entry.path, f"kfuse cache: cannot reload {self.fn_name} from "
                      f"{entry.key_hash[:16]} ({type(e).__name__}: {e}); recompiling")
            self.store.remove(entry.path)
            return None
        self.loads += 1
        return cres

    def save_overload(self, sig, cres):
        if not self.enabled:
            return
        if self.native:
            from . import cpu_native_build
            cpu_native_build.save(self.store, self.source, self.fn_name, cres)
        elif self.base_key.get("parallel"):
            from . import cpu_native_build
            cpu_native_build.save_marker(self.store, self.source, self.fn_name, cres)
        try:
            key = self.key(tuple(cres.signature.args), cres.target_context.codegen())
            if key is None:
                return
            files = _serialize(cres)
        except _Skip:
            return
        files["kernel.py"] = self.source.encode()
        files.update(_NRT_FILES)
        meta = {"function": self.fn_name, "kind": "cpu-numba", "backend": "cpu",
                "arch": cres.target_context.codegen().magic_tuple()[1],
                "signature": [str(t) for t in cres.signature.args]}
        if self.store.put("kernels", key, files, meta) is not None:
            self.saves += 1


_NRT_FILES: dict = {}      # this process's NRT object code, where kfuse compiled or loaded it


def init_nrt(target_context, entry=None) -> None:
    """Initialise Numba's runtime as ``rtsys.initialize`` does, but with its LLVM functions loaded
    from ``entry``'s ``nrt.o``/``nrt.bc`` where it has them, else compiled with their object code
    kept (for :meth:`NumbaDiskCache.save_overload`). A Numba whose runtime object differs from the
    one this mirrors (or ``NUMBA_DEBUG_NRT``, which changes its code) gets ``rtsys.initialize``."""
    from numba.core import config as nconfig
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.runtime import rtsys
    with global_compiler_lock:
        known = isinstance(getattr(type(rtsys), "library", None), property) and "_init" in vars(rtsys)
        if not known or rtsys._init or nconfig.DEBUG_NRT:
            rtsys.initialize(target_context)
            return
        from llvmlite import binding as ll
        from numba.core.runtime import _nrt_python as _nrt, nrtdynmod
        if nconfig.NRT_STATS:
            _nrt.memsys_enable_stats()
        for py_name, address in _nrt.c_helpers.items():    # (rtsys.initialize's symbols)
            ll.add_symbol(py_name if py_name.startswith("_") else "NRT_" + py_name, address)
        codegen = target_context.codegen()
        files = entry.files if entry is not None else {}
        library = None
        if "nrt.o" in files and "nrt.bc" in files:
            obj, bc = files["nrt.o"], files["nrt.bc"]
            try:
                library = codegen.unserialize_library(("nrt", "object", (obj, bc)))
            except Exception as e:          # (a verified entry of this toolchain: not expected)
                warn_once("nrt", entry.path, f"kfuse cache: cannot load Numba's runtime from "
                          f"{entry.key_hash[:16]} ({type(e).__name__}: {e}); compiling it")
        if library is None:
            ir_mod, library = nrtdynmod.create_nrt_module(target_context)
            library.enable_object_caching()
            library.add_ir_module(ir_mod)
            library.finalize()
            _, _, (obj, bc) = library.serialize_using_object_code()
        _NRT_FILES.update({"nrt.o": bytes(obj), "nrt.bc": bytes(bc)})
        rtsys._library = library
        rtsys._init = True


class _Skip(Exception):
    """This overload cannot be persisted / reloaded pickle-free (not an error)."""


def _plain_options(opts) -> dict:
    out = {}
    for k, v in sorted(dict(opts).items()):
        try:
            canonical_json(v)
            out[k] = v
        except TypeError:
            out[k] = str(type(v).__name__)
    return normalise_key(out)


# --- return types as JSON (no eval, no pickle) --------------------------------------------------
def _type_to_json(t):
    from numba.core import types
    if t is types.none:
        return ["none"]
    if isinstance(t, types.Boolean):
        return ["scalar", "bool"]
    if isinstance(t, (types.Integer, types.Float, types.Complex)):
        return ["scalar", str(t)]
    if isinstance(t, types.Array) and type(t) is types.Array:
        return ["array", _type_to_json(t.dtype)[1], t.ndim, t.layout, bool(t.mutable), bool(t.aligned)]
    if isinstance(t, types.BaseTuple):
        return ["tuple", [_type_to_json(x) for x in t.types]]
    raise _Skip(f"return type {t}")


def _type_from_json(j):
    from numba.core import types
    kind = j[0]
    if kind == "none":
        return types.none
    if kind == "scalar":
        name = j[1]
        t = types.boolean if name == "bool" else getattr(types, name)
        if not isinstance(t, (types.Boolean, types.Integer, types.Float, types.Complex)):
            raise ValueError(f"bad scalar type {name!r}")
        return t
    if kind == "array":
        _, dt, ndim, layout, mutable, aligned = j
        if layout not in ("C", "F", "A"):
            raise ValueError(f"bad layout {layout!r}")
        return types.Array(_type_from_json(["scalar", dt]), int(ndim), layout,
                           readonly=not mutable, aligned=bool(aligned))
    if kind == "tuple":
        return types.BaseTuple.from_types([_type_from_json(x) for x in j[1]])
    raise ValueError(f"bad type record {j!r}")


def _serialize(cres) -> dict:
    if cres.objectmode or cres.lifted:
        raise _Skip("object mode / lifted loops")
    hooks = []
    for fn in cres.reload_init or ():
        name = f"{fn.__module__}:{fn.__qualname__}"
        if name not in _RELOAD_HOOKS:
            raise _Skip(f"reload hook {name}")
        if name not in hooks:
            hooks.append(name)
    envs = []
    for env in cres._find_referenced_environments():
        if len(env.consts):
            raise _Skip("environment constants")
        envs.append(env.env_name)
    if cres.environment is not None and len(cres.environment.consts):
        raise _Skip("environment constants")
    fd = cres.fndesc
    libname, kind, (obj, shared_bc) = cres.library.serialize_using_object_code()
    defined = sorted({g.name for g in list(cres.library._final_module.functions)
                      + list(cres.library._final_module.global_variables)
                      if not g.is_declaration and g.linkage.name == "external"})
    record = {
        "format": PERSIST_FORMAT, "libname": libname, "modname": fd.modname,
        "qualname": fd.qualname, "unique_name": fd.unique_name, "args": list(fd.args),
        "kws": list(fd.kws), "mangled_name": fd.mangled_name, "env_name": fd.env_name,
        "inline": bool(fd.inline), "noalias": bool(fd.noalias), "abi_tags": list(fd.abi_tags),
        "uid": fd.uid, "restype": _type_to_json(cres.signature.return_type),
        "argtypes": [str(t) for t in cres.signature.args], "reload_init": hooks,
        "envs": envs, "defined_symbols": defined,
    }
    json.dumps(record)   # must be plain JSON
    return {"object.o": bytes(obj), "shared.bc": bytes(shared_bc),
            "numba.json": json.dumps(record, sort_keys=True).encode()}


def _rebuild(entry, argtypes, target_context, py_func):
    from numba.core import typing
    from numba.core.compiler import CompileResult
    from numba.core.environment import Environment, lookup_environment
    from numba.core.funcdesc import PythonFunctionDescriptor

    rec = json.loads(entry.read("numba.json").decode())
    if rec.get("format") != PERSIST_FORMAT:
        raise ValueError("unknown record format")
    if rec["argtypes"] != [str(t) for t in argtypes]:
        raise ValueError("argument types differ from the record")
    if rec["modname"] != py_func.__module__ or rec["qualname"] != py_func.__qualname__:
        raise ValueError("function name differs from the record")
    restype = _type_from_json(rec["restype"])
    codegen = target_context.codegen()
    engine = codegen._engine
    if any(s in engine._defined_symbols for s in rec["defined_symbols"]):
        raise _Skip("symbols already defined in this process")   # compile afresh instead
    hooks = []
    for name in rec["reload_init"]:
        if name not in _RELOAD_HOOKS:
            raise ValueError(f"unknown reload hook {name}")
        mod, qual = name.split(":")
        if mod == "numba.core.typed_passes":
            from numba.core.typed_passes import _reload_parfors
            hooks.append(_reload_parfors)
    for fn in hooks:
        fn()
    init_nrt(target_context, entry)       # the NRT (target_context.refresh() costs ~0.4 s)

    fd = PythonFunctionDescriptor.__new__(PythonFunctionDescriptor)
    fd.native = True
    fd.modname = rec["modname"]
    fd.qualname = rec["qualname"]
    fd.unique_name = rec["unique_name"]
    fd.doc = py_func.__doc__ or ""
    fd.typemap = None
    fd.calltypes = None
    fd.args = tuple(rec["args"])
    fd.kws = tuple(rec["kws"])
    fd.restype = restype
    fd.argtypes = argtypes
    fd.mangled_name = rec["mangled_name"]
    fd.env_name = rec["env_name"]
    fd.global_dict = py_func.__globals__
    fd.inline = rec["inline"]
    fd.noalias = rec["noalias"]
    fd.abi_tags = tuple(rec["abi_tags"])
    fd.uid = rec["uid"]

    def env_for(name):
        env = lookup_environment(name)
        if env is None:
            env = Environment(py_func.__globals__)
            env.env_name = name
            Environment._memo[name] = env
        return env

    env = env_for(fd.env_name)
    ref_envs = [env_for(n) for n in rec["envs"]]
    library = codegen.unserialize_library(
        (rec["libname"], "object", (entry.read("object.o"), entry.read("shared.bc"))))
    cfunc = target_context.get_executable(library, fd, env)
    cres = CompileResult(
        typing_context=target_context.typing_context, target_context=target_context,
        library=library, environment=env, entry_point=cfunc, fndesc=fd, type_annotation="",
        signature=typing.signature(restype, *argtypes), objectmode=False, lifted=(),
        typing_error=None, call_helper=None, metadata=None, reload_init=hooks,
        referenced_envs=ref_envs)
    for e in ref_envs:
        library.codegen.set_env(e.env_name, e)
    return cres


__all__ = ["load_or_compile", "exec_source", "exec_module", "attach", "module_name_for", "NumbaDiskCache", "is_stored",
           "CacheWarning"]
_ = warnings  # re-exported category lives in cache.py
