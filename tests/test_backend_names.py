"""No code outside ``kfuse/backends/`` compares a backend's name (issue 31): it asks the backend
object (``kfuse.backends.get(name)``) a question instead (``on_host``, ``features``, ``stages``).

The check reads every module with ``ast``: a comparison (``==``, ``!=``, ``in``, ``not in``) or a
``str.startswith``/``endswith`` with a backend name literal (``"numba-cuda"`` anywhere; ``"cpu"``
and ``"cuda"``, which also name devices, torch devices and tile kinds, when the other side is a
backend: an expression naming ``backend``) is a finding."""
from __future__ import annotations

import ast
from pathlib import Path

import kfuse.backends as backends

PKG = Path(__file__).resolve().parent.parent / "kfuse"
ONLY_BACKENDS = {"numba-cuda"}          # names that mean nothing but a backend


def _literals(node: ast.AST) -> set[str]:
    """The string constants of a literal (a str, or a tuple/list/set/dict of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_literals(e) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Dict):
        return set().union(*(_literals(k) for k in node.keys if k is not None)) if node.keys else set()
    return set()


def _is_backend_compare(names: set[str], literal: ast.AST, other: ast.AST) -> bool:
    found = _literals(literal) & names
    if not found:
        return False
    return bool(found & ONLY_BACKENDS) or "backend" in ast.unparse(other).lower()


def findings(source: str, names: set[str]) -> list[str]:
    """``line: text`` of every backend-name comparison in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        pairs = []
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            pairs = [(b, a) for a, b in zip(sides, sides[1:])] + [(a, b) for a, b in zip(sides, sides[1:])]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith") and node.args):
            pairs = [(node.args[0], node.func.value)]
        if any(_is_backend_compare(names, lit, other) for lit, other in pairs):
            out.append(f"{node.lineno}: {ast.unparse(node)}")
    return out


def test_checker_can_fail():
    names = set(backends.names())
    src = ("if backend == 'cpu': pass\n"
           "x = self.backend in ('cuda', 'numba-cuda')\n"
           "y = requested != 'numba-cuda'\n"
           "z = backend_name.startswith('cuda')\n"
           "ok = device.kind == 'cpu' or stage in ('cuda', 'ptx') or torch_device == 'cuda'\n")
    assert [f.split(":")[0] for f in findings(src, names)] == ["1", "2", "3", "4"]


def test_no_backend_name_compared_outside_backends():
    names = set(backends.names())
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if rel.parts[0] == "backends":
            continue
        bad += [f"kfuse/{rel}:{f}" for f in findings(path.read_text(), names)]
    assert not bad, ("backend names compared outside kfuse/backends/ (ask the backend object: "
                     "kfuse.backends.get(name).on_host / .features / .stages):\n" + "\n".join(bad))
