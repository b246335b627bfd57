#!/usr/bin/env bash
# Sixteenth session's GPU call 3: the contended ufunc.at probe, each case in its own process under
# a 25 s limit (the first version timed out as a whole). Results in $OUT/contended_probe.md.
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD KFUSE_CACHE_DIR=/tmp/kfuse-cache
P=benchmarks/gpu-2026-11-25/sixteenth/contended_probe.py
{ echo "# contended ufunc.at ($(nvidia-smi --query-gpu=name --format=csv,noheader), $(date -u +%H:%M) UTC)"; echo
  echo "| case | values | slots | first call ms | ms a call | torch index_add_ ms | equal to NumPy |"
  echo "|---|---|---|---|---|---|---|"; } > "$OUT/contended_probe.md"
for k in 0 1 2 3 4 5 6 7 8 9 10; do
  timeout 25 python3 $P $k >> "$OUT/contended_probe.md" 2>> "$OUT/contended_probe.err" || echo "| case $k | | | timed out (25 s) or failed | | | |" >> "$OUT/contended_probe.md"
done
cat "$OUT/contended_probe.md"
