"""``kfuse fuzz``: generate N seeded programs, run each through kfuse and NumPy, shrink and write
every failure, and print ``programs N, mismatches M, crashes C, unsupported U (ops...)``.

Program ``i`` of seed ``S`` is reproducible on its own: ``--seed S --start i --n 1`` (with the
same ``--kind``: ``--kind scatter`` draws that kind of step about half the time, another run).
Run as ``python3 -m kfuse.fuzz.cli`` (``kfuse fuzz`` delegates to :func:`main`).

``--jobs J`` runs the programs in J worker processes (spawned; each worker builds program ``i``
from the same seed, so it is the program a serial run has): the index range is cut into chunks
that idle workers take in turn, every worker shrinks and writes its own failures, and the
summaries are added up. A worker that dies (a segfault, a lost GPU context) turns the programs of
its unfinished chunks into crashes with the command that re-runs them.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import sys
import time

from .gen_complex import generate
from .generator import KINDS
from .runner import Result, run_program
from .shrink import renumber, shrink
from .writer import write


@dataclasses.dataclass
class Summary:
    programs: int = 0
    mismatches: int = 0
    crashes: int = 0
    unsupported: int = 0
    unsupported_ops: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    failures: list = dataclasses.field(default_factory=list)   # (index, Result, path or None)
    seconds: float = 0.0
    not_run: list = dataclasses.field(default_factory=list)    # ranges left out at the time limit

    def add(self, other: "Summary") -> None:
        """Add another (disjoint) part of the run to this summary."""
        self.programs += other.programs
        self.mismatches += other.mismatches
        self.crashes += other.crashes
        self.unsupported += other.unsupported
        self.unsupported_ops.update(other.unsupported_ops)
        self.failures.extend(other.failures)
        self.not_run.extend(other.not_run)

    def line(self) -> str:
        ops = ", ".join(f"{op} x{n}" for op, n in
                        sorted(self.unsupported_ops.items(), key=lambda kv: (-kv[1], kv[0])))
        return (f"programs {self.programs}, mismatches {self.mismatches}, crashes {self.crashes}, "
                f"unsupported {self.unsupported} ({ops})")


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fuzz(n: int, seed: int, backend: str = "cpu", out: str | None = None, start: int = 0,
         max_steps: int = 5, do_shrink: bool = True, verbose: bool = False,
         log=None, jobs: int = 1, time_limit: float | None = None,
         program_timeout: float | None = 180.0, favor: str | None = None,
         dtypes: str = "default") -> Summary:
    """Run programs ``start .. start+n-1`` of ``seed``; shrink and write failures under ``out``.
    ``jobs > 1`` spreads them over that many worker processes (same programs, same summary).
    ``time_limit`` (seconds): no program starts after it; the ones left out are in ``not_run``.
    ``program_timeout`` (``jobs > 1``): a program run longer than this is a crash (hung kernel).
    ``favor``: a kind of step (``generator.KINDS``) drawn about half the time; ``dtypes``:
    ``"complex"`` for the complex programs (``gen_complex``)."""
    deadline = time.time() + time_limit if time_limit else None
    if jobs > 1 and n > 1:
        return _fuzz_parallel(n, seed, backend, out, start, max_steps, do_shrink, verbose,
                              log or _log, jobs, deadline, program_timeout, favor, dtypes)
    return _fuzz_indices(range(start, start + n), seed, backend, out, max_steps, do_shrink,
                         verbose, log, deadline, favor=favor, dtypes=dtypes)


class _Watchdog:
    """In a worker: one program run (``run_program``) that passes ``timeout`` seconds (a hung
    kernel never returns), or one program's generation that does (NumPy's own loops can hang on
    a drawn operand), is recorded in ``hang_dir`` and the worker exits; the parent reports that
    program as a crash and runs the rest again in fresh workers."""

    def __init__(self, timeout: float | None, hang_dir: str | None):
        self.timeout, self.hang_dir = timeout, hang_dir

    def run(self, program, backend: str) -> Result:
        return self._guard(program.index, lambda: run_program(program, backend))

    def generate(self, seed: int, index: int, max_steps: int, favor: str | None, dtypes: str = "default"):
        return self._guard(index, lambda: generate(seed, index, max_steps, favor, dtypes))

    def _guard(self, index: int, fn):
        if not self.timeout:
            return fn()
        import threading

        def fire():
            if self.hang_dir:
                with open(os.path.join(self.hang_dir, str(index)), "w") as f:
                    f.write(str(self.timeout))
            _log(f"[{index}] crash: ran past {self.timeout:.0f} s (a hung kernel?); worker exits")
            os._exit(70)
        t = threading.Timer(self.timeout, fire)
        t.daemon = True
        t.start()
        try:
            return fn()
        finally:
            t.cancel()


def _fuzz_indices(indices, seed: int, backend: str, out: str | None, max_steps: int,
                  do_shrink: bool, verbose: bool, log=None, deadline: float | None = None,
                  watchdog: _Watchdog | None = None, favor: str | None = None,
                  dtypes: str = "default") -> Summary:
    log = log or _log
    watchdog = watchdog or _Watchdog(None, None)
    run = watchdog.run
    indices = list(indices)
    s = Summary()
    t0 = time.time()
    n = len(indices)
    for k, i in enumerate(indices):
        if deadline is not None and time.time() > deadline:
            s.not_run.append(indices[k:])
            break
        p = watchdog.generate(seed, i, max_steps, favor, dtypes)
        r = run(p, backend)
        s.programs += 1
        if r.status == "unsupported":
            s.unsupported += 1
            s.unsupported_ops[r.op] += 1
        elif r.failed:
            if r.status == "mismatch":
                s.mismatches += 1
            else:
                s.crashes += 1
            sig = r.signature
            if do_shrink:
                # keep the failing Result of the accepted candidate: a re-run may pass when the
                # bug reads uninitialised memory that happens to hold the right values
                last = {}

                def still_fails(c, sig=sig, last=last):
                    rc = run(c, backend)
                    if rc.signature == sig:
                        last[(c.inputs, c.steps, c.outputs, c.tuple_out)] = rc
                        return True
                    return False
                p = shrink(p, still_fails)
                r = last.get((p.inputs, p.steps, p.outputs, p.tuple_out), r)
                p = renumber(p)
            path = write(p, r, out, backend) if out else None
            s.failures.append((i, r, path))
            first = r.detail.strip().splitlines()[0] if r.detail.strip() else ""
            log(f"[{i}] {r.status}: {first[:200]}" + (f" -> {path}" if path else ""))
            if verbose:
                log(p.describe())
        if verbose and (k + 1) % 50 == 0:
            log(f"... {k + 1}/{n} ({time.time() - t0:.0f}s) {s.line()}")
    s.seconds = time.time() - t0
    return s


def _chunks(start: int, n: int, jobs: int) -> list[range]:
    """Contiguous chunks of ``start .. start+n-1``, about 4 per worker (at most 25 programs):
    small enough that the workers finish together, large enough to share compiled kernels."""
    size = max(1, min(25, -(-n // (4 * jobs))))
    return [range(a, min(a + size, start + n)) for a in range(start, start + n, size)]


def _worker_init(threads: int) -> None:
    # before kfuse (and Numba, BLAS) load in this process: J workers share the cores
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))


def _worker_run(chunk, seed: int, backend: str, out: str | None, max_steps: int,
                do_shrink: bool, deadline: float | None, program_timeout: float | None,
                hang_dir: str, favor: str | None = None, dtypes: str = "default") -> Summary:
    return _fuzz_indices(chunk, seed, backend, out, max_steps, do_shrink, False, None, deadline,
                         _Watchdog(program_timeout, hang_dir), favor, dtypes)


def _fuzz_parallel(n: int, seed: int, backend: str, out: str | None, start: int, max_steps: int,
                   do_shrink: bool, verbose: bool, log, jobs: int,
                   deadline: float | None = None, program_timeout: float | None = 180.0,
                   favor: str | None = None, dtypes: str = "default") -> Summary:
    import concurrent.futures as cf
    import multiprocessing
    import tempfile

    from .runner import Result

    def crashed(idx, why, kind):
        part = Summary(programs=len(idx), crashes=len(idx))
        part.failures = [(i, Result("crash", why, exc_type=kind), None) for i in idx]
        return part

    backend_arg = backend + (f" --kind {favor}" if favor else "") + \
        (f" --dtypes {dtypes}" if dtypes != "default" else "")      # (in the re-run commands)
    pending = [list(c) for c in _chunks(start, n, jobs)]
    jobs = min(jobs, len(pending))
    threads = max(1, (os.cpu_count() or 1) // jobs)
    total = Summary()
    t0 = time.time()
    done, hung, rounds = 0, set(), 0
    with tempfile.TemporaryDirectory(prefix="kfuse-fuzz-") as hang_dir:
        while pending:
            rounds += 1
            broken = []
            ctx = multiprocessing.get_context("spawn")
            with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init,
                                        initargs=(threads,)) as ex:
                futs = {ex.submit(_worker_run, c, seed, backend, out, max_steps, do_shrink,
                                  deadline, program_timeout, hang_dir, favor, dtypes): c for c in pending}
                for fut in cf.as_completed(futs):
                    c = futs[fut]
                    try:
                        part = fut.result()
                    except cf.process.BrokenProcessPool:
                        broken.append(c)
                        continue
                    except Exception as e:     # noqa: BLE001 - the chunk counts as crashed
                        why = (f"worker failed ({type(e).__name__}: {e}) running programs {c[0]}-"
                               f"{c[-1]}; re-run: --seed {seed} --start {c[0]} --n {len(c)} "
                               f"--backend {backend_arg}")
                        log(f"[{c[0]}-{c[-1]}] crash: {why}")
                        part = crashed(c, why, "worker")
                    total.add(part)
                    done += part.programs
                    if verbose:
                        log(f"... {done}/{n} ({time.time() - t0:.0f}s) {total.line()}")
            pending = []
            if not broken:
                break
            new = {int(f) for f in os.listdir(hang_dir)} - hung
            hung |= new
            for i in sorted(new):
                total.add(crashed([i], f"ran past {program_timeout:.0f} s (a hung kernel?); re-run: "
                                       f"--seed {seed} --start {i} --n 1 --backend {backend_arg}", "timeout"))
                done += 1
            if not new or rounds >= 20:     # a worker died without a hang: its chunk is a crash
                for c in broken:
                    why = (f"a worker died running one of programs {c[0]}-{c[-1]}; re-run: --seed "
                           f"{seed} --start {c[0]} --n {c[-1] - c[0] + 1} --backend {backend_arg}")
                    log(f"[{c[0]}-{c[-1]}] crash: {why}")
                    total.add(crashed([i for i in c if i not in hung], why, "worker"))
                break
            pending = [r for r in ([i for i in c if i not in hung] for c in broken) if r]
            log(f"... restarting the workers for {sum(map(len, pending))} programs")
    total.failures.sort(key=lambda f: f[0])
    total.not_run.sort(key=lambda r: r[0])
    total.seconds = time.time() - t0
    return total


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kfuse fuzz", description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="number of programs (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    ap.add_argument("--start", type=int, default=0, help="index of the first program")
    from kfuse import backends
    ap.add_argument("--backend", default=backends.default().name, choices=backends.names())
    ap.add_argument("--out", default=None, help="write each shrunk failure as a pytest file here")
    ap.add_argument("--max-steps", type=int, default=5, help="steps per program (default 5)")
    ap.add_argument("--no-shrink", action="store_true", help="write failures unshrunk")
    ap.add_argument("--jobs", "-j", type=int, default=1,
                    help="worker processes (default 1); program i is the same program either way")
    ap.add_argument("--time-limit", type=float, default=None, metavar="S",
                    help="start no program after S seconds; the summary counts the programs run "
                         "and the exit status is 2 (if nothing failed) when some were left out")
    ap.add_argument("--program-timeout", type=float, default=180.0, metavar="S",
                    help="with --jobs: a program (one run) longer than S seconds is a crash "
                         "(a hung kernel); the other programs go on in fresh workers (default 180)")
    ap.add_argument("--kind", choices=tuple(KINDS), default=None,
                    help="draw this kind of step about half the time (other programs than without: "
                         "re-run a program with the same --kind); kinds: " + ", ".join(KINDS))
    ap.add_argument("--dtypes", choices=("default", "complex"), default="default",
                    help="complex: programs over complex64/complex128 values (other programs than "
                         "the default; re-run a program with the same --dtypes)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print failing programs, progress")
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    s = fuzz(args.n, args.seed, args.backend, args.out, args.start, args.max_steps,
             not args.no_shrink, args.verbose, jobs=args.jobs, time_limit=args.time_limit,
             program_timeout=args.program_timeout, favor=args.kind, dtypes=args.dtypes)
    kind = (f", kind {args.kind}" if args.kind else "") + (f", dtypes {args.dtypes}" if args.dtypes != "default" else "")
    print(f"# seed {args.seed}{kind}, backend {args.backend}, programs {args.start}-"
          f"{args.start + args.n - 1}, jobs {args.jobs}: {s.seconds:.0f} s", file=sys.stderr)
    if s.not_run:
        left = sum(len(r) for r in s.not_run)
        spans = ", ".join(f"{r[0]}-{r[-1]}" for r in s.not_run[:20])
        print(f"# time limit: {left} programs not run ({spans}{', ...' if len(s.not_run) > 20 else ''})",
              file=sys.stderr)
    print(s.line(), flush=True)
    return 1 if (s.mismatches or s.crashes) else 2 if s.not_run else 0


if __name__ == "__main__":
    sys.exit(main())
