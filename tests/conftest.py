"""Fixtures shared across the test directories, and the parallel run.

With pytest-xdist installed (the ``test`` extra) and no ``-n`` given, the suite runs on every core
(``-n auto``), each test file whole on one worker (``--dist loadfile``: a file's tests keep their
order and share their module fixtures). Without xdist, or with ``-n 0`` / ``-p no:xdist``, it runs
in one process as before. kfuse's disk cache is safe under concurrent processes; tests that need
an empty one make their own (``tests/cache/conftest.py``).

The ``backend`` fixture runs a test once per backend (``tests/backends.py``: which ones, the
``backends`` marker, and moving arrays to and from a backend's device).
"""
import os

import pytest

import backends

# the CPU cost model's fitted figures, whatever this machine has stored (fusion/cpu_machine.py):
# the tests' expectations are those (tests/fusion/test_cpu_machine.py turns it back on)
os.environ["KFUSE_CPU_MACHINE"] = "0"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    opt = config.option
    if (getattr(opt, "numprocesses", 0) is not None or getattr(opt, "dist", "no") != "no"
            or opt.collectonly or opt.usepdb or os.environ.get("PYTEST_XDIST_WORKER")):
        return
    opt.numprocesses, opt.dist = "auto", "loadfile"


def pytest_configure(config):
    config.addinivalue_line("markers", "backends(*names, emit_only=False): the backends the test's "
                            "``backend`` fixture runs over (default: all; tests/backends.py)")


def pytest_generate_tests(metafunc):
    """Parametrise the ``backend`` fixture over the test's backends (its ``backends`` marker, else
    all of them), unless the test parametrises ``backend`` itself."""
    if "backend" not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0]
        if "backend" in (names.replace(" ", "").split(",") if isinstance(names, str) else names):
            return
    mark = metafunc.definition.get_closest_marker("backends")
    names = mark.args if mark and mark.args else backends.NAMES
    emit_only = bool(mark and mark.kwargs.get("emit_only"))
    metafunc.parametrize("backend", backends.params(names, emit_only=emit_only), indirect=True)


@pytest.fixture
def backend(request):
    """The backend name this test runs on (see :func:`pytest_generate_tests`); a GPU backend skips
    where this machine cannot run it, unless the test is ``emit_only``."""
    mark = request.node.get_closest_marker("backends")
    if not (mark and mark.kwargs.get("emit_only")):
        why = backends.gpu_missing(request.param)
        if why:
            pytest.skip(why)
    return request.param


@pytest.fixture
def cupy_for():
    """``cupy_for(backend)`` -> the cupy module, or a skip when this machine cannot run ``backend``
    (no GPU / CuPy, or numba-cuda not importable)."""
    def need(backend: str):
        why = backends.gpu_missing(backend)
        if why:
            pytest.skip(why)
        import cupy
        return cupy
    return need


@pytest.fixture
def run_jit(cupy_for):
    """``run_jit(fn, backend, *arrays)``: ``kfuse.jit(fn, backend=backend)`` called on ``arrays``
    (copied to the GPU for a GPU backend, a skip where ``backend`` cannot run), its results as NumPy
    arrays (a tuple stays a tuple)."""
    def run(fn, backend, *arrays):
        if backend != "cpu":
            cupy_for(backend)
        return backends.jit_on(fn, backend, *arrays)
    return run
