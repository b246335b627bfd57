"""Write a (shrunk) failing program as a standalone pytest file, ready for ``tests/regressions/``.

The file holds the function, the literal inputs (with the same views), and a test that runs it
through ``kfuse.jit`` and NumPy and compares with ``kfuse/testing.py`` (plus signed zeros) the
results and the arguments after the call (a program may write into them), or expects NumPy's
exception type when NumPy raises.
"""
from __future__ import annotations

import os
import textwrap

from .generator import Program
from .runner import Result, comparison, run_numpy

_TEMPLATE = '''\
"""Found by `kfuse fuzz --seed {seed}` (program {index}, backend {backend}): {status}.

{detail}
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


{source}

def _inputs():
{inputs}


def test_{name}():
    args = _inputs()
    with np.errstate(all="ignore"):
{expect}
'''

_EXPECT_VALUES = '''\
        want_args = [a.copy() for a in args]
        expected = {fn}(*want_args)
    actual = kfuse.jit({fn}, backend="{backend}")(*args)
    if not isinstance(expected, tuple):
        expected, actual = (expected,), (actual,)
    assert len(actual) == len(expected)
    for a, e in zip(list(actual) + args, list(expected) + want_args):   # the arguments written too
        assert_matches_numpy(a, e, reductions={red})
        a, e = np.asarray(a), np.asarray(e)
        if {zs} and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])'''

_EXPECT_RAISES = '''\
        with pytest.raises({exc}):
            {fn}(*[a.copy() for a in args])
    with pytest.raises({exc}):
        kfuse.jit({fn}, backend="{backend}")(*args)'''


def test_name(p: Program, backend: str) -> str:
    return f"fuzz_{backend.replace('-', '_')}_s{p.seed}_p{p.index}"


def render(p: Program, result: Result, backend: str = "cpu") -> str:
    _, np_exc = run_numpy(p)
    if np_exc is not None:
        expect = _EXPECT_RAISES.format(exc=_exception_name(type(np_exc)), fn=p.fn_name, backend=backend)
    else:
        red, zs = comparison(p, backend)
        expect = _EXPECT_VALUES.format(fn=p.fn_name, backend=backend, red=red, zs=zs)
    inputs = "\n".join(f"    {i.name} = {i.source()}" for i in p.inputs)
    inputs += f"\n    return [{', '.join(i.name for i in p.inputs)}]"
    detail = textwrap.indent(result.detail.strip()[:1200], "    ").replace('"""', "'''")
    return _TEMPLATE.format(seed=p.seed, index=p.index, backend=backend, status=result.status,
                            detail=detail, source=p.source(), inputs=inputs,
                            name=test_name(p, backend), expect=expect)


def write(p: Program, result: Result, out_dir: str, backend: str = "cpu") -> str:
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"test_{test_name(p, backend)}.py")
    with open(path, "w") as f:
        f.write(render(p, result, backend))
    return path


def _exception_name(cls: type) -> str:
    """A name the regression file can raise-check: NumPy's own classes (UFuncTypeError, AxisError
    and kin, not all public) by their nearest built-in base, which they subclass."""
    import builtins
    return next(c.__name__ for c in cls.__mro__ if getattr(builtins, c.__name__, None) is c)
