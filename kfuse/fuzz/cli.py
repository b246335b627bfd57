"""``kfuse fuzz``: generate N seeded programs, run each through kfuse and NumPy, shrink and write
every failure, and print ``programs N, mismatches M, crashes C, unsupported U (ops...)``.

Program ``i`` of seed ``S`` is reproducible on its own: ``--seed S --start i --n 1``.
Run as ``python3 -m kfuse.fuzz.cli`` (``kfuse fuzz`` delegates to :func:`main`).
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import sys
import time

from .generator import generate
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

    def line(self) -> str:
        ops = ", ".join(f"{op} x{n}" for op, n in self.unsupported_ops.most_common())
        return (f"programs {self.programs}, mismatches {self.mismatches}, crashes {self.crashes}, "
                f"unsupported {self.unsupported} ({ops})")


def fuzz(n: int, seed: int, backend: str = "cpu", out: str | None = None, start: int = 0,
         max_steps: int = 5, do_shrink: bool = True, verbose: bool = False,
         log=None) -> Summary:
    """Run programs ``start .. start+n-1`` of ``seed``; shrink and write failures under ``out``."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    s = Summary()
    t0 = time.time()
    for i in range(start, start + n):
        p = generate(seed, i, max_steps)
        r = run_program(p, backend)
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
                    rc = run_program(c, backend)
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
        if verbose and (i - start + 1) % 50 == 0:
            log(f"... {i - start + 1}/{n} ({time.time() - t0:.0f}s) {s.line()}")
    s.seconds = time.time() - t0
    return s


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kfuse fuzz", description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="number of programs (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    ap.add_argument("--start", type=int, default=0, help="index of the first program")
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda", "numba-cuda"))
    ap.add_argument("--out", default=None, help="write each shrunk failure as a pytest file here")
    ap.add_argument("--max-steps", type=int, default=5, help="steps per program (default 5)")
    ap.add_argument("--no-shrink", action="store_true", help="write failures unshrunk")
    ap.add_argument("-v", "--verbose", action="store_true", help="print failing programs, progress")
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    s = fuzz(args.n, args.seed, args.backend, args.out, args.start, args.max_steps,
             not args.no_shrink, args.verbose)
    print(s.line())
    return 1 if (s.mismatches or s.crashes) else 0


if __name__ == "__main__":
    sys.exit(main())
