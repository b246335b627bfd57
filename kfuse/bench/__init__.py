"""kfuse's benchmark suite (issue 9): the public workloads P1..P6 against NumPy, CuPy, cupy.fuse,
PyTorch, torch.compile and jax.jit, with measured ceilings, a markdown/JSON report and a roofline
plot. Entry point: ``kfuse bench`` (``kfuse.bench.cli.main``) or ``python3 -m kfuse.bench.cli``.

Modules: ``workloads`` (P1..P6, one NumPy-style body each), ``timing`` (events / perf_counter),
``peers`` (the implementations), ``ceilings`` (copy bandwidth, GEMM), ``suite`` (the run),
``report`` (JSON, markdown, roofline PNG, RESULTS.md), ``warm`` (warm disk load in a new
process), ``cli``. The corpus of real workloads (issue 30): ``corpus/`` (the entries, by category),
``corpus_suite`` (``kfuse bench --suite corpus``), ``corpus_report`` (its summary and tables) and
``kernel_timing`` (per-kernel predicted vs measured time, ``kfuse explain --measure``).
"""
