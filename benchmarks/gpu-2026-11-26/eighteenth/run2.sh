#!/usr/bin/env bash
# Eighteenth session's second GPU call: every gpu-marked test after the in-place argument writes
# (KernelGroup.in_place), then benchmarks/inplace_bench.py and probes/inplace_dispatch_probe.py.
# Carry .whl. Results under $OUT.
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD:$PWD/benchmarks KFUSE_CACHE_DIR=/tmp/kfuse-cache
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u; } > "$OUT/device.txt"
timeout ${T1:-300} python3 -m pytest -m gpu ${TESTS:-tests} -q -p no:cacheprovider -n ${WORKERS:-8} -rfE --durations=5 \
  > "$OUT/tests.txt" 2>&1; echo "exit $?" >> "$OUT/tests.txt"
grep -E "FAILED|ERROR|passed|failed" "$OUT/tests.txt" | tail -30
timeout ${T2:-200} python3 benchmarks/inplace_bench.py > "$OUT/inplace_bench.txt" 2>&1; echo "exit $?" >> "$OUT/inplace_bench.txt"
tail -25 "$OUT/inplace_bench.txt"
timeout 120 python3 benchmarks/probes/inplace_dispatch_probe.py > "$OUT/inplace_dispatch_probe_stdout.txt" 2>&1
head -8 "$OUT/inplace_dispatch_probe_stdout.txt"
