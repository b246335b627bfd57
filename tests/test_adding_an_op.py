"""Adding a ufunc touches the op table (``kfuse/ir/ops.py``), its decomposition if it needs one
(``kfuse/codegen/decompose.py``) and a row of the op-record table (``tests/ops/op_records.py``),
nothing else (issue 31). The real example is ``np.heaviside``: tracing, the NumPy reference, every
backend and the fuzzer reach it through those three places, and no emitter names it."""
import ast
import pathlib

import numpy as np

import kfuse
from kfuse.codegen import decompose
from kfuse.fuzz import gen_complex, generator
from kfuse.ir import ops
from tests.ops import op_records

KFUSE = pathlib.Path(kfuse.__file__).parent
EMITTERS = ["codegen/cpu.py", "codegen/cpu_cols.py", "codegen/cpu_helpers.py", "codegen/py_ops.py",
            "codegen/int_helpers.py", "codegen/cuda.py", "codegen/cuda_ops.py", "codegen/cuda_accs.py",
            "codegen/cuda_scan.py", "codegen/cuda_scatter.py", "codegen/cuda_tile2d.py",
            "codegen/gemm_cuda.py", "codegen/numba_cuda.py", "codegen/numba_cuda_ops.py",
            "codegen/numba_cuda_narrow.py", "codegen/numba_cuda_scatter.py"]


def _code_strings(path: pathlib.Path) -> set[str]:
    """The string constants of a module's code (docstrings left out)."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs}


def test_heaviside_lives_in_the_op_table_its_decomposition_and_one_op_record():
    assert ops.Op.HEAVISIDE in ops.BINARY                          # the op table
    assert "heaviside" in decompose.EXPANSIONS                     # its decomposition
    assert [r for r in op_records.RECORDS if r.name == "heaviside"]   # its op-record row
    for rel in EMITTERS:                                           # no emitter names it
        assert not any("heaviside" in s for s in _code_strings(KFUSE / rel)), rel


def test_every_ufunc_of_the_op_table_is_traced_fuzzed_and_has_an_op_record():
    rows = {r.name for r in op_records.RECORDS}
    for op in ops.UNARY | ops.BINARY:
        ufunc = getattr(np, op.value, None)
        if isinstance(ufunc, np.ufunc):
            assert ops.BY_UFUNC[ufunc.__name__] is op, op
            assert op.value in generator.UNARY + generator.BINARY + gen_complex.UNARY, op
            assert op.value in rows, f"{op.value}: no row in tests/ops/op_records.py"
