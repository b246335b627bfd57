"""kfuse's diagnostics go through ``logging`` (logger ``kfuse``): ``KFUSE_DEBUG=1`` shows each
compile's plan on stderr, ``2`` also the IR between passes, and an application can turn them on
through ``logging`` alone."""
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import kfuse

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import numpy as np, kfuse
@kfuse.jit
def scaled_sum(x):
    return np.exp(x * 1.0).sum()
print("result", float(scaled_sum(np.ones(8, np.float32))))
"""


def _run(debug: str | None):
    env = {k: v for k, v in os.environ.items() if k != "KFUSE_DEBUG"}
    env.update(PYTHONPATH=str(ROOT), KFUSE_CACHE="0")
    if debug is not None:
        env["KFUSE_DEBUG"] = debug
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("result 21.74"), r.stdout
    return r.stderr


def test_kfuse_debug_prints_the_plan_of_a_jitted_call():
    err = _run("1")
    assert "plan for scaled_sum on cpu: 1 kernel(s)" in err and "exp sum" in err, err
    assert "--- after" not in err, err
    err = _run("2")
    assert "plan for scaled_sum" in err and "--- after identities ---" in err, err
    assert _run(None) == ""


def test_plans_are_logged_through_logging(caplog):
    @kfuse.jit
    def logged_plan(x):
        return x * 2 + 1
    with caplog.at_level(logging.INFO, logger="kfuse"):
        logged_plan(np.ones(4))
    records = [r for r in caplog.records if r.name == "kfuse" and r.levelno == logging.INFO]
    assert any("plan for logged_plan on cpu" in r.getMessage() for r in records), caplog.text
