#!/usr/bin/env bash
# Seventeenth session's GPU call: every gpu-marked test (pytest-xdist, one GPU shared by the
# workers), then the scatter and search benchmarks whose sixteenth-session results were lost.
# Carry .whl (NumPy 2.4.x for numba-cuda). Results under $OUT.
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD:$PWD/benchmarks KFUSE_CACHE_DIR=/tmp/kfuse-cache
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u; git log --oneline -1 2>/dev/null; git status --short | head; } > "$OUT/device.txt"
cat "$OUT/device.txt"
XD=$(python3 -c "import xdist" 2>/dev/null && echo "-n ${WORKERS:-6}")
timeout ${T1:-400} python3 -m pytest -m gpu tests -q -p no:cacheprovider $XD -rfE --durations=10 \
  > "$OUT/tests_all.txt" 2>&1; echo "exit $?" >> "$OUT/tests_all.txt"
tail -30 "$OUT/tests_all.txt"
if [ "${BENCH:-1}" = 1 ]; then
  timeout 100 python3 benchmarks/scatter_bench.py > "$OUT/scatter_bench.txt" 2>&1; echo "exit $?" >> "$OUT/scatter_bench.txt"
  tail -22 "$OUT/scatter_bench.txt"
  timeout 80 python3 benchmarks/search_bench.py > "$OUT/search_bench.txt" 2>&1; echo "exit $?" >> "$OUT/search_bench.txt"
  tail -16 "$OUT/search_bench.txt"
fi
