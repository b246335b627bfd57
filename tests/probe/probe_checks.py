"""The probe's checks (code as new users write it; the tests are ``test_user_code*.py``, each
over half of the functions, so that CI's two workers share them): each function of ``user_fns.CASES`` through
``kfuse.jit(fn, backend="cpu")`` on every argument set, against NumPy eager within the tolerance
table: every returned value (its type too: NumPy scalar, 0-d array or Python number; its dtype,
shape and values) and every argument afterwards (functions that write into their arguments).
Each function's kernels for its first argument set are also emitted as CUDA C and compiled to PTX
by NVRTC (no GPU needed); functions with a graph break (``BREAKS``) must still break there."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kfuse
from kfuse.trace.core import GraphBreak
from tolerance import assert_matches_numpy
import user_fns_more  # noqa: F401  (registers the second round in CASES)
from user_fns import CASES

# What the tracer cannot follow in these functions (each runs eagerly between fused segments):
# the CUDA check asserts the break is still there, the CPU check that the result is still right.
BREAKS = {
    "cross_entropy_onehot_eye": "a NumPy constant indexed by a traced array (np.eye(n)[labels]) converts it",
    "median_statistic": "np.median",
    "fft_magnitude": "np.fft.rfft, a library call",
    "reduction_out_argument": "np.sum(..., out=)",
    "gradient_science": "np.gradient",
    "convolve_signal": "np.convolve",
    "percentile_robust_scale": "np.percentile, np.median",
    "logaddexp_reduce": "np.logaddexp.reduce",
    "nanargmax_nanmax": "np.nanargmax",
}

# Functions NumPy itself refuses: kfuse must raise NumPy's exception type (CUDA check skipped).
RAISES = {"int_plus_float_inplace_error": TypeError, "python_int_out_of_range": OverflowError}

# Cases kfuse gets wrong today, each with the reason (strict: a fix must remove the entry).
XFAIL: dict[str, str] = {}


def _split(args: tuple):
    if args and isinstance(args[-1], dict):
        return args[:-1], args[-1]
    return args, {}


def _leaves(value):
    if isinstance(value, dict):
        return [v for k in sorted(value) for v in _leaves(value[k])]
    if isinstance(value, (tuple, list)):
        return [v for item in value for v in _leaves(item)]
    return [value]


def _kind(v) -> str:
    """How NumPy holds a returned value: a Python number, a NumPy scalar, an array, None."""
    if v is None or type(v) in (bool, int, float, complex):
        return type(v).__name__
    return "numpy scalar" if isinstance(v, np.generic) else "ndarray"


def _structure(value):
    if isinstance(value, dict):
        return ("dict", tuple(sorted(value)))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_structure(v) for v in value))
    return _kind(value)


def params(part: int, parts: int = 2) -> list:
    """The pytest params of every ``parts``-th function from ``part``, with their xfail marks."""
    names = list(CASES)[part::parts]
    return [pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=XFAIL[n])] if n in XFAIL else [], id=n)
            for n in names]


def check_matches_numpy(name):
    case = CASES[name]
    jitted = kfuse.jit(case.fn, backend="cpu")
    for k, (ref_inputs, inputs) in enumerate(zip(case.inputs(), case.inputs())):
        (ref_args, ref_kw), (args, kw) = _split(ref_inputs), _split(inputs)
        where = f"{name}, argument set {k}"
        if name in RAISES:
            with pytest.raises(RAISES[name]) as numpy_error:
                case.fn(*ref_args, **ref_kw)
            with pytest.raises(type(numpy_error.value)):
                jitted(*args, **kw)
            continue
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = case.fn(*ref_args, **ref_kw)
        got = jitted(*args, **kw)
        assert _structure(got) == _structure(want), f"{where}: returned {_structure(got)}, NumPy {_structure(want)}"
        for g, w in zip(_leaves(got), _leaves(want)):
            if w is None:
                continue
            if type(w) in (bool, int, float):
                assert g == w, where
            else:
                assert_matches_numpy(g, w, reductions=case.red, err_msg=where)
        for g, w in zip(args, ref_args):        # arguments written into: the same final values
            if isinstance(w, np.ndarray):
                assert_matches_numpy(g, w, reductions=case.red, err_msg=f"{where}: argument after the call")


def check_cuda_kernels_compile(name):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kfuse.codegen import cuda, nvrtc
    case = CASES[name]
    args, kw = _split(next(case.inputs()))
    jitted = kfuse.jit(case.fn, backend="cuda")
    if name in RAISES:
        with pytest.raises(RAISES[name]):
            jitted.lower(*args, **kw)
        return
    if name in BREAKS:
        with pytest.raises(GraphBreak):
            jitted.lower(*args, **kw)
        return
    kernels = jitted.lower(*args, **kw).kernels(for_gpu=True)
    assert kernels
    for kernel in kernels:
        ptx = nvrtc.compile(cuda.emit(kernel), arch="sm_90").ptx
        assert ".entry" in ptx


def make_tests(part: int):
    """The two tests of one test file over the ``part``-th half of the functions."""
    @pytest.mark.parametrize("name", params(part))
    def test_matches_numpy(name):
        check_matches_numpy(name)

    @pytest.mark.parametrize("name", params(part))
    def test_cuda_kernels_compile(name):
        check_cuda_kernels_compile(name)
    return test_matches_numpy, test_cuda_kernels_compile
