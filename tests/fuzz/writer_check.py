"""Shared by the generator-kind tests: programs print as standalone regression files whose
``_inputs()`` rebuild the program's arrays and whose function gives NumPy's result."""
import numpy as np

from kfuse.fuzz import writer
from kfuse.fuzz.runner import Result, run_numpy


def check_written(programs, tmp_path) -> None:
    for p in programs:
        src = open(writer.write(p, Result("mismatch", "x"), str(tmp_path))).read()
        ns = {}
        exec(compile(src, "<regression>", "exec"), ns)
        args = ns["_inputs"]()
        assert [a.shape for a in args] == [a.shape for a in p.inputs_arrays()]
        want, exc = run_numpy(p)
        if exc is None:
            got = ns[p.fn_name](*args)
            for g, w in zip(got if p.tuple_out else (got,), want if p.tuple_out else (want,)):
                np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
