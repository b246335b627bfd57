"""Tuning results persist in the disk store and a new process reuses them without measuring."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _child(cache, mode, extra_env=None):
    env = dict(os.environ, KFUSE_CACHE_DIR=str(cache), KFUSE_PRINT_AUTOTUNING="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("KFUSE_AUTOTUNE", None)
    env.update(extra_env or {})
    r = subprocess.run([sys.executable, "-m", "tests.autotune.tune_child", mode], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def test_stored_result_reused_by_new_process(tmp_path):
    cache = tmp_path / "cache"
    first, err1 = _child(cache, "on")
    assert first["source"] == "tuned" and first["measured"] >= 1
    assert "chose" in err1
    assert len(os.listdir(cache / "tuning")) == 1
    second, err2 = _child(cache, "on")            # mode on, but the bucket is stored
    assert second["source"] == "stored" and second["measured"] == 0
    assert second["config"] == first["config"]
    assert "stored" in err2 and "chose" not in err2
    third, _ = _child(cache, "cached")
    assert third["source"] == "stored" and third["measured"] == 0
    # `kfuse cache ls --tuning` shows it
    from kfuse import cache_cli
    import io
    out = io.StringIO()
    from kfuse.runtime.cache import CacheStore
    store = CacheStore.open(path=str(cache))
    ns = type("A", (), {"tuning": True})()
    cache_cli._ls(store, ns, out)
    assert "ew" in out.getvalue() and "variant" in out.getvalue()


def test_cli_tune_stores(tmp_path):
    src = tmp_path / "mod.py"
    src.write_text("import numpy as np\n\ndef f(x, y):\n    return np.exp(x) * y + 1.0\n")
    cache = tmp_path / "cache"
    env = dict(os.environ, KFUSE_CACHE_DIR=str(cache),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "kfuse.autotune.cli", f"{src}:f", "f32[64,128]",
                        "f32[64,128]", "--budget", "20", "--quiet"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    assert "kernel 0 [elementwise] tuned" in r.stdout
    assert len(os.listdir(cache / "tuning")) == 1
