"""The Numba-CUDA renderings of the CUDA C schedules (packed short rows, column loops with their
loads in flight, scans, tiles) run without a GPU in numba-cuda's CUDA simulator
(``numba_cuda_sim_schedules.py``, in a subprocess), every case's schedule the launcher's own choice
for its arrays (odd widths, rows not a multiple of a block's, sliced views), its outputs against
NumPy's. On a GPU: tests/gpu/test_numba_cuda_schedules_gpu.py."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from backends import numba_cuda_missing

SCRIPT = pathlib.Path(__file__).with_name("numba_cuda_sim_schedules.py")
ROOT = SCRIPT.parents[2]


# the script's cases by name prefix, and how many each holds (a subprocess each: xdist spreads them)
GROUPS = {"packed-": 24, "col-": 3, "row-": 6, "scan-": 17, "tile-": 8, "ew-": 5, "peel-": 11, "online-": 9, "fast-": 10}


@pytest.mark.skipif(numba_cuda_missing() is not None, reason="numba-cuda does not import")
@pytest.mark.parametrize("group", list(GROUPS))
def test_schedules_match_numpy_in_the_simulator(group, tmp_path):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", KFUSE_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, str(SCRIPT), group], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    results = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert len([res for res in results if res["case"].startswith(group)]) == GROUPS[group], results
    bad = [res for res in results if not res["ok"]]
    assert not bad, bad
