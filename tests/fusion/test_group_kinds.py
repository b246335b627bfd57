"""Group kinds are ``fusion.kinds.GroupKind`` members: no module of kfuse compares a kind (a
``.kind`` attribute or a variable named ``kind``) with a kind's name as a string literal; scans
are a kind of their own; a kind still reads, prints and hashes as its name."""
from __future__ import annotations

import ast
import json
import pathlib

import numpy as np
import pytest

import kfuse
from kfuse.fusion.kinds import ROW_KINDS, GroupKind
from kfuse.fusion.plan import KernelGroup

ROOT = pathlib.Path(kfuse.__file__).parent
NAMES = {k.value for k in GroupKind}


def _is_kind(e: ast.expr) -> bool:
    return (isinstance(e, ast.Attribute) and e.attr == "kind") or (isinstance(e, ast.Name) and e.id == "kind")


def _literals(e: ast.expr) -> set[str]:
    if isinstance(e, ast.Constant) and isinstance(e.value, str):
        return {e.value}
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        return {x.value for x in e.elts if isinstance(x, ast.Constant) and isinstance(x.value, str)}
    return set()


def string_kind_compares(source: str) -> list[str]:
    """The compares (``==``, ``!=``, ``in``, ``not in``...) of a kind with a kind's name."""
    found = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            if any(_is_kind(s) for s in sides) and any(_literals(s) & NAMES for s in sides):
                found.append(f"{n.lineno}: {ast.unparse(n)}")
    return found


def test_no_module_compares_a_kind_with_a_string():
    bad = [f"{p.relative_to(ROOT.parent)}:{hit}" for p in sorted(ROOT.rglob("*.py"))
           for hit in string_kind_compares(p.read_text())]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("src,hits", [
    ("g.kind == 'reduce'", 1),
    ("kind != 'scan'", 1),
    ("g.kind in ('matmul', 'scatter')", 1),
    ("'elementwise' == self.kir.kind", 1),
    ("g.kind == GroupKind.REDUCE", 0),
    ("g.mode == 'elementwise'", 0),
    ("g.kind == 'row'", 0),
])
def test_the_scan_finds_string_compares(src, hits):
    assert len(string_kind_compares(src)) == hits


def test_kinds_read_as_their_names():
    assert GroupKind.SCAN == "scan" and GroupKind("reduce") is GroupKind.REDUCE
    assert f"{GroupKind.MATMUL}" == str(GroupKind.MATMUL) == "matmul"
    assert "scatter" in {GroupKind.SCATTER} and GroupKind.ELEMENTWISE in {"elementwise"}
    assert json.dumps([GroupKind.SCAN]) == '["scan"]'
    assert set(ROW_KINDS) == {GroupKind.REDUCE, GroupKind.SCAN}


def test_a_group_takes_a_kind_by_name_and_refuses_others():
    g = KernelGroup(0, "reduce", (), (), (), ())
    assert g.kind is GroupKind.REDUCE
    with pytest.raises(ValueError):
        KernelGroup(0, "rowwise", (), (), (), ())


def _running(x):
    return np.cumsum(x * 2, axis=1) + x.sum(axis=1, keepdims=True)


def test_a_scan_is_its_own_kind():
    plan = kfuse.jit(_running).lower(np.ones((8, 5), np.float32)).plan
    assert sorted(g.kind for g in plan.groups) == [GroupKind.REDUCE, GroupKind.SCAN]
    (scan,) = [g for g in plan.groups if g.is_scan]
    assert scan.kind is GroupKind.SCAN and scan.axes == (1,)
    assert f"kernel {scan.id}: scan along axis 1 of [8, 5]" in str(plan)
