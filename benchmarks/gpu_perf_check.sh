#!/usr/bin/env bash
# One device call for a change to the CUDA emitter: every gpu-marked test, the kernel probes named
# in PROBES (p3, p1: benchmarks/row_probe.py, the generated kernel beside its variants and
# torch.compile; tiles: benchmarks/tile_probe.py, P6 and P1 under several launch shapes;
# dispatch: benchmarks/dispatch_probe.py, the host time of a cached call piece by piece;
# reduce: benchmarks/reduce_probe.py, long reductions over few rows; gap: triton_gap_probe.py,
# kernel durations and launch gaps beside torch.compile's kernel under CUPTI; bisect: ptx_bisect.py,
# P6's kernel and Triton's edited one difference at a time, BEFORE=P1,...,P5 to replay the suite's
# earlier workloads in its process first (tiles too, as benchmarks/suite_replay.py); streams:
# stream_probe.py; p4read: p4_read_probe.py, P4's carve-outs and warp-a-row kernels), the
# suite's P1/P3/P6 against torch.compile REPEAT times, then the whole public suite FULL
# times (the first updates RESULTS.md). Usage on the lent machine (repo root, .whl carried):
#   PROBES='p3 tiles' REPEAT=2 FULL=1 bash benchmarks/gpu_perf_check.sh   (results under $OUT; ~8 min, H200)
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT/x"
export PYTHONUNBUFFERED=1 KFUSE_CACHE_DIR=/tmp/kfuse-cache
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$OUT/log.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
step() { echo "== $1 $(date -u +%T)" | tee -a "$OUT/log.txt"; }
step tests
timeout 300 python3 -m pytest -m gpu ${TESTS:-tests} -q -p no:cacheprovider -rs --maxfail=10 2>&1 | tail -60 > "$OUT/tests.txt"
tail -3 "$OUT/tests.txt" | tee -a "$OUT/log.txt"
for p in ${PROBES-p3}; do   # p3, p1: row_probe.py (--p1: P1's elementwise kernel); tiles: tile_probe.py P6 P1;
  step "probe $p"           # dispatch: dispatch_probe.py (host time of a cached call, piece by piece)
  case $p in
    dispatch) (cd "$OUT/x" && OUT="$OUT/x" timeout 200 python3 "$OLDPWD/benchmarks/dispatch_probe.py" > probe_$p.log 2>&1)
           f="$OUT/x/dispatch_probe.md" ;;
    reduce) (cd "$OUT/x" && OUT="$OUT/x" timeout 200 python3 "$OLDPWD/benchmarks/reduce_probe.py" > probe_$p.log 2>&1)
           f="$OUT/x/reduce_probe.md" ;;
    gap) (cd "$OUT/x" && OUT="$OUT/x" timeout 200 python3 "$OLDPWD/benchmarks/triton_gap_probe.py" ${TILE_WORKLOADS:-P6 P1} > probe_$p.log 2>&1)
           f="$OUT/x/triton_gap_*.md" ;;
    tiles) (cd "$OUT/x" && OUT="$OUT/x" timeout 200 python3 "$OLDPWD/benchmarks/tile_probe.py" ${TILE_WORKLOADS:-P6 P1} > probe_$p.log 2>&1)
           f="$OUT/x/tile_probe.md" ;;
    bisect) (cd "$OUT/x" && OUT="$OUT/x" timeout 300 python3 "$OLDPWD/benchmarks/ptx_bisect.py" P6 > probe_$p.log 2>&1)
           f="$OUT/x/ptx_bisect_P6.md" ;;
    p4read) (cd "$OUT/x" && OUT="$OUT/x" timeout 300 python3 "$OLDPWD/benchmarks/p4_read_probe.py" > probe_$p.log 2>&1)
           f="$OUT/x/p4_read_probe.md" ;;
    streams) (cd "$OUT/x" && OUT="$OUT/x" timeout 200 python3 "$OLDPWD/benchmarks/stream_probe.py" > probe_$p.log 2>&1)
           f="$OUT/x/stream_probe.md" ;;
    *) (cd "$OUT/x" && OUT="$OUT/x" timeout 200 python3 "$OLDPWD/benchmarks/row_probe.py" $([ $p = p1 ] && echo --p1) > probe_$p.log 2>&1)
       f="$OUT/x/probe_$p.md" ;;
  esac
  cat $f >> "$OUT/log.txt" 2>/dev/null || tail -5 "$OUT/x/probe_$p.log" >> "$OUT/log.txt"
done
for i in $(seq 1 "${REPEAT:-2}"); do
  step "subset $i"
  timeout 150 python3 -m kfuse.bench.cli --device gpu --budget 60 --no-progress --peers kfuse,torch.compile \
    --workloads P1,P3,P6 --json "$OUT/x/subset$i.json" > "$OUT/x/subset$i.log" 2>&1
  grep -E "^\| *P[136]" "$OUT/x/subset$i.log" | tee -a "$OUT/log.txt" || tail -5 "$OUT/x/subset$i.log" >> "$OUT/log.txt"
done
for n in $(seq 1 "${FULL:-1}"); do   # FULL suites: the first updates RESULTS.md, the others repeat it
  step "suite $n"
  if [ "$n" = 1 ]; then
    cp benchmarks/RESULTS.md "$OUT/RESULTS.md"
    timeout 260 python3 -m kfuse.bench.cli --device gpu --budget 170 --no-progress --json "$OUT/gpu.json" \
      --results "$OUT/RESULTS.md" > "$OUT/x/suite.log" 2>&1
  else
    timeout 260 python3 -m kfuse.bench.cli --device gpu --budget 170 --no-progress --json "$OUT/x/gpu$n.json" \
      > "$OUT/x/suite$n.log" 2>&1
  fi
  grep -E "^\| P[1-6] \| kfuse\[cuda\] \| [0-9.]+×" "$OUT/x/suite"*.log | tail -6 >> "$OUT/log.txt"
done
step done
tar czf "$OUT/extra.tar.gz" -C "$OUT" x
