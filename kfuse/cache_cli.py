"""``kfuse cache``: list, show, verify, clear, export and import the disk store.

``add_subparser(subparsers)`` registers the ``cache`` command on the main parser's subparsers;
``run(args) -> int`` executes it (0 = fine, 1 = bad entries found / rejected, 2 = usage error).
Export/import use ``.tar.gz`` files holding ``kernels/<hash>/...`` and ``tuning/<hash>/...``;
import reads members itself (never ``extractall``), rejects links, devices, absolute paths and
``..``, verifies every entry against its meta.json and key hash, then publishes it atomically.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import tarfile
import time

from .logs import fmt_bytes
from .runtime.cache import (get_config, META, LAST_USED, NAMESPACES, BadEntry, CacheStore, _NAME_RE,
                            _HASH_RE, read_entry)
from .runtime.keys import key_hash

MAX_IMPORT_FILE = 256 << 20
_MEMBER_RE = re.compile(r"^(kernels|tuning)/([0-9a-f]{64})/([A-Za-z0-9][A-Za-z0-9._-]{0,127})$")


def add_subparser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("cache", help="inspect and manage the kernel cache",
                              description="Inspect and manage the kfuse kernel cache.")
    p.add_argument("--cache-dir", default=None, help="cache directory (default: KFUSE_CACHE_DIR)")
    sub = p.add_subparsers(dest="cache_cmd", metavar="COMMAND")
    sub.required = True
    q = sub.add_parser("ls", help="list entries: function, signature, backend, device, kernel kind")
    q.add_argument("--tuning", action="store_true", help="list tuning results instead")
    q.add_argument("--function", default=None, metavar="NAME",
                   help="only this function's entries (its name, module:name, or a dotted qualname)")
    q = sub.add_parser("show", help="meta and file paths of one entry")
    q.add_argument("key", help="key hash or a unique prefix")
    sub.add_parser("stats", help="entries, bytes, by backend")
    q = sub.add_parser("verify", help="check every entry (exit 1 if any is bad)")
    q.add_argument("--fix", action="store_true", help="remove bad entries and stale temp dirs")
    q = sub.add_parser("clear", help="remove entries")
    q.add_argument("--older-than", default=None, metavar="AGE",
                   help="only entries not used for AGE (e.g. 30d, 12h, 45m, 2w)")
    q.add_argument("--function", default=None, metavar="NAME", help="only this function's entries")
    q.add_argument("--tuning", action="store_true", help="only tuning results")
    q = sub.add_parser("export", help="write entries to FILE.tar.gz")
    q.add_argument("file")
    q = sub.add_parser("import", help="verify and add entries from FILE.tar.gz")
    q.add_argument("file")
    p.set_defaults(func=run)
    return p


def parse_age(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text or "")
    if not m:
        raise ValueError(f"bad age {text!r} (use e.g. 30d, 12h, 45m, 90s, 2w)")
    mult = {"": 86400, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}[m.group(2)]
    return float(m.group(1)) * mult


def _fmt_time(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "-"


def _table(rows, header, out):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip(), file=out)


def _open(args, out) -> CacheStore | None:
    cfg = get_config()
    path = getattr(args, "cache_dir", None) or cfg.cache_dir
    store = CacheStore.open(cfg, path=path)
    if store is None:
        print(f"kfuse cache: cannot use cache dir {path}", file=sys.stderr)
    return store


def run(args, out=None) -> int:
    """Execute a parsed ``kfuse cache ...`` command; returns the exit status."""
    out = out or sys.stdout
    cmd = getattr(args, "cache_cmd", None)
    store = _open(args, out)
    if store is None:
        return 2
    try:
        return _COMMANDS[cmd](store, args, out)
    except ValueError as e:
        print(f"kfuse cache {cmd}: {e}", file=sys.stderr)
        return 2


def _ls(store, args, out):
    if args.tuning:
        rows = []
        for e in store.entries("tuning"):
            m = e.meta or {}
            k = m.get("key", {})
            cfg = "-"
            try:
                body = json.loads(open(os.path.join(e.path, "tuning.json"), "rb").read())
                cfg = json.dumps(body.get("config"), sort_keys=True)
            except (OSError, ValueError):
                pass
            rows.append([e.key_hash[:16], str(k.get("kernel", "?"))[:16], m.get("function", "-"),
                         "x".join(map(str, k.get("shape_bucket", []))) or "-", k.get("arch", "-"),
                         cfg, _fmt_time(e.last_used)] if not e.error else
                        [e.key_hash[:16], "BAD", e.error, "", "", "", ""])
        _table(rows, ["key", "kernel", "function", "bucket", "arch", "config", "last used"], out)
        return 0
    rows = []
    for e in store.entries("kernels"):
        m = e.meta or {}
        if e.error:
            if args.function is None:
                rows.append([e.key_hash[:16], "BAD: " + e.error] + [""] * 5 + [fmt_bytes(e.size), ""])
            continue
        if not _function_matches(m, args.function):
            continue
        rows.append([e.key_hash[:16], m.get("function", "-"), _signature(m), m.get("backend", "-"),
                     m.get("device", "-"), m.get("kernel_kind", "-"), str(m.get("arch", "-")),
                     fmt_bytes(e.size), _fmt_time(e.last_used)])
    _table(rows, ["key", "function", "signature", "backend", "device", "kind", "arch", "size",
                  "last used"], out)
    return 0


def _function_matches(meta: dict, name: str | None) -> bool:
    """Whether an entry's ``function`` (``module:qualname``) is ``name``: the whole of it, its
    qualname, or the qualname's last part."""
    if name is None:
        return True
    fn = str(meta.get("function", ""))
    qualname = fn.rpartition(":")[2]
    return name in (fn, qualname, qualname.rpartition(".")[2])


def _signature(meta: dict) -> str:
    sig = meta.get("signature", "-")
    return ", ".join(map(str, sig)) if isinstance(sig, list) else str(sig)


def _find(store, prefix):
    prefix = prefix.strip().lower()
    hits = [e for e in store.entries() if e.key_hash.startswith(prefix)]
    if not prefix or not hits:
        raise ValueError(f"no entry matches {prefix!r}")
    if len(hits) > 1:
        raise ValueError(f"{prefix!r} matches {len(hits)} entries; give more digits")
    return hits[0]


def _show(store, args, out):
    e = _find(store, args.key)
    print(f"entry:     {e.namespace}/{e.key_hash}", file=out)
    print(f"path:      {e.path}", file=out)
    print(f"size:      {fmt_bytes(e.size)}", file=out)
    print(f"last used: {_fmt_time(e.last_used)}", file=out)
    if e.error:
        print(f"BAD:       {e.error}", file=out)
    if e.meta:
        for name in sorted(e.meta.get("files", {})):
            print(f"file:      {os.path.join(e.path, name)}", file=out)
        print("meta:", file=out)
        print(json.dumps(e.meta, indent=2, sort_keys=True), file=out)
    return 1 if e.error else 0


def _stats(store, args, out):
    by_ns, by_backend = {}, {}
    total = n = 0
    for e in store.entries():
        n += 1
        total += e.size
        c = by_ns.setdefault(e.namespace, [0, 0])
        c[0] += 1
        c[1] += e.size
        if e.namespace == "kernels":
            b = (e.meta or {}).get("backend", "?") if not e.error else "bad"
            c = by_backend.setdefault(b, [0, 0])
            c[0] += 1
            c[1] += e.size
    print(f"cache dir: {store.root}", file=out)
    print(f"entries:   {n}", file=out)
    print(f"bytes:     {total} ({fmt_bytes(total)})", file=out)
    if store.max_bytes:
        print(f"cap:       {store.max_bytes} ({fmt_bytes(store.max_bytes)})", file=out)
    for ns in NAMESPACES:
        c = by_ns.get(ns, [0, 0])
        print(f"  {ns:<9} {c[0]:>6} entries  {fmt_bytes(c[1])}", file=out)
    for b, c in sorted(by_backend.items()):
        print(f"  backend {b:<8} {c[0]:>6} entries  {fmt_bytes(c[1])}", file=out)
    return 0


def _verify(store, args, out):
    bad = 0
    good = 0
    for e in store.entries(verify=True):
        if e.error:
            bad += 1
            print(f"BAD {e.namespace}/{e.key_hash}: {e.error}", file=out)
            if args.fix:
                store.remove(e.path)
        else:
            good += 1
    stale = store.stale_tmp()
    if stale:
        print(f"{len(stale)} stale temp dir(s) from interrupted writers", file=out)
        if args.fix:
            import shutil
            for p in stale:
                shutil.rmtree(p, ignore_errors=True)
    print(f"{good} good, {bad} bad" + (" (removed)" if bad and args.fix else ""), file=out)
    return 1 if bad else 0


def _clear(store, args, out):
    age = parse_age(args.older_than) if args.older_than else None
    now = time.time()
    n = 0
    for e in store.entries("tuning" if args.tuning else None):
        if age is not None and now - e.last_used < age:
            continue
        if args.function is not None and not _function_matches(e.meta or {}, args.function):
            continue
        store.remove(e.path)
        n += 1
    print(f"removed {n} entries", file=out)
    return 0


def _export(store, args, out):
    n = 0
    with tarfile.open(args.file, "w:gz") as tar:
        for e in store.entries(verify=True):
            if e.error:
                print(f"skipping bad entry {e.namespace}/{e.key_hash}: {e.error}", file=out)
                continue
            for name in [META] + sorted(e.meta["files"]):
                with open(os.path.join(e.path, name), "rb") as f:
                    data = f.read()
                info = tarfile.TarInfo(f"{e.namespace}/{e.key_hash}/{name}")
                info.size = len(data)
                info.mode = 0o600
                info.mtime = int(e.last_used or now_())
                tar.addfile(info, io.BytesIO(data))
            n += 1
    print(f"exported {n} entries to {args.file}", file=out)
    return 0


def now_() -> float:
    return time.time()


def _import(store, args, out):
    entries: dict[tuple[str, str], dict[str, bytes]] = {}
    try:
        tar = tarfile.open(args.file, "r:gz")
    except (OSError, tarfile.TarError) as e:
        raise ValueError(f"cannot read {args.file}: {e}") from None
    with tar:
        members = tar.getmembers()
        for m in members:                         # check everything before using anything
            name = m.name
            if m.isdir():
                parts = name.rstrip("/").split("/")
                if name.startswith("/") or ".." in parts or not (
                        parts[0] in NAMESPACES and len(parts) <= 2
                        and (len(parts) == 1 or _HASH_RE.match(parts[1]))):
                    print(f"rejected {args.file}: unsafe member {name!r}", file=out)
                    return 1
                continue
            if not m.isreg():
                print(f"rejected {args.file}: member {name!r} is not a regular file "
                      "(links/devices are refused)", file=out)
                return 1
            mm = _MEMBER_RE.match(name)
            if not mm or name.startswith("/") or ".." in name.split("/"):
                print(f"rejected {args.file}: unsafe member path {name!r}", file=out)
                return 1
            if m.size > MAX_IMPORT_FILE:
                print(f"rejected {args.file}: member {name!r} too large", file=out)
                return 1
        for m in members:
            if not m.isreg():
                continue
            ns, h, fname = _MEMBER_RE.match(m.name).groups()
            f = tar.extractfile(m)
            entries.setdefault((ns, h), {})[fname] = f.read() if f else b""
    ok = bad = 0
    for (ns, h), files in sorted(entries.items()):
        err = _check_import(h, files)
        if err:
            bad += 1
            print(f"BAD {ns}/{h}: {err} (not imported)", file=out)
            continue
        meta = json.loads(files.pop(META).decode())
        files.pop(LAST_USED, None)
        keep = {k: v for k, v in meta.items()
                if k not in ("format", "namespace", "key", "key_hash", "files")}
        keep["imported"] = time.time()
        if store.put(ns, meta["key"], files, keep) is None:
            bad += 1
            continue
        ok += 1
    print(f"imported {ok} entries" + (f", {bad} bad" if bad else ""), file=out)
    return 1 if bad else 0


def _check_import(h: str, files: dict) -> str | None:
    import hashlib
    if META not in files:
        return "meta.json missing"
    try:
        meta = json.loads(files[META].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return "meta.json is not valid JSON"
    if not isinstance(meta, dict) or not isinstance(meta.get("key"), dict) \
            or not isinstance(meta.get("files"), dict):
        return "meta.json lacks key/files"
    if key_hash(meta["key"]) != h or meta.get("key_hash") != h:
        return "key hash does not match"
    listed = set(meta["files"])
    present = set(files) - {META, LAST_USED}
    if listed != present:
        return f"files {sorted(present ^ listed)} disagree with meta.json"
    for name, info in meta["files"].items():
        if not _NAME_RE.match(name) or not isinstance(info, dict):
            return f"bad file entry {name!r}"
        data = files[name]
        if len(data) != info.get("size") or hashlib.sha256(data).hexdigest() != info.get("sha256"):
            return f"{name} disagrees with its size/sha256"
    return None


_COMMANDS = {"ls": _ls, "show": _show, "stats": _stats, "verify": _verify, "clear": _clear,
             "export": _export, "import": _import}

__all__ = ["add_subparser", "run", "parse_age", "BadEntry", "read_entry"]
