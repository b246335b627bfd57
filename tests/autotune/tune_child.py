"""Run in a subprocess by test_persist.py: tune (mode from argv) with the disk store of
KFUSE_CACHE_DIR and print what happened as one JSON line."""
import json
import sys

import numpy as np

from kfuse import config
from kfuse.autotune import tune_program, tuner
from kfuse.runtime.cache import CacheStore
from tests.autotune.helpers import ew, make_plan

x = np.linspace(-1, 1, 64 * 128, dtype=np.float32).reshape(64, 128)
plan = make_plan(ew, x, x)
reports = []
tiles = tune_program(plan, [x, x], "cpu", sys.argv[1], CacheStore.open(config.get()),
                     reports=reports, progress=False)
print(json.dumps({"measured": tuner.STATS["measured"], "source": reports[0].source,
                  "config": tiles[0].as_dict()}))
