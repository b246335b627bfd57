"""The Numba-CUDA row reductions' order redo, run without a GPU in numba-cuda's CUDA simulator
(``numba_cuda_sim.py``, in a subprocess): complex prod, max and min rows whose tree value is
non-finite come out as NumPy's, and the same kernels with the redo switched off do not (so the
inputs tell the orders apart). On a GPU: tests/regressions/test_fuzz_gpu_complex_prod_order.py."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from backends import numba_cuda_missing

SCRIPT = pathlib.Path(__file__).with_name("numba_cuda_sim.py")
ROOT = SCRIPT.parents[2]


@pytest.mark.skipif(numba_cuda_missing() is not None, reason="numba-cuda does not import")
def test_rows_redone_in_numpys_order_in_the_simulator(tmp_path):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", KFUSE_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    results = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert len(results) == 4
    for res in results:
        assert res["new"], res
        assert not res["old"], res      # the input tells the tree from NumPy's order
