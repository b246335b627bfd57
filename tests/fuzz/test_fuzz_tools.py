"""The fuzzer's own parts, without compiling: determinism, rendering, shrinking, writing."""
import re

import numpy as np

from kfuse.fuzz import compare, generator, shrink, writer
from kfuse.fuzz.runner import Result, run_numpy


def test_generate_is_deterministic_and_runs_on_numpy():
    for i in range(40):
        p = generator.generate(7, i)
        assert p.describe() == generator.generate(7, i).describe()
        compile(p.source(), "<fuzz>", "exec")
        for spec in p.inputs:
            a = spec.build()
            assert a.dtype == np.dtype(spec.dtype)
            assert eval(spec.source(), {"np": np, "nan": float("nan"), "inf": float("inf")}).shape == a.shape
        run_numpy(p)


def test_generator_covers_the_brief():
    text = "\n".join(generator.generate(11, i).describe() for i in range(300))
    for needle in ("::-", ".transpose(", "keepdims=True", "@", "nan", "-inf", "-0.0", "np.where(",
                   "argmax", "var", "std", "astype(np.int", "float16", "uint64", "np.bool",
                   "reshape(())"):
        assert needle in text, needle


def _first_step_feeds_an_output(p) -> bool:
    """Whether step 0's result reaches an output (the shrinker drops dead steps unasked)."""
    live = set(p.outputs)
    for s in reversed(p.steps):
        if s.out in live:
            live |= set(re.findall(r"\b[av]\d+\b", s.expr))
    return p.steps[0].out in live


def test_shrink_drops_what_does_not_matter():
    # the first program of seed 5 with 4+ steps whose first step matters (generator changes move it)
    p = next(q for q in (generator.generate(5, i, max_steps=5) for i in range(200))
             if len(q.steps) >= 4 and _first_step_feeds_an_output(q))
    target = p.steps[0].out

    def still_fails(c):       # "fails" while the first step's expression is still there
        return any(s.expr == p.steps[0].expr for s in c.steps)
    out = shrink.shrink(p, still_fails)
    assert len(out.steps) == 1 and out.steps[0].expr == p.steps[0].expr, out.describe()
    assert target


def test_compare_checks_signed_zeros_and_dtype():
    a = np.array([0.0, 1.0], np.float32)
    assert compare.compare(a, a.copy()) is None
    assert "signed zero" in compare.compare(a, np.array([-0.0, 1.0], np.float32))
    assert "dtype" in compare.compare(a, a.astype(np.float64))
    assert compare.compare(np.array([np.nan]), np.array([np.nan])) is None


def test_writer_renders_a_test(tmp_path):
    p = generator.generate(1, 34)
    path = writer.write(p, Result("mismatch", "output 0: example"), str(tmp_path))
    src = open(path).read()
    compile(src, path, "exec")
    assert "def test_fuzz_cpu_s1_p34" in src and "kfuse.jit(fuzz_fn" in src


def test_zero_sign_is_not_checked_where_numpy_leaves_it_open(tmp_path):
    # np.fmax(-0.0, 0.0) is -0.0 in NumPy's scalar loop and +0.0 in its SIMD loop (one array can
    # hold both): programs with fmax/fmin or max/min reductions compare values, not zero signs
    a = np.array([0.0, 1.0], np.float32)
    assert compare.compare(a, np.array([-0.0, 1.0], np.float32), zero_sign=False) is None
    assert "fmax" in compare.ZERO_SIGN_UNSPECIFIED and "maximum" not in compare.ZERO_SIGN_UNSPECIFIED
    p = generator.Program(0, 0, (generator.InputSpec("a0", "float32", (2,), (-0.0, 0.0)),),
                          (generator.Step("v0", "np.fmax(a0, np.float32(0.0))"),), ("v0",))
    assert p.ops() & compare.ZERO_SIGN_UNSPECIFIED
    src = open(writer.write(p, Result("mismatch", "x"), str(tmp_path))).read()
    assert "if False and e.dtype.kind" in src
    q = generator.Program(0, 1, p.inputs, (generator.Step("v0", "np.maximum(a0, np.float32(0.0))"),), ("v0",))
    assert "if True and e.dtype.kind" in open(writer.write(q, Result("mismatch", "x"), str(tmp_path))).read()


def test_float_accumulators_only_where_integers_convert_exactly():
    """A generated sum/prod asks for a float dtype only when every integer input converts exactly
    (seed 27 #381 summed int64 extremes in float64: their cancellation is order-dependent)."""
    from kfuse.fuzz.generator import _accumulators, generate
    assert _accumulators("int64") == _accumulators("uint64") == ("int64",)
    assert _accumulators("int32") == ("int64", "float64")
    assert set(_accumulators("int16")) == set(_accumulators("bool")) == {"int64", "float64", "float32"}
    assert _accumulators("float32") == _accumulators("float64") == ("float64", "float32")   # no float->int
    seen = 0          # and what the generator writes keeps to it: no float dtype= for 64-bit ints
    for i in range(1200):
        p = generate(27, i)
        env = {x.name: x.dtype for x in p.inputs}
        for st in p.steps:
            m = re.match(r"(?:np\.(?:sum|prod)\((\w+),|(\w+)\.(?:sum|prod)\().*dtype=np\.(\w+)", st.expr)
            if m and env.get(m.group(1) or m.group(2)) in ("int64", "uint64"):
                seen += 1
                assert m.group(3) == "int64", st.expr
    assert seen
