#!/usr/bin/env bash
# Sixteenth session's GPU call 4, after the ufunc.at narrowing and int32 summing (trace/scatter.py):
# the contended probe again, then the scatter tests. Results in $OUT.
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT"
bash benchmarks/gpu-2026-11-25/sixteenth/run_probe.sh > /dev/null 2>&1
cat "$OUT/contended_probe.md"
export PYTHONPATH=/tmp/site:$PWD KFUSE_CACHE_DIR=/tmp/kfuse-cache
XD=$(python3 -c "import xdist" 2>/dev/null && echo "-n 4")
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider $XD tests/runtime/test_scatter_jit.py \
  tests/codegen/test_scatter_cuda.py tests/runtime/test_scatter_gpu_inplace.py --durations=8 > "$OUT/tests_scatter.txt" 2>&1
echo "exit $?" >> "$OUT/tests_scatter.txt"; tail -12 "$OUT/tests_scatter.txt"
