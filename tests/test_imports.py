"""Import hygiene: imports inside kfuse point one way (docs/ARCHITECTURE.md), form no cycle, and
``import kfuse`` loads no GPU stack (cupy, torch, numba.cuda, jax), nor Numba, networkx or SciPy,
eagerly.

Layers, lowest first: ``config/errors/logs/records <- ir <- {trace, fusion} <- codegen <- runtime <- backends
<- autotune <- api <- cli``. A module may import its own layer and lower ones; ``trace`` and ``fusion`` never
import each other. Modules outside the table (``cli``, ``demo``, ``cache_cli``, ``bench``,
``__init__``) are front ends at the top: nothing inside the layers may import them.

No cycles: the graph of every import between kfuse modules (top-level and function-local alike)
has no strongly connected component of more than one module. A function-local import does not
make a cycle acceptable; move the shared helper to the module that owns its data, or to a small
module of its own.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

PKG = Path(__file__).resolve().parent.parent / "kfuse"

LAYER = {
    "config": 0, "errors": 0, "logs": 0, "records": 0, "testing": 0,
    "ir": 1,
    "trace": 2, "fusion": 2,
    "codegen": 3,
    "runtime": 4,
    "backends": 5,
    "autotune": 6,
    "api": 7, "call_entry": 7, "dispatch_keys": 7, "dispatch_guard": 7, "size_generic": 7, "dask": 7, "breaks": 7,
}
TOP = 8            # cli, demo, cache_cli, bench, the package __init__ and anything else new
SIBLINGS_APART = {("trace", "fusion"), ("fusion", "trace")}


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _unit(module: str) -> str:
    """The layer name of a kfuse module: ``kfuse.ir.graph`` -> ``ir``; ``kfuse`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _rank(module: str) -> int:
    return LAYER.get(_unit(module), TOP)


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    """Every kfuse module that ``module`` imports (at any depth of the file), with its line."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as e:
        pytest.fail(f"{path}: cannot parse ({e})")
    is_pkg = path.name == "__init__.py"
    package = module if is_pkg else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "kfuse" or alias.name.startswith("kfuse."):
                    found.append((alias.name, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not (target == "kfuse" or target.startswith("kfuse.")):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub if sub in MODULES else target, node.lineno))
    return found


def test_package_found():
    assert "kfuse.ir.graph" in MODULES and "kfuse.errors" in MODULES


def test_resolution_of_relative_imports():
    # `from ..errors import UnsupportedError` in kfuse/ir/dtypes.py is an import of kfuse.errors
    assert "kfuse.errors" in [m for m, _ in _imports("kfuse.ir.dtypes", MODULES["kfuse.ir.dtypes"])]


def test_rule_catches_a_wrong_way_arrow(tmp_path):
    """The checker itself must be able to fail: an ir module importing fusion is flagged."""
    bad = tmp_path / "bad.py"
    bad.write_text("from ..fusion import plan\nfrom .. import api\n")
    targets = [m for m, _ in _imports("kfuse.ir.bad", bad)]
    assert targets == ["kfuse.fusion.plan", "kfuse.api"]
    assert all(_rank(t) > _rank("kfuse.ir.bad") for t in targets)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_one_way(module):
    src_unit, src_rank = _unit(module), _rank(module)
    wrong = []
    for target, line in _imports(module, MODULES[module]):
        dst_unit, dst_rank = _unit(target), _rank(target)
        if dst_unit == src_unit:
            continue
        if (src_unit, dst_unit) in SIBLINGS_APART:
            wrong.append(f"line {line}: {module} imports {target} ({src_unit} and {dst_unit} never import each other)")
        elif dst_rank > src_rank or (dst_rank == TOP and src_rank < TOP):
            wrong.append(f"line {line}: {module} (layer {src_unit}) imports {target} (layer {dst_unit}, higher)")
    assert not wrong, "wrong-way imports (see docs/ARCHITECTURE.md):\n" + "\n".join(wrong)


def _import_graph(modules: dict[str, Path]) -> nx.DiGraph:
    """kfuse module -> every kfuse module it imports (any depth of the file), edges carrying a line."""
    graph = nx.DiGraph()
    for module, path in modules.items():
        graph.add_node(module)
        for target, line in _imports(module, path):
            if target != module and target in modules:
                graph.add_edge(module, target, line=line)
    return graph


def _cycles(graph: nx.DiGraph) -> list[str]:
    """One description per strongly connected component of more than one module: its members
    and the import lines between them."""
    found = []
    for scc in nx.strongly_connected_components(graph):
        if len(scc) < 2:
            continue
        edges = sorted((a, b, d["line"]) for a, b, d in graph.subgraph(scc).edges(data=True))
        found.append(f"{len(scc)} modules: " + ", ".join(sorted(scc)) + "\n"
                     + "\n".join(f"    {a} -> {b} (line {line})" for a, b, line in edges))
    return sorted(found)


def test_cycle_check_can_fail(tmp_path):
    """The checker itself must be able to fail: two modules importing each other, one of them only
    inside a function, are one cycle."""
    pkg = tmp_path / "kfuse" / "ir"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text("from .b import f\n")
    (pkg / "b.py").write_text("def f():\n    from .a import x\n    return x\n")
    (pkg / "c.py").write_text("from .a import f\n")
    mods = {"kfuse.ir.a": pkg / "a.py", "kfuse.ir.b": pkg / "b.py", "kfuse.ir.c": pkg / "c.py"}
    graph = nx.DiGraph()
    for module, path in mods.items():
        graph.add_node(module)
        for target, _ in _imports(module, path):
            if target in mods and target != module:
                graph.add_edge(module, target, line=0)
    cycles = _cycles(graph)
    assert len(cycles) == 1 and cycles[0].startswith("2 modules: kfuse.ir.a, kfuse.ir.b")


def test_no_import_cycles():
    cycles = _cycles(_import_graph(MODULES))
    assert not cycles, "import cycles (see the module docstring):\n" + "\n".join(cycles)


def test_import_kfuse_is_light():
    code = ("import sys, kfuse\n"
            "heavy = [m for m in ('cupy', 'torch', 'jax', 'numba.cuda', 'numba', 'networkx', 'scipy')\n"
            "         if m in sys.modules]\n"
            "print(','.join(heavy))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=PKG.parent, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "", f"`import kfuse` imported {res.stdout.strip()} eagerly"


def test_every_module_compiles_without_warnings():
    """No module has a SyntaxWarning (an invalid escape such as ``\\ `` in a docstring: an error in
    a later Python)."""
    import warnings
    for name, path in _modules().items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compile(path.read_text(), str(path), "exec")
