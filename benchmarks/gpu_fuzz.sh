#!/usr/bin/env bash
# Issue 10: the differential fuzzer on the GPU backends, N programs each, spread over JOBS worker
# processes (program i is the same program as in a serial run of the seed). NumPy 2.4.6 (the
# CPU runs' version; numba-cuda needs NumPy < 2.5) comes from the wheel carried in .whl.
# Usage on the lent machine, repo root:
#   bash benchmarks/gpu_fuzz.sh                 # cuda, then numba-cuda
#   bash benchmarks/gpu_fuzz.sh numba-cuda      # one backend (one 600 s device call each)
#   PARALLEL=1 JOBS=7 LIMIT=400 bash benchmarks/gpu_fuzz.sh   # both at once on 16 cores
# Env: N (2000), JOBS (12), SEED_CUDA (21), SEED_NUMBA_CUDA (22), LIMIT (seconds of programs per
# backend; default 500 for one backend, 270 each for both), START (0), KIND (a --kind of step).
# Results in $OUT: device.txt, fuzz_<backend>.txt (the log and the summary line),
# fuzz_<backend>/ (each shrunk failure as a pytest file). Exit status: 0 only if every run
# finished all N programs with 0 mismatches and 0 crashes.
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT"
N=${N:-2000}; JOBS=${JOBS:-12}; START=${START:-0}
BACKENDS=${*:-cuda numba-cuda}
set -- $BACKENDS
if [ $# -gt 1 ]; then LIMIT=${LIMIT:-270}; else LIMIT=${LIMIT:-500}; fi
export PYTHONUNBUFFERED=1 KFUSE_CACHE_DIR=${KFUSE_CACHE_DIR:-/tmp/kfuse-cache}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  date -u +"%Y-%m-%d %H:%M:%S UTC"; nproc; } | tee -a "$OUT/device.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import numpy, numba, cupy; print('numpy', numpy.__version__, 'numba', numba.__version__, 'cupy', cupy.__version__)" | tee -a "$OUT/device.txt"
one() {
  local b=$1 seed
  case $b in cuda) seed=${SEED_CUDA:-21};; numba-cuda) seed=${SEED_NUMBA_CUDA:-22};; *) echo "unknown backend $b"; return 2;; esac
  echo "== $b: seed $seed, programs $START-$((START + N - 1)), jobs $JOBS, limit ${LIMIT}s, $(date -u +%H:%M:%S)" > "$OUT/fuzz_$b.txt"
  # --time-limit stops starting programs (the summary still prints); timeout is the hard guard
  timeout -k 10 $((LIMIT + 60)) python3 -m kfuse.fuzz.cli --backend "$b" --seed "$seed" --start "$START" \
    --n "$N" --jobs "$JOBS" --time-limit "$LIMIT" ${KIND:+--kind "$KIND"} --out "$OUT/fuzz_$b" >> "$OUT/fuzz_$b.txt" 2>&1
  local st=$?
  echo "== $b exit $st, $(date -u +%H:%M:%S)" >> "$OUT/fuzz_$b.txt"
  return $st
}
# PARALLEL=1: the backends run side by side (JOBS workers each), else one after the other
rc=0 pids=()
for b in "$@"; do
  if [ "${PARALLEL:-0}" = 1 ]; then one "$b" & pids+=($!); else one "$b" || rc=1; fi
done
for p in "${pids[@]}"; do wait "$p" || rc=1; done
for b in "$@"; do tail -3 "$OUT/fuzz_$b.txt"; done
exit $rc
