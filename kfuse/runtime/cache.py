"""The disk store of compiled kernels and tuning results (no pickle anywhere).

Layout under ``config.cache_dir`` (mode 0700)::

    kernels/<sha256 of key>/meta.json     key fields in clear, versions, sizes + sha256 of files
    kernels/<sha256 of key>/<stage files> kernel.py / kernel.cu / kernel.ptx / kernel.cubin / object.o
    kernels/<sha256 of key>/last_used     empty; its mtime is the LRU clock (one utime per hit)
    tuning/<sha256 of key>/...            tuning results (same shape, file ``tuning.json``)
    host/<sha256 of key>/...              facts about a machine (``cpu_native.host_key``: LLVM's
                                          name for its CPU, read without importing llvmlite)
    tmp/                                  writers' temp dirs; published with one os.rename

Readers never see half an entry: an entry is complete before its directory gets its final name,
and every file is checked against the sizes and sha256 in ``meta.json`` when read. A bad entry is
a miss (one :class:`CacheWarning`), it is removed, and the caller's recompile replaces it.
An unsafe cache dir (another owner, group/other-writable) or a read-only one makes
:meth:`CacheStore.open` return None (one warning): calls then run uncached.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
import warnings
from typing import Iterator, Protocol

from ..records import record
from .keys import key_hash, normalise_key

try:                                   # a shared base class if errors.py grows one
    from kfuse.errors import KfuseWarning  # type: ignore[attr-defined]
except ImportError:                    # pragma: no cover - depends on errors.py
    class KfuseWarning(UserWarning):
        """Base class of warnings kfuse emits."""

NAMESPACES = ("kernels", "tuning", "host", "rendered")   # host: records about the machine (cpu_native.host_key);
# rendered: CUDA C sources by the kernel IR and variant they render (runtime.rendered), not kernels
META = "meta.json"
LAST_USED = "last_used"
RESERVED = (META, LAST_USED)
FORMAT = 1
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_HASH_RE = re.compile(r"^[0-9a-f]{64}$")
STALE_TMP_SECONDS = 3600.0


class CacheWarning(KfuseWarning):
    """The disk cache could not be used, or an entry was bad (the call still succeeds)."""


class RecompileWarning(KfuseWarning):
    """A function was recompiled more often than ``config.recompile_limit``."""


# One warning per (kind, subject) per process; tests call reset_warnings().
_WARNED: set = set()


def warn_once(kind: str, subject: str, message: str, category=CacheWarning) -> bool:
    if (kind, subject) in _WARNED:
        return False
    _WARNED.add((kind, subject))
    warnings.warn(message, category, stacklevel=3)
    return True


def reset_warnings() -> None:
    _WARNED.clear()


def get_config():
    """``kfuse.config.get()`` (imported by module path: ``kfuse.config`` may be shadowed)."""
    import importlib
    return importlib.import_module("kfuse.config").get()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class BadEntry(Exception):
    """An entry on disk that disagrees with its meta.json (the reason is the message)."""


@record
class Entry:
    """A verified entry: its folder, its meta, and the bytes of its files (already checked)."""
    path: str
    meta: dict
    files: dict

    @property
    def key_hash(self) -> str:
        return os.path.basename(self.path)

    def read(self, name: str) -> bytes:
        return self.files[name]


@record
class EntryInfo:
    """One folder found by :meth:`CacheStore.entries` (``error`` is None for a good entry)."""
    namespace: str
    key_hash: str
    path: str
    meta: dict | None
    size: int
    last_used: float
    error: str | None


def read_entry(path: str, expect_hash: str | None = None) -> Entry:
    """Read and verify the entry folder at ``path``; raise BadEntry (or FileNotFoundError)."""
    name = os.path.basename(path)
    if os.path.islink(path):
        raise BadEntry("entry is a symlink")
    try:
        with open(os.path.join(path, META), "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        if os.path.isdir(path):
            raise BadEntry("meta.json missing") from None
        raise
    try:
        meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BadEntry("meta.json is not valid JSON") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("files"), dict) \
            or not isinstance(meta.get("key"), dict):
        raise BadEntry("meta.json lacks key/files")
    if meta.get("format") != FORMAT:
        raise BadEntry(f"unknown entry format {meta.get('format')!r}")
    if key_hash(meta["key"]) != name or meta.get("key_hash") != name:
        raise BadEntry("folder name does not match the key hash")
    if expect_hash is not None and name != expect_hash:
        raise BadEntry("entry found under the wrong name")
    try:
        present = set(os.listdir(path))
    except NotADirectoryError:
        raise BadEntry("entry is not a directory") from None
    extra = present - set(meta["files"]) - set(RESERVED)
    if extra:
        raise BadEntry(f"unexpected files {sorted(extra)}")
    files = {}
    for fname, info in meta["files"].items():
        if not isinstance(info, dict):
            raise BadEntry(f"bad file info for {fname!r}")
        if not isinstance(fname, str) or not _NAME_RE.match(fname) or fname in RESERVED:
            raise BadEntry(f"bad file name {fname!r}")
        fpath = os.path.join(path, fname)
        if os.path.islink(fpath):
            raise BadEntry(f"{fname} is a symlink")
        try:
            with open(fpath, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise BadEntry(f"{fname} missing") from None
        if len(data) != info.get("size"):
            raise BadEntry(f"{fname}: size {len(data)} != {info.get('size')}")
        if _sha256(data) != info.get("sha256"):
            raise BadEntry(f"{fname}: sha256 mismatch")
        files[fname] = data
    return Entry(path, meta, files)


class KernelStore(Protocol):
    """The one interface through which every runtime stores compiled kernels (and the tuner its
    results): entries of files under a key dict, in a namespace. :class:`CacheStore` is it,
    :class:`LabelledStore` wraps it; the CPU runtime keeps Numba object code in it
    (``cpu_persist``), the GPU runtimes CUBINs and PTX (``gpu_store``). A runtime given None
    runs uncached."""

    def get(self, namespace: str, key_dict: dict) -> "Entry | None": ...

    def put(self, namespace: str, key_dict: dict, files: dict, meta: dict | None = None, *,
            replace: bool = False) -> "Entry | None": ...

    def remove(self, path: str) -> None: ...

    def get_tuning(self, kernel_key, shape_bucket, arch) -> dict | None: ...

    def put_tuning(self, kernel_key, shape_bucket, arch, config_dict: dict, timings=None,
                   meta: dict | None = None) -> "Entry | None": ...


class CacheStore:
    """The disk store rooted at one directory (a :class:`KernelStore`). Use :meth:`open`."""

    def __init__(self, root: str, max_bytes: int | None = None):
        self.root = root
        self.max_bytes = max_bytes
        self._puts_since_evict = 0

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, config=None, *, path: str | None = None) -> "CacheStore | None":
        """The store of ``config`` (default ``kfuse.config.get()``), or None (one warning)."""
        if config is None:
            config = get_config()
        if path is None:
            if not config.cache_enabled:
                return None
            path = config.cache_dir
        path = os.path.abspath(os.path.expanduser(path))
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                pass
            st = os.stat(path)
        except OSError as e:
            warn_once("open", path, f"kfuse cache dir {path!r} cannot be created ({e}); "
                      "running uncached")
            return None
        if not stat.S_ISDIR(st.st_mode):
            warn_once("open", path, f"kfuse cache dir {path!r} is not a directory; running uncached")
            return None
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            warn_once("open", path, f"kfuse cache dir {path!r} is owned by another user "
                      f"(uid {st.st_uid}); refusing it, running uncached")
            return None
        if st.st_mode & 0o022:
            warn_once("open", path, f"kfuse cache dir {path!r} is writable by group/others "
                      f"(mode {stat.S_IMODE(st.st_mode):o}); refusing it, running uncached "
                      "(chmod 700 it to use it)")
            return None
        if not (st.st_mode & stat.S_IWUSR) or not os.access(path, os.W_OK | os.X_OK):
            warn_once("open", path, f"kfuse cache dir {path!r} is read-only; running uncached")
            return None
        store = cls(path, getattr(config, "cache_max_bytes", None))
        try:
            for sub in NAMESPACES + ("tmp",):
                p = os.path.join(path, sub)
                try:
                    os.mkdir(p, 0o700)
                except FileExistsError:
                    if os.path.islink(p) or not os.path.isdir(p):
                        raise OSError(errno.ENOTDIR, f"{p} is not a directory")
        except OSError as e:
            warn_once("open", path, f"kfuse cache dir {path!r} is not usable ({e}); running uncached")
            return None
        return store

    # -- paths -----------------------------------------------------------------------------
    def _ns_dir(self, namespace: str) -> str:
        if namespace not in NAMESPACES:
            raise ValueError(f"unknown cache namespace {namespace!r}")
        return os.path.join(self.root, namespace)

    # -- reading ---------------------------------------------------------------------------
    def get(self, namespace: str, key_dict: dict) -> Entry | None:
        """The verified entry for ``key_dict``, or None. A bad entry warns once and is removed."""
        h = key_hash(key_dict)
        path = os.path.join(self._ns_dir(namespace), h)
        try:
            entry = read_entry(path, h)
        except FileNotFoundError:
            return None
        except BadEntry as e:
            warn_once("bad", path, f"kfuse cache: ignoring bad entry {namespace}/{h[:16]} ({e}); "
                      "recompiling")
            self.remove(path)
            return None
        except OSError as e:
            warn_once("read", path, f"kfuse cache: cannot read {path} ({e}); recompiling")
            return None
        if entry.meta["key"] != normalise_key(key_dict):      # a sha256 collision: never
            return None
        self.touch(path)
        return entry

    def has(self, namespace: str, key_dict: dict) -> bool:
        """Whether an entry for ``key_dict`` exists (not read nor verified: :meth:`get` may
        still find it bad)."""
        return os.path.isdir(os.path.join(self._ns_dir(namespace), key_hash(key_dict)))

    def touch(self, path: str) -> None:
        """Mark an entry used now (one utime; the LRU clock)."""
        lu = os.path.join(path, LAST_USED)
        try:
            os.utime(lu)
        except FileNotFoundError:
            try:
                with open(lu, "ab"):
                    pass
            except OSError:
                pass
        except OSError:
            pass

    # -- writing ---------------------------------------------------------------------------
    def put(self, namespace: str, key_dict: dict, files: dict, meta: dict | None = None, *,
            replace: bool = False) -> Entry | None:
        """Publish an entry atomically; return the entry now on disk (ours, or the winner's).

        ``files``: name -> bytes (simple names; not ``meta.json``/``last_used``);
        ``meta``: extra fields (function, kind, backend, arch, versions, ...).
        With ``replace`` an existing entry is swapped out (tuning results: latest wins).
        Returns None when the store could not be written (one warning).
        """
        key = normalise_key(key_dict)
        h = key_hash(key)
        final = os.path.join(self._ns_dir(namespace), h)
        for name, data in files.items():
            if not isinstance(name, str) or not _NAME_RE.match(name) or name in RESERVED:
                raise ValueError(f"bad cache file name {name!r}")
            if not isinstance(data, (bytes, bytearray)):
                raise TypeError(f"cache file {name!r} must be bytes")
        now = time.time()
        full_meta = dict(meta or {})
        full_meta.update({
            "format": FORMAT, "namespace": namespace, "key": key, "key_hash": h,
            "created": full_meta.get("created", now),
            "files": {n: {"size": len(d), "sha256": _sha256(bytes(d))} for n, d in files.items()},
        })
        try:
            tmp = tempfile.mkdtemp(prefix=h[:16] + ".", dir=os.path.join(self.root, "tmp"))
        except OSError as e:
            warn_once("write", self.root, f"kfuse cache: cannot write to {self.root} ({e}); "
                      "running uncached")
            return None
        try:
            for name, data in files.items():
                with open(os.path.join(tmp, name), "wb") as f:
                    f.write(data)
            with open(os.path.join(tmp, META), "w", encoding="utf-8") as f:
                json.dump(full_meta, f, sort_keys=True, indent=1)
            with open(os.path.join(tmp, LAST_USED), "wb"):
                pass
            os.chmod(tmp, 0o700)
            winner = None
            for attempt in range(3):
                if replace and os.path.exists(final):
                    self.remove(final)
                try:
                    os.rename(tmp, final)
                    tmp = None
                    break
                except OSError as e:
                    if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                        raise
                    if replace:
                        continue
                    # another writer won: keep theirs if it is good
                    try:
                        winner = read_entry(final, h)
                        break
                    except FileNotFoundError:
                        continue
                    except BadEntry:
                        self.remove(final)
                        continue
        except OSError as e:
            warn_once("write", self.root, f"kfuse cache: cannot write entry to {self.root} ({e}); "
                      "running uncached")
            return None
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
        if tmp is not None:          # not published: someone else's entry stands (or none)
            return winner
        self._after_put()
        return Entry(final, full_meta, {n: bytes(d) for n, d in files.items()})

    def remove(self, path: str) -> None:
        """Remove an entry folder: rename it away first (readers see it whole or not at all)."""
        trash = os.path.join(self.root, "tmp", "trash." + os.path.basename(path) + "."
                             + os.urandom(6).hex())
        try:
            os.rename(path, trash)
        except OSError:
            return
        shutil.rmtree(trash, ignore_errors=True)

    # -- listing, eviction -----------------------------------------------------------------
    def entries(self, namespace: str | None = None, verify: bool = False) -> Iterator[EntryInfo]:
        """Every entry folder (``verify``: check file hashes too, else only meta.json)."""
        for ns in ([namespace] if namespace else NAMESPACES):
            d = self._ns_dir(ns)
            try:
                names = sorted(os.listdir(d))
            except OSError:
                continue
            for name in names:
                path = os.path.join(d, name)
                size, last = _dir_size_and_last_used(path)
                meta, err = None, None
                if not _HASH_RE.match(name):
                    err = "not an entry folder name"
                else:
                    try:
                        if verify:
                            meta = read_entry(path, name).meta
                        else:
                            with open(os.path.join(path, META), "rb") as f:
                                meta = json.loads(f.read().decode("utf-8"))
                            if not isinstance(meta, dict):
                                raise BadEntry("meta.json is not an object")
                    except FileNotFoundError:
                        if not os.path.lexists(path):
                            continue
                        err = "meta.json missing"
                    except (BadEntry, ValueError, UnicodeDecodeError, OSError) as e:
                        err = str(e) or type(e).__name__
                yield EntryInfo(ns, name, path, meta, size, last, err)

    def stale_tmp(self, older_than: float = STALE_TMP_SECONDS) -> list[str]:
        """Temp dirs left by writers that died (older than ``older_than`` seconds)."""
        d = os.path.join(self.root, "tmp")
        out = []
        try:
            for name in os.listdir(d):
                p = os.path.join(d, name)
                try:
                    if time.time() - os.lstat(p).st_mtime > older_than:
                        out.append(p)
                except OSError:
                    pass
        except OSError:
            pass
        return out

    def total_bytes(self) -> int:
        return sum(e.size for e in self.entries())

    def _after_put(self) -> None:
        if self.max_bytes:
            self.evict()

    def evict(self, max_bytes: int | None = None) -> list[str]:
        """Remove least-recently-used entries until the store holds at most ``max_bytes``."""
        cap = self.max_bytes if max_bytes is None else max_bytes
        if cap is None:
            return []
        infos = []
        for ns in NAMESPACES:
            d = self._ns_dir(ns)
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for name in names:
                p = os.path.join(d, name)
                size, last = _dir_size_and_last_used(p)
                infos.append((last, size, p))
        total = sum(s for _, s, _ in infos)
        removed = []
        for last, size, p in sorted(infos):
            if total <= cap:
                break
            self.remove(p)
            total -= size
            removed.append(p)
        for p in self.stale_tmp():
            shutil.rmtree(p, ignore_errors=True)
        return removed

    # -- tuning namespace ------------------------------------------------------------------
    def put_tuning(self, kernel_key, shape_bucket, arch, config_dict: dict, timings=None,
                   meta: dict | None = None) -> Entry | None:
        """Store the best config for (kernel, shape bucket, arch); a newer result replaces it."""
        from .keys import tuning_key
        key = tuning_key(kernel_key, shape_bucket, arch)
        body = json.dumps({"config": config_dict, "timings": timings}, sort_keys=True,
                          default=_json_default).encode()
        m = {"kind": "tuning", "arch": arch, **(meta or {})}
        return self.put("tuning", key, {"tuning.json": body}, m, replace=True)

    def get_tuning(self, kernel_key, shape_bucket, arch) -> dict | None:
        """``{"config": ..., "timings": ...}`` stored for (kernel, shape bucket, arch), or None."""
        from .keys import tuning_key
        e = self.get("tuning", tuning_key(kernel_key, shape_bucket, arch))
        if e is None:
            return None
        try:
            return json.loads(e.read("tuning.json").decode())
        except (KeyError, ValueError, UnicodeDecodeError):
            warn_once("bad", e.path, f"kfuse cache: bad tuning entry {e.key_hash[:16]}")
            self.remove(e.path)
            return None


def _json_default(o):
    from .keys import _norm
    return _norm(o)


def _dir_size_and_last_used(path: str) -> tuple[int, float]:
    size, last = 0, 0.0
    try:
        with os.scandir(path) as it:
            for de in it:
                try:
                    st = de.stat(follow_symlinks=False)
                except OSError:
                    continue
                size += st.st_size
                if de.name == LAST_USED:
                    last = st.st_mtime
                elif de.name == META and not last:
                    last = st.st_mtime
    except OSError:
        pass
    return size, last


# ---------------------------------------------------------------------------------------------
# what an entry was made for
# ---------------------------------------------------------------------------------------------
_KERNEL_KIND_RE = re.compile(rb"kfuse (?:CPU kernel \(([\w-]+)\)|(?:Numba-CUDA )?kernel \w+ \[([\w-]+)\])")


def kernel_kind(files: dict) -> str | None:
    """The kernel kind (elementwise, reduce, scan, ...) a generated source names in its header."""
    for name in ("kernel.py", "kernel.cu"):
        m = _KERNEL_KIND_RE.search(files.get(name, b"")[:65536])
        if m:
            return (m.group(1) or m.group(2)).decode()
    return None


class LabelledStore:
    """A :class:`CacheStore` whose new kernel entries name what they were compiled for: the user's
    function (``module:qualname``), its argument signature and the device planned for (``labels``),
    and the kernel kind read from the source. Everything else is the store's own."""

    def __init__(self, store: "CacheStore", labels: dict):
        self.store = store
        self.labels = dict(labels)

    def get(self, namespace: str, key_dict: dict) -> Entry | None:
        return self.store.get(namespace, key_dict)

    def put(self, namespace: str, key_dict: dict, files: dict, meta: dict | None = None, **kw):
        meta = {**(meta or {}), **self.labels}
        if namespace == "kernels" and "kernel_kind" not in meta:
            kind = kernel_kind(files)
            if kind:
                meta["kernel_kind"] = kind
        return self.store.put(namespace, key_dict, files, meta, **kw)

    def remove(self, path: str) -> None:
        self.store.remove(path)

    def get_tuning(self, kernel_key, shape_bucket, arch) -> dict | None:
        return self.store.get_tuning(kernel_key, shape_bucket, arch)

    def put_tuning(self, kernel_key, shape_bucket, arch, config_dict: dict, timings=None,
                   meta: dict | None = None) -> Entry | None:
        return self.store.put_tuning(kernel_key, shape_bucket, arch, config_dict, timings, meta)

    def __getattr__(self, name):
        return getattr(self.store, name)


# ---------------------------------------------------------------------------------------------
# recompile policy
# ---------------------------------------------------------------------------------------------
class RecompileCounter:
    """Counts compiles per function; past ``limit`` phrases, once, the warning naming the unstable
    argument (the caller issues it, so that it is issued once and points at the user's line).

    ``record(fn_name, arg_sigs, arg_names=None)``: ``arg_sigs`` is one hashable signature tuple
    per argument (e.g. ``("array", "float32", 2, (False, True))``: dtype, rank, broadcast
    pattern). Returns the warning text the first time the limit is passed, else None.
    """

    def __init__(self, limit: int | None = None):
        if limit is None:
            limit = get_config().recompile_limit
        self.limit = limit
        self._seen: dict[str, list[tuple]] = {}
        self._warned: set[str] = set()

    def count(self, fn_name: str) -> int:
        return len(self._seen.get(fn_name, ()))

    def record(self, fn_name: str, arg_sigs, arg_names=None) -> str | None:
        hist = self._seen.setdefault(fn_name, [])
        hist.append(tuple(arg_sigs))
        if len(hist) <= self.limit or fn_name in self._warned:
            return None
        self._warned.add(fn_name)
        nargs = max(len(s) for s in hist)
        best, best_n, static = None, 1, False
        for i in range(nargs):
            n = len({s[i] if i < len(s) else None for s in hist})
            if n > best_n:
                best, best_n = i, n
        if best is None:
            what = "the arguments' signatures did not change (static arguments?)"
        else:
            name = arg_names[best] if arg_names and best < len(arg_names) else f"#{best}"
            vals = []
            for s in hist:
                v = s[best] if best < len(s) else None
                if v not in vals:
                    vals.append(v)
            static = all(isinstance(v, tuple) and v[:1] == ("static",) for v in vals)
            what = (f"argument {name!r} keeps changing "
                    f"{'value (a static argument: each value compiles once)' if static else 'dtype/rank/broadcast pattern'}"
                    f" ({best_n} variants, e.g. {', '.join(map(str, vals[:3]))})")
        advice = ("pass the same object each call (a function or lambda made once, outside the loop)"
                  if best is not None and static else
                  "pass arguments of stable dtype and rank, or cast them before the call")
        return f"kfuse: {fn_name} was compiled {len(hist)} times (limit {self.limit}): {what}; {advice}"
