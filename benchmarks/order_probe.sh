#!/usr/bin/env bash
# Does a tie at the copy bandwidth follow the order the peers get device memory in? Runs the
# suite's $WORKLOADS (P1,P3,P6) with kfuse[cuda] and torch.compile only, $RUNS times each way
# (kfuse built and allocated first, then torch.compile first), alternating, each in a fresh
# process; prints each run's kfuse-vs-torch.compile ratios. On the lent machine, repo root, .whl
# carried: RUNS=2 bash benchmarks/order_probe.sh   (results under $OUT/x; ~1 min a run, H200)
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT/x"
export PYTHONUNBUFFERED=1 KFUSE_CACHE_DIR=/tmp/kfuse-cache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
for i in $(seq 1 "${RUNS:-2}"); do
  for order in kfuse[cuda],torch.compile torch.compile,kfuse[cuda]; do
    tag=order_${i}_${order%%,*}; tag=${tag//[\[\]]/}
    echo "== $tag $(date -u +%T)" | tee -a "$OUT/log.txt"
    timeout 150 python3 -m kfuse.bench.cli --device gpu --budget 100 --no-progress --no-warm --dispatch "" \
      --peers "$order" --workloads "${WORKLOADS:-P1,P3,P6}" --json "$OUT/x/$tag.json" > "$OUT/x/$tag.log" 2>&1
    python3 - "$OUT/x/$tag.json" <<'PY' | tee -a "$OUT/log.txt"
import json, sys
d = json.load(open(sys.argv[1]))
ms = {(r["case"], r["impl"]): r.get("ms") for r in d["rows"]}
for case, by_impl in sorted(d["ratios"].items()):      # the suite's own t_peer / t_impl
    ratio = by_impl.get("kfuse[cuda]", {}).get("torch.compile")
    print(f"{case}: kfuse {ms[(case, 'kfuse[cuda]')]:.5f} ms, torch.compile {ms[(case, 'torch.compile')]:.5f} ms, "
          f"ratio {ratio:.4f}" if ratio else f"{case}: {by_impl}")
PY
  done
done
