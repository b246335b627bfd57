"""The fuzzer's own parts, without compiling: determinism, rendering, shrinking, writing."""
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


def test_shrink_drops_what_does_not_matter():
    p = generator.generate(5, 3, max_steps=5)
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
