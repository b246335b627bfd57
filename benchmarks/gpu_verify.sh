#!/usr/bin/env bash
# Final verification on the lent GPU: every gpu-marked test (CUDA C and Numba-CUDA, with NumPy 2.4
# carried in .whl for numba-cuda) and a fuzz slice per GPU backend. Results under $OUT.
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 KFUSE_CACHE_DIR=/tmp/kfuse-cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"; date -u | tee -a "$OUT/device.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
timeout 200 python3 -m pytest -m gpu tests -q -p no:cacheprovider -rs 2>&1 | tail -25 | tee "$OUT/gpu_tests.txt"
for b in cuda numba-cuda; do
  timeout 90 python3 -m kfuse.fuzz.cli --backend $b --n 120 --seed 11 --no-shrink --out /tmp/fz-$b 2>&1 | tail -4 | tee "$OUT/fuzz_$b.txt"
done
