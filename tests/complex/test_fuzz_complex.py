"""``kfuse fuzz --dtypes complex``: its programs are deterministic, hold complex values and run
through kfuse as NumPy runs them; the default programs hold none (their seeds' programs are the
ones they were before complex numbers: complex-only ops stay out of the default lists)."""
import numpy as np
import pytest

from kfuse.fuzz import gen_complex, generator
from kfuse.fuzz.cli import build_parser, fuzz
from kfuse.fuzz.runner import run_program
from kfuse.ir import ops


def test_complex_programs_are_deterministic_and_complex():
    progs = [gen_complex.generate(3, i, dtypes="complex") for i in range(40)]
    assert [p.describe() for p in progs] == [gen_complex.generate(3, i, dtypes="complex").describe()
                                             for i in range(40)]
    text = "\n".join(p.describe() for p in progs)
    assert "np.complex64" in text and "np.complex128" in text
    assert any(".real" in t or ".imag" in t or "np.angle" in t for t in text.splitlines())


def test_default_programs_hold_no_complex_values():
    assert not set(generator.UNARY + generator.BINARY) & {o.value for o in ops.COMPLEX_PARTS}
    text = "\n".join(generator.generate(3, i).describe() for i in range(60))
    assert "complex" not in text and "1j" not in text
    assert gen_complex.generate(3, 7).describe() == generator.generate(3, 7).describe()
    with pytest.raises(ValueError, match="unknown dtypes"):
        gen_complex.generate(3, 7, dtypes="quaternion")


def test_complex_programs_match_numpy_on_the_cpu():
    bad = [(i, r.status, r.detail[:300]) for i in range(12)
           for r in [run_program(gen_complex.generate(5, i, dtypes="complex"), "cpu")] if r.failed]
    assert not bad


def test_the_cli_switch():
    args = build_parser().parse_args(["--dtypes", "complex", "--n", "2"])
    assert args.dtypes == "complex"
    s = fuzz(2, 5, "cpu", start=3, do_shrink=False, dtypes="complex")
    assert s.programs == 2 and not s.mismatches and not s.crashes
