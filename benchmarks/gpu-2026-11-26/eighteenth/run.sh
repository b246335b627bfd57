#!/usr/bin/env bash
# Eighteenth session's first GPU call: every gpu-marked test on main (the seventeenth session's
# last commits were not GPU-run), then the P1/P3/P6 order probe (kfuse[cuda] vs torch.compile,
# fresh processes, each allocation order). Carry .whl. Results under $OUT.
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD:$PWD/benchmarks KFUSE_CACHE_DIR=/tmp/kfuse-cache
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u; git log --oneline -1 2>/dev/null; } > "$OUT/device.txt"
cat "$OUT/device.txt"
if [ "${TESTS:-1}" = 1 ]; then
  timeout ${T1:-330} python3 -m pytest -m gpu tests -q -p no:cacheprovider -n ${WORKERS:-8} -rfE --durations=10 \
    > "$OUT/tests_all.txt" 2>&1; echo "exit $?" >> "$OUT/tests_all.txt"
  tail -25 "$OUT/tests_all.txt"
fi
[ "${PROBE:-1}" = 1 ] && RUNS=${RUNS:-1} bash benchmarks/order_probe.sh
