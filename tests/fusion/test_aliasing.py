"""The aliasing policy (``fusion/aliasing.py``): an elementwise kernel writes an argument's final
value into the argument itself only where no read of the old value can see the new one; a scatter
writes into its base's buffer only where the base is dead after it; index checks run first."""
from __future__ import annotations

import dataclasses

import kfuse
from kfuse.fusion import aliasing
from kfuse.fusion.kinds import GroupKind


def _plan(fn, *specs):
    return kfuse.jit(fn).lower(*specs).plan


def add_into(x, y):
    x += y * 2


def reversed_into(x):
    x[...] = x[::-1] + 1


def shifted_into(x, y):
    x[1:] = y[1:] * 2


def test_an_elementwise_update_writes_its_argument_in_place():
    (g,) = _plan(add_into, "f32[64]", "f32[64]").groups
    assert g.kind is GroupKind.ELEMENTWISE and [b.attr("name") for _, b in g.in_place] == ["x"]
    assert "(writes 'x' in place)" in g.describe()


def test_a_moved_read_of_the_old_value_keeps_its_copy():
    p = _plan(reversed_into, "f32[64]")
    assert not any(g.in_place for g in p.groups)
    assert aliasing.with_argument_writes(p.graph, list(p.groups)) == list(p.groups)


def test_in_place_writes_come_from_the_policy_alone():
    p = _plan(add_into, "f32[64]", "f32[64]")
    bare = [dataclasses.replace(g, in_place=()) for g in p.groups]
    again = aliasing.with_argument_writes(p.graph, bare)
    assert [g.in_place for g in again] == [g.in_place for g in p.groups] != [()]


def _scatter_values(a, i, v):
    b = a * 2
    b[i] = v
    return b


def _scatter_argument(a, i, v):
    a[i] = v * 3


def test_a_scatter_writes_into_a_dead_base_or_its_argument():
    p = _plan(_scatter_values, "f32[16]", "i64[4]", "f32[4]")
    (sc,) = [g for g in p.groups if g.kind is GroupKind.SCATTER]
    assert aliasing.scatters_in_place(p, sc) and not aliasing.scatters_into_argument(p, sc)
    assert p.scatters_in_place(sc)          # the plan asks the policy
    p = _plan(_scatter_argument, "f32[16]", "i64[4]", "f32[4]")
    (sc,) = [g for g in p.groups if g.kind is GroupKind.SCATTER]
    assert aliasing.scatters_into_argument(p, sc) and not aliasing.scatters_in_place(p, sc)
    others = [g for g in p.groups if g is not sc]
    assert not any(aliasing.scatters_in_place(p, g) or aliasing.scatters_into_argument(p, g) for g in others)


def test_index_checks_run_before_a_write_into_an_argument():
    p = _plan(_scatter_argument, "f32[16]", "i64[4]", "f32[4]")
    (sc,) = [g for g in p.groups if g.kind is GroupKind.SCATTER]
    checks = {p.graph.outputs[k] for k, *_ in p.graph.checks}
    assert checks and all(any(c in g.outputs for g in p.groups[:sc.id]) for c in checks)
