#!/usr/bin/env bash
# One lease, everything GPU: the gpu-marked tests (CUDA C, GEMM), the Numba-CUDA tests and the
# two-emitter benchmark (with NumPy 2.4 carried in .whl for numba-cuda), then the public suite.
# Usage on the lent machine (repo root): bash benchmarks/gpu_run.sh   (results under $OUT)
set -u
OUT=${OUT:-/tmp/kfuse-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export KFUSE_CACHE_DIR=/tmp/kfuse-cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
date -u | tee -a "$OUT/device.txt"
echo "== gpu tests (cuda, gemm)"
PYTHONPATH=$PWD timeout 120 python3 -m pytest -m gpu tests/gpu -q -s --deselect tests/gpu/test_numba_cuda.py \
  -p no:cacheprovider 2>&1 | tail -15 | tee "$OUT/gpu_tests.txt"
echo "== numba-cuda (NumPy 2.4 carried)"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
PYTHONPATH=/tmp/site:$PWD timeout 90 python3 -m pytest -m gpu tests/gpu/test_numba_cuda.py -q -x \
  -p no:cacheprovider 2>&1 | tail -8 | tee "$OUT/numba_cuda_tests.txt"
PYTHONPATH=/tmp/site:$PWD timeout 80 python3 benchmarks/numba_cuda_bench.py 2>&1 | tail -15
echo "== fuzz slice on cuda"
PYTHONPATH=$PWD timeout 60 python3 -m kfuse.fuzz.cli --backend cuda --n 300 --seed 1 --out "$OUT/fuzz_cuda" 2>&1 | tail -5
echo "== public suite"
PYTHONPATH=$PWD timeout 230 python3 -m kfuse.bench.cli --device gpu --budget 170 --no-progress \
  --json "$OUT/gpu.json" --markdown "$OUT/gpu.md" --plot "$OUT/roofline_gpu.png" 2>&1 | tail -40
