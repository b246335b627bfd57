#!/usr/bin/env bash
# Seventeenth session's last GPU call: the gpu-marked tests of what changed since the full run
# (scatters, writes and selections, indexing, the regressions), then scatter_bench twice: as is,
# and with KFUSE_INDEX_CHECKS=0 (no flag read back a call). Carry .whl. Results under $OUT.
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT/nochecks"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD:$PWD/benchmarks KFUSE_CACHE_DIR=/tmp/kfuse-cache
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u; } > "$OUT/device.txt"
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 -rfE tests/runtime/test_scatter_jit.py \
  tests/codegen/test_scatter_cuda.py tests/runtime/test_scatter_gpu_inplace.py tests/runtime/test_mutation_jit.py \
  tests/runtime/test_indexing_jit.py tests/runtime/test_assemble_jit.py tests/regressions > "$OUT/tests.txt" 2>&1
echo "exit $?" >> "$OUT/tests.txt"; tail -8 "$OUT/tests.txt"
timeout 100 python3 benchmarks/scatter_bench.py > "$OUT/scatter_bench.txt" 2>&1; tail -18 "$OUT/scatter_bench.txt"
OUT=$OUT/nochecks KFUSE_INDEX_CHECKS=0 timeout 100 python3 benchmarks/scatter_bench.py > "$OUT/nochecks/scatter_bench.txt" 2>&1
tail -18 "$OUT/nochecks/scatter_bench.txt"
