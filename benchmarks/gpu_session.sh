#!/usr/bin/env bash
# One device call that verifies and measures everything GPU-side (run from the repo root on the
# lent machine, .whl carried): every gpu-marked test on both GPU backends, the GEMM benchmark
# (issue 6), the public suite with its RESULTS.md section and roofline (issues 4, 9), and the GPU
# autotuner's heuristic-vs-tuned table (issue 8). Everything lands in $OUT (all.tar.gz holds the
# rest). Budget: about 8 minutes on an H200.
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT/x"
export PYTHONUNBUFFERED=1 KFUSE_CACHE_DIR=/tmp/kfuse-cache
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$OUT/x/device.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
step() { echo "== $1 $(date -u +%T)" | tee -a "$OUT/log.txt"; }
step tests
timeout 240 python3 -m pytest -m gpu tests -q -p no:cacheprovider -rs 2>&1 | tail -30 > "$OUT/tests.txt"
tail -3 "$OUT/tests.txt" | tee -a "$OUT/log.txt"
step gemm
timeout 100 python3 benchmarks/gemm_bench.py --out "$OUT/x" > "$OUT/x/gemm.log" 2>&1; tail -25 "$OUT/x/gemm.log" >> "$OUT/log.txt"
step suite
cp benchmarks/RESULTS.md "$OUT/RESULTS.md"
timeout 260 python3 -m kfuse.bench.cli --device gpu --budget 170 --no-progress --json "$OUT/gpu.json" \
  --markdown "$OUT/x/gpu.md" --results "$OUT/RESULTS.md" > "$OUT/x/suite.log" 2>&1; tail -5 "$OUT/x/suite.log" >> "$OUT/log.txt"
step tune
timeout 100 python3 benchmarks/gpu_tune.py --out "$OUT/x" --budget 60 --top-k 12 > "$OUT/x/tune.log" 2>&1; tail -15 "$OUT/x/tune.log" >> "$OUT/log.txt"
step done
tar czf "$OUT/all.tar.gz" -C "$OUT" x
