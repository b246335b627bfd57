#!/usr/bin/env bash
# Sixteenth session's GPU call 1: the gpu-marked tests of scatters, searches and the late
# fifteenth-session functions, then tests/gpu and the regressions. Results in $OUT.
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD KFUSE_CACHE_DIR=/tmp/kfuse-cache
XD=$(python3 -c "import xdist" 2>/dev/null && echo "-n 4")      # pytest-xdist where the image has it
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u; git log --oneline -1 2>/dev/null; } > "$OUT/device.txt"
timeout ${T1:-300} python3 -m pytest -m gpu -q -p no:cacheprovider $XD \
  tests/runtime/test_scatter_jit.py tests/runtime/test_search_jit.py tests/runtime/test_scatter_gpu_inplace.py \
  tests/codegen/test_scatter_cuda.py tests/autotune/test_scatter_tuning.py tests/runtime/test_more_functions_jit.py \
  --durations=15 > "$OUT/tests_new.txt" 2>&1; echo "exit $?" >> "$OUT/tests_new.txt"
tail -5 "$OUT/tests_new.txt"
timeout ${T2:-200} python3 -m pytest -m gpu -q -p no:cacheprovider $XD tests/gpu tests/regressions \
  > "$OUT/tests_gpu_regressions.txt" 2>&1; echo "exit $?" >> "$OUT/tests_gpu_regressions.txt"
tail -5 "$OUT/tests_gpu_regressions.txt"
