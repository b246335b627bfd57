"""The generator draws the newer ufuncs (arcsinh..fmod) and keeps the sign bits np.signbit and
np.copysign read away from NaNs an op made (their sign is the hardware's, kfuse/testing.py), from
zeros whose sign NumPy leaves open, and arccosh/arctanh away from computed float arguments."""
import functools
import re

import numpy as np

from kfuse.fuzz import generator

NEW = ("arcsinh", "arccosh", "arctanh", "signbit", "copysign", "logaddexp", "logaddexp2",
       "heaviside", "fmod")


@functools.cache
def _programs():
    return [generator.generate(11, i) for i in range(300)]


def test_generator_draws_the_new_ufuncs():
    ops = set().union(*(p.ops() for p in _programs()))
    assert set(NEW) <= ops, set(NEW) - ops


def test_sign_operands_are_guarded():
    seen = 0
    for p in _programs():
        env = {i.name: i.build() for i in p.inputs}
        for s in p.steps:
            m = re.fullmatch(r"np\.signbit\(([av]\d+)\)|np\.copysign\([^,]+, ([av]\d+)\)", s.expr)
            if m:               # an unguarded operand: only ints and bools (no NaN)
                assert env[m.group(1) or m.group(2)].dtype.kind != "f", s.expr
            if "signbit(np.where(" in s.expr or ("copysign(" in s.expr and "np.where((" in s.expr):
                seen += 1
            try:
                env[s.out] = generator._evaluate(s.expr, env)
            except Exception:
                break
    assert seen


def test_sign_operand_guard():
    g = generator._Gen(0, 0, 5)
    g.env = {"a0": np.zeros(3, np.float32), "a1": np.zeros(3, np.int8)}
    assert g._sign_operand("a1") == "a1"
    assert g._sign_operand("a0") == "np.where((a0 == a0), a0, 0.0)"
    g.steps = [generator.Step("v0", "np.fmax(a0, a0)")]     # fmax's zero sign is NumPy's choice
    g.env["v0"] = g.env["a0"]
    assert g._sign_operand("v0") == "np.where((v0 == v0) & (v0 != 0), v0, 0.0)"


def test_arccosh_arctanh_take_exact_arguments():
    for p in _programs():
        for s in p.steps:
            m = re.search(r"np\.arc(?:cosh|tanh)\((\w+)\)", s.expr)
            if m:
                assert not m.group(1).startswith("v") or "float" not in _dtype_of(p, m.group(1))


def _dtype_of(p, name):
    env = {i.name: i.build() for i in p.inputs}
    for s in p.steps:
        env[s.out] = np.asarray(generator._evaluate(s.expr, env))
        if s.out == name:
            return env[name].dtype.name
    return ""
