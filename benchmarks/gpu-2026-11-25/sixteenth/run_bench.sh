#!/usr/bin/env bash
# Sixteenth session's GPU call 2: the contended ufunc.at probe, scatter_bench, search_bench, and
# the cache SIGKILL test alone (it timed out under pytest-xdist in call 1). Results in $OUT.
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD:$PWD/benchmarks KFUSE_CACHE_DIR=/tmp/kfuse-cache
D=benchmarks/gpu-2026-11-25/sixteenth
timeout 150 python3 $D/contended_probe.py > "$OUT/contended_probe.txt" 2>&1; echo "exit $?" >> "$OUT/contended_probe.txt"
tail -15 "$OUT/contended_probe.txt"
timeout 150 python3 benchmarks/scatter_bench.py > "$OUT/scatter_bench.txt" 2>&1; echo "exit $?" >> "$OUT/scatter_bench.txt"
tail -22 "$OUT/scatter_bench.txt"
timeout 120 python3 benchmarks/search_bench.py > "$OUT/search_bench.txt" 2>&1; echo "exit $?" >> "$OUT/search_bench.txt"
tail -16 "$OUT/search_bench.txt"
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider "tests/gpu/test_cache_gpu.py::test_sigkill_mid_write_publishes_nothing" > "$OUT/sigkill_alone.txt" 2>&1; echo "exit $?" >> "$OUT/sigkill_alone.txt"
tail -3 "$OUT/sigkill_alone.txt"
