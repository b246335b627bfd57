"""``kfuse bench``: run the public suite and write the table, JSON, roofline plot and RESULTS.md.

    kfuse bench [--suite public|corpus] [--device gpu|cpu|auto] [--json out.json] [--markdown out.md]
                [--plot roofline.png] [--results benchmarks/RESULTS.md] [--quick]
                [--peers numpy,kfuse] [--workloads P1,P3] [--budget SECONDS] [--tune]
    kfuse bench --suite corpus [--device cpu|gpu] [--filter SUBSTR,...] [--shard K/N] [--quick]
                [--numba-cuda] [--size gpu|cpu|tiny] [--list] [--json OUT] [--markdown OUT]

Also runnable as ``python3 -m kfuse.bench.cli``. ``kfuse.cli`` delegates ``bench`` to :func:`main`.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile


def build_parser(prog: str = "kfuse bench") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="Benchmark kfuse against its peers (NumPy, CuPy, cupy.fuse, torch, torch.compile, jax.jit).")
    ap.add_argument("--suite", default="public", choices=("public", "corpus"),
                    help="public: P1..P6; corpus: the real-workload corpus (kfuse/bench/corpus)")
    ap.add_argument("--device", default="auto", choices=("auto", "gpu", "cpu"))
    ap.add_argument("--json", metavar="OUT.json")
    ap.add_argument("--markdown", metavar="OUT.md")
    ap.add_argument("--plot", metavar="ROOFLINE.png")
    ap.add_argument("--results", metavar="RESULTS.md",
                    help="update this device's section of a RESULTS.md (plot defaults beside it)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes and few runs (smoke test)")
    ap.add_argument("--peers", help="comma list of peers to run (numpy, cupy, cupy.fuse, torch, "
                                    "torch.compile, jax.jit, kfuse, or a full name like kfuse[cuda])")
    ap.add_argument("--workloads", help="comma list of workloads (P1..P6)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds; past 70%% slow-compiling peers are skipped, past 100%% all "
                         "(default: 420 on the GPU, none on the CPU)")
    ap.add_argument("--dispatch", default="P1,P3",
                    help="workloads whose hot dispatch overhead is measured ('all' for every one)")
    ap.add_argument("--no-warm", action="store_true", help="skip the warm disk load (new process)")
    ap.add_argument("--tune", action="store_true", help="add kfuse rows with autotune='on'")
    ap.add_argument("--cache-dir", help="kfuse cache dir to use (default: a fresh temporary one, so "
                                        "compile times are cold)")
    ap.add_argument("--no-progress", action="store_true")
    g = ap.add_argument_group("corpus (--suite corpus)")
    g.add_argument("--filter", help="comma list of substrings of entry names, categories or tags")
    g.add_argument("--shard", metavar="K/N", help="run the K-th of N round-robin shards of the entries")
    g.add_argument("--numba-cuda", action="store_true", help="add kfuse[numba-cuda] rows (GPU)")
    g.add_argument("--size", choices=("gpu", "cpu", "tiny"), help="size class (default: the device's)")
    g.add_argument("--list", action="store_true", help="list the selected entries and their sizes; run nothing")
    return ap


def _resolve_device(choice: str) -> str:
    if choice != "auto":
        return choice
    from .suite import gpu_present
    return "gpu" if gpu_present() else "cpu"


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    # Environment knobs must be set before kfuse / jax read them.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")   # JAX must share the GPU
    tmp = None
    if args.cache_dir:
        os.environ["KFUSE_CACHE_DIR"] = args.cache_dir
    else:
        tmp = tempfile.TemporaryDirectory(prefix="kfuse-bench-cache-")
        os.environ["KFUSE_CACHE_DIR"] = tmp.name
    try:
        import kfuse.config
        kfuse.config.reload()
    except Exception:
        pass
    device = _resolve_device(args.device)
    if args.suite == "corpus":
        return _corpus(args, device, tmp)
    if device == "gpu":
        from .suite import gpu_present
        if not gpu_present():
            print("kfuse bench: --device gpu but no GPU is visible (CuPy / PyTorch see none)", file=sys.stderr)
            return 2
    budget = args.budget if args.budget is not None else (420.0 if device == "gpu" and not args.quick else None)
    from . import report
    from .suite import run_suite
    workloads = [w.strip().upper() for w in args.workloads.split(",")] if args.workloads else None
    try:
        result = run_suite(device, quick=args.quick, peers=args.peers, workloads=workloads,
                           budget_s=budget, dispatch=args.dispatch, warm=not args.no_warm,
                           tune=args.tune, progress=not args.no_progress)
    finally:
        _cleanup(tmp)
    plot = args.plot
    if plot is None and args.results:
        plot = os.path.join(os.path.dirname(os.path.abspath(args.results)), f"roofline_{device}.png")
    if plot:
        try:
            report.write_roofline(result, plot)
        except Exception as e:  # matplotlib missing: the rest still gets written
            print(f"kfuse bench: roofline plot not written: {type(e).__name__}: {e}", file=sys.stderr)
            plot = None
    if args.json:
        report.write_json(result, args.json)
    if args.markdown:
        report.write_markdown(result, args.markdown, plot)
    if args.results:
        report.update_results(result, args.results, plot)
    print(report.markdown(result, plot))
    ok = any(r.get("ok") for r in result["rows"])
    return 0 if ok else 1


def _cleanup(tmp) -> None:
    """Remove the temporary cache once the native objects still being linked into it
    (``runtime/cpu_native_build``'s threads) are written: removing it under them fails."""
    if tmp is None:
        return
    native = sys.modules.get("kfuse.runtime.cpu_native_build")
    if native is not None:
        native.wait()
    tmp.cleanup()


def _corpus(args, device: str, tmp) -> int:
    """``--suite corpus``: list (``--list``, a dry run: no GPU needed) or run, then write JSON/markdown."""
    from . import corpus_report
    from .corpus import cases
    try:
        if args.list:
            for c in cases(args.size or device, args.filter, args.shard):
                e = c.entry
                print(f"{e.name:32} {e.category:12} {c.nbytes / 2**20:9.2f} MiB  {str(c)[len(e.name) + 1:]}"
                      f"{'  [' + e.only + ']' if e.only else ''}")
            return 0
        if device == "gpu":
            from .suite import gpu_present
            if not gpu_present():
                print("kfuse bench: --device gpu but no GPU is visible (CuPy / PyTorch see none)", file=sys.stderr)
                return 2
        from .corpus_suite import run_from_args
        args.device = device
        result = run_from_args(args)
    finally:
        _cleanup(tmp)
    if args.json:
        corpus_report.write_json(result, args.json)
    if args.markdown:
        corpus_report.write_markdown(result, args.markdown)
    print(corpus_report.markdown(result))
    return 0 if any(r.get("ok") for r in result["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
