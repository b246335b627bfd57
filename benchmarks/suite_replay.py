"""Replays the public suite's workloads named in $BEFORE (P1,...,P5) in the calling probe's process,
so that a probe measures its kernels in the state a whole suite leaves behind ($BEFORE_PEERS: only
those peers). The H200's P6 runs 0.3% slower after P1-P5 than alone, torch.compile's and Triton's
0.3% too (ptx_bisect, 2026-11-25 00:57). An experiment helper, not a test."""
import os


def replay_suite() -> str | None:
    """Run the workloads of $BEFORE through ``run_suite`` (GPU, no warm-load rows); their names."""
    before = os.environ.get("BEFORE")
    if before:
        from kfuse.bench.suite import run_suite
        run_suite("gpu", workloads=before.split(","), peers=os.environ.get("BEFORE_PEERS"),
                  warm=False, progress=False)
    return before


def header_note(before: str | None) -> str:
    return f", after the suite's {before} in this process" if before else ""
