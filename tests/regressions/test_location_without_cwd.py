"""Found while fuzzing (seed 11, a run whose working directory had been removed): tracing raised
FileNotFoundError from ``errors.user_location`` (``os.path.abspath`` needs the working directory
for relative code file names). Locations now never fail a trace. (Numba itself still needs the
working directory to compile, so the test stops at the plan.)"""
import os
import subprocess
import sys
import tempfile
import textwrap


def test_trace_works_after_the_working_directory_is_removed():
    code = textwrap.dedent("""
        import os, tempfile, numpy as np, kfuse
        d = tempfile.mkdtemp(); os.chdir(d); os.rmdir(d)
        src = "def f(x):\\n    return np.clip(x, 0, 1) * 2\\n"
        ns = {"np": np}
        exec(compile(src, "relative_name.py", "exec"), ns)
        print(kfuse.explain(ns["f"], np.arange(3.0)).kernels[0].ops)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=env, cwd=tempfile.gettempdir())
    assert r.returncode == 0, r.stderr
    assert "multiply" in r.stdout
