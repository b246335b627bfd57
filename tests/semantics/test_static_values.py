"""Arguments that are not arrays or numbers reach the traced function as they are, as if named in
``static_argnames``: a module (``xp=np``, array-API style), None, a function or ufunc, a dtype or
type, a string (``mode="clip"``). Each distinct value is its own compiled entry (no retrace per
call); in ``lower()`` a string is an argument spec unless it is the parameter's default."""
import numpy as np
import pytest

import kfuse


def scaled(x, xp=np, mode="sqrt", scale=None, fn=np.exp, dtype=np.float32):
    y = xp.sqrt(x) if mode == "sqrt" else xp.abs(x)
    if scale is not None:
        y = y * scale
    return fn(y).astype(dtype)


def test_static_values_match_numpy_and_each_is_one_entry():
    x = np.linspace(0, 3, 10)
    f = kfuse.jit(scaled)
    calls = [{}, {"mode": "abs"}, {"scale": 2.5}, {"fn": np.sin}, {"dtype": np.float64},
             {"fn": lambda y: y + 1}]
    for kw in calls:
        got, want = f(x, **kw), scaled(x, **kw)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert len(f._programs) == len(calls)
    for kw in calls[:5]:                # the same values again: found, not traced again
        f(x, **kw)
    assert len(f._programs) == len(calls)


def test_a_string_default_is_static_in_lower():
    text = kfuse.jit(scaled).lower("f32[8]").as_text("traced")
    assert "sqrt" in text and "exp" in text
    with pytest.raises(ValueError, match="bad argument spec 'abs'"):
        kfuse.jit(scaled).lower("f32[8]", mode="abs")
    text = kfuse.jit(scaled, static_argnames=("mode",)).lower("f32[8]", mode="abs").as_text("traced")
    assert "absolute" in text and "sqrt" not in text


def test_a_new_function_each_call_warns_naming_it():
    """A lambda made inside a loop is a new static value each call: each compiles once, and past the
    recompile limit the warning names the argument and says to pass the same object."""
    from kfuse.runtime.cache import RecompileWarning
    f = kfuse.jit(lambda x, fn: fn(x) * 2)
    x = np.ones(4)
    with pytest.warns(RecompileWarning, match=r"argument 'fn' keeps changing value \(a static argument.*same object"):
        for _ in range(12):
            f(x, lambda y: y + 1)
