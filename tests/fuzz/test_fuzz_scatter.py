"""The generator's ``scatter`` kind (kfuse/fuzz/gen_scatter.py): its programs write at index
positions in every supported form (item assignment with index arrays, augmented, through views,
every ``ufunc.at``, ``np.put`` in each mode, ``np.put_along_axis``) into arguments and copies; they
are valid NumPy (or end in NumPy's IndexError), write one value per position wherever a GPU could
land another (else they are marked CPU-only), keep integer ``ufunc.at`` loops defined, print as
regression files that check the arguments written, and a few hundred run through kfuse on the CPU
backend without a mismatch. The runner compares the arguments a program writes, skips CPU-only
programs on a GPU backend, and compares float ``ufunc.at`` sums as a sum's there only."""
import ast
import functools
import re

import numpy as np
import pytest

from kfuse.fuzz import gen_scatter, generator, runner, shrink
from kfuse.fuzz.program import CPU_ORDER, InputSpec, Program, Step, _evaluate
from kfuse.fuzz.runner import Result, comparison, run_numpy, run_program
from tests.fuzz.writer_check import check_written

SEED, N = 13, 400

# form -> a pattern of a write line (or of the step's expression: "expr:")
FORMS = {
    "assign": r"^v\d+\[[^=]*\] = ", "augmented": r"\] [-+*|&^]= ", "columns": r"^v\d+(\.T)?\[:, ",
    "ellipsis": r"\[\.\.\., ", "two arrays": r"\[:, None\], ", "slice and array": r"^v\d+\[(1:|::-1), ",
    "int and array": r"^v\d+\[-?\d+, ", "new axis": r"\[None, |, None\]",
    "view .T": r"^v\d+\.T\[", "view [1:]": r"^v\d+\[1:\]\[", "view [::-1]": r"^v\d+\[::-1\]\[",
    "at slice key": r"\.at\(v\d+, slice\(", "at tuple key": r"\.at\(v\d+[^,]*, \(",
    "np.put": r"^np\.put\(", "ndarray.put": r"^v\d+\.put\(", "put wrap": r"put\(.*mode='wrap'",
    "put clip": r"put\(.*mode='clip'", "put raise": r"put\(.*mode='raise'",
    "put_along_axis": r"^np\.put_along_axis\(", "put_along_axis argmax": r"put_along_axis\(v\d+, np\.arg(max|min)\(",
    "put_along_axis mask": r"put_along_axis\(v\d+, \(v\d+ > 0\)", "put_along_axis axis=None": r"axis=None\)$",
    "empty index": r"\[\]|np\.zeros\(0", "negative index": r"\[-\d|, -\d", "2-D index": r"\.reshape\(2, ",
    "computed index": r"np\.abs\(|% \d+ - \d+\)|> 0\)\.astype\(np\.intp\)", "reversed index": r"\)\[::-1\]|a\d+\[::-1\]",
    "CPU only": re.escape(CPU_ORDER),
    "into an argument": r"expr:^a\d+$", "into an earlier value": r"expr:^v\d+$",
    "fresh copy": r"expr:(\* 1|_like\(|\.copy\(\)|\.astype\()",
}
FORMS.update({f"{u}.at": rf"^np\.{u}\.at\(" for u in sorted(set().union(*gen_scatter.AT_UFUNCS.values()))})


@functools.cache
def _programs():
    return [generator.generate(SEED, i, favor="scatter") for i in range(N)]


@functools.cache
def _scatter_programs():
    return [p for p in _programs() if gen_scatter.scatter_steps(p)]


def _scatter_steps():
    return [s for p in _scatter_programs() for s in p.steps if s.writes]


def _writes(p):
    """(line, scope before it) of each write line NumPy runs (an error program stops there)."""
    env = {i.name: i.build() for i in p.inputs}
    for s in p.steps:
        scope = dict(env)
        try:
            scope[s.out] = _evaluate(s.expr, env)
            for w in s.writes:
                yield w, scope
                gen_scatter._run(w, scope)
        except Exception:       # noqa: BLE001
            return
        env[s.out] = np.asarray(scope[s.out])


def form_counts(steps) -> dict:
    """How many write lines (or steps) of ``steps`` show each of FORMS."""
    counts = dict.fromkeys(FORMS, 0)
    for s in steps:
        for name, pat in FORMS.items():
            if pat.startswith("expr:"):
                counts[name] += bool(re.search(pat[5:], s.expr))
            else:
                counts[name] += sum(bool(re.search(pat, w)) for w in s.writes)
    return counts


def test_scatters_appear():
    assert "scatter" in generator.KINDS
    assert len(_scatter_programs()) >= N // 2, len(_scatter_programs())
    plain = [generator.generate(SEED, i) for i in range(300)]       # without --kind scatter
    assert sum(gen_scatter.scatter_steps(p) > 0 for p in plain) >= 15


def test_every_form_is_drawn():
    counts = form_counts(_scatter_steps())
    missing = [k for k, n in counts.items() if not n]
    assert not missing, (missing, counts)


def _at_lines():
    """(ufunc, the array's dtype, b's dtype, the line, scope) of each ufunc.at line NumPy runs."""
    for p in _scatter_programs():
        for w, scope in _writes(p):
            m = re.match(r"np\.(\w+)\.at\((.+)$", w)
            if not m:
                continue
            args = ast.parse(w).body[0].value.args
            x = np.asarray(_evaluate(ast.unparse(args[0]), scope))
            b = np.asarray(_evaluate(ast.unparse(args[2]), scope))
            yield m.group(1), x.dtype, b.dtype, w, scope


def test_at_loop_dtypes_differ_from_the_arrays():
    """``ufunc.at`` runs in NumPy's loop dtype: int arrays with float operands, float16 with
    float32, int8 that wraps."""
    seen = {"int with float": 0, "float16 with float32": 0, "int8 wraps": 0}
    for ufunc, xdt, bdt, w, scope in _at_lines():
        seen["int with float"] += xdt.kind in "iu" and bdt.kind == "f"
        seen["float16 with float32"] += xdt == np.float16 and bdt == np.float32
        if xdt == np.int8 and ufunc in ("add", "subtract", "multiply"):
            wide = dict(scope)
            target = ast.unparse(ast.parse(w).body[0].value.args[0])
            name = re.match(r"v\d+", target).group(0)
            wide[name] = scope[name].astype(np.int64)
            a, b = dict(scope), wide
            a[name] = a[name].copy()
            gen_scatter._run(w, a)
            gen_scatter._run(w, b)
            seen["int8 wraps"] += bool((a[name] != b[name]).any())
    assert all(seen.values()), seen


def test_integer_at_in_floats_stays_in_range():
    """An integer array's ufunc.at computed in floats is drawn only if every step's value casts
    back defined: finite and in range (``np.add.at(int8 [127], [0, 0], 0.5)`` is 127.5 then 127.5,
    in range; ``1.5`` reaches 128.5)."""
    x = np.array([127, 0], np.int8)
    ok = gen_scatter._at_defined("add", x, np.array([0, 0]), np.array([0.5, 0.5]), np.dtype("float64"))
    assert ok and not gen_scatter._at_defined("add", x, np.array([0, 0]), np.array([1.5, 0.0]), np.dtype("float64"))
    assert not gen_scatter._at_defined("maximum", x, np.array([1]), np.array([np.nan]), np.dtype("float32"))
    u = np.array([2 ** 64 - 1], np.uint64)          # np.fmax.at(u, [0], 0) runs in float64: 2**64
    assert gen_scatter._loop_dtype("fmax", u.dtype, np.asarray(0)) == np.float64
    assert not gen_scatter._at_defined("fmax", u, np.array([0]), np.array([0.0]), np.dtype("float64"))
    assert gen_scatter._at_defined("add", u, np.array([0]), np.array([1]), np.dtype("uint64"))


def test_programs_are_valid_numpy():
    """NumPy runs them; the error programs mostly end in an index out of range (IndexError)."""
    errors = [(p, run_numpy(p)[1]) for p in _scatter_programs()]
    errors = [(p, e) for p, e in errors if e is not None]
    assert len(errors) <= len(_scatter_programs()) // 10, [(p.describe(), e) for p, e in errors[:3]]
    assert any(isinstance(e, IndexError) and p.steps[-1].writes for p, e in errors), "no write out of range"


def _assignment_values(w, scope):
    """(positions, values) of an item assignment ``T[key] = V`` with index arrays, or None."""
    tree = ast.parse(w).body[0]
    if not isinstance(tree, ast.Assign) or not isinstance(tree.targets[0], ast.Subscript):
        return None
    sub = tree.targets[0]
    base = np.asarray(_evaluate(ast.unparse(sub.value), scope))
    key = _evaluate(f"_k[{ast.get_source_segment(w, sub.slice)}]", {**scope, "_k": _KeyOf()})
    if not any(isinstance(k, (list, np.ndarray)) for k in (key if isinstance(key, tuple) else (key,))):
        return None
    # positions: a fresh array of positions, viewed as the line views its target
    name = re.match(r"v\d+", w).group(0)
    pos = np.arange(scope[name].size).reshape(scope[name].shape)
    view = ast.unparse(sub.value).replace(name, "_p", 1)
    positions = np.asarray(_evaluate(view, {**scope, "_p": pos}))[key]
    with np.errstate(all="ignore"):
        values = np.asarray(_evaluate(ast.unparse(tree.value), scope)).astype(base.dtype)
    return positions, np.broadcast_to(values, positions.shape)


class _KeyOf:
    def __getitem__(self, key):
        return key


def test_assignments_land_one_value_per_position():
    """Where a GPU lands any one of a repeated position's values (item assignment), the program
    writes one value there, or is marked CPU-only (its lines end in CPU_ORDER); such marks are
    rare."""
    checked = 0
    for p in _scatter_programs():
        for w, scope in _writes(p):
            if w.endswith(CPU_ORDER):
                continue
            try:
                pv = _assignment_values(w, scope)
            except (ValueError, IndexError, TypeError):
                continue            # leading 1-dims NumPy drops, a mask: not checked here
            if pv is None:
                continue
            checked += 1
            positions, values = (a.reshape(-1) for a in pv)
            for q in np.unique(positions):
                vals = values[positions == q]
                assert (vals.view(np.uint8).reshape(len(vals), -1) == vals[:1].view(np.uint8)).all(), w
    assert checked >= 50
    marked = sum(p.cpu_only() for p in _scatter_programs())
    assert 0 < marked <= len(_scatter_programs()) // 8, marked


def test_conflicts_reads_bit_patterns():
    d = gen_scatter._Draw("", "", np.array([0.0, -0.0]))
    assert gen_scatter._conflicts(np.array([1, 1]), d)               # +0.0 and -0.0 differ
    assert not gen_scatter._conflicts(np.array([1, 2]), d)
    same = gen_scatter._Draw("", "", np.array([np.nan, np.nan]))
    assert not gen_scatter._conflicts(np.array([3, 3]), same)
    assert not gen_scatter._conflicts(np.array([3, 3]), gen_scatter._Draw("", "", None, order_free=True))
    cyc = gen_scatter._Draw("", "", np.array([7, 8]), cyclic=True)
    assert gen_scatter._conflicts(np.array([0, 1, 1]), cyc) and not gen_scatter._conflicts(np.array([0, 1, 0]), cyc)


def test_writer_prints_scatter_programs(tmp_path):
    check_written(_scatter_programs()[:20], tmp_path)


def _add_at_program(dtype="float32", cpu_order=False):
    a0 = InputSpec("a0", dtype, (3,), (1.0, 2.0, 3.0))
    line = "np.add.at(v0, [0, 0, 2], 1.0)" + (f"  {CPU_ORDER}" if cpu_order else "")
    return Program(0, 0, (a0,), (Step("v0", "a0", (line,)),), ("v0",))


def test_runner_compares_the_arguments_written(monkeypatch):
    p = _add_at_program()
    assert p.steps[0].in_place and shrink.dce(Program(0, 0, p.inputs, p.steps, ())).steps
    assert run_program(p, "cpu").status == "ok"
    import kfuse

    def no_write(fn, backend):          # a kfuse that returns the result but leaves a0 alone
        return lambda a0: np.array([3.0, 2.0, 4.0], np.float32)
    monkeypatch.setattr(kfuse, "jit", no_write)
    r = run_program(p, "cpu")
    assert r.status == "mismatch" and "argument a0 after the call" in r.detail, r


def test_gpu_comparison_rules():
    """A float np.add.at is compared as a sum on a GPU (atomics' order), exactly on the CPU;
    a CPU-only program is skipped on a GPU without running."""
    p = _add_at_program()
    assert comparison(p, "cpu") == (False, True)
    assert comparison(p, "cuda")[0] and comparison(p, "numba-cuda")[0]
    mx = Program(0, 0, p.inputs, (Step("v0", "a0", ("np.maximum.at(v0, [0, 0], a0[:2])",)),), ("v0",))
    assert comparison(mx, "cpu") == (False, True) and comparison(mx, "cuda") == (False, False)
    r = run_program(_add_at_program(cpu_order=True), "cuda")
    assert r.status == "unsupported" and "CPU only" in r.op
    assert runner.unsupported_name(Exception(
        "kfuse: np.multiply.at into a float32 array has no exact atomic on the numba-cuda backend")) \
        == "np.multiply.at into a float32 array"


def test_generator_undoes_a_rejected_in_place_write(monkeypatch):
    """A step writing into an argument that NumPy rejects (and the generator draws again) leaves
    env's argument as it was."""
    g = generator._Gen(3, 0, 5)
    g.inputs, g.env = [], {"a0": np.zeros(3)}
    draws = iter([("a0", ("v0[[0]] = 5.0", "v0[[7]] = 1.0"))])
    g.kinds = lambda: {"scatter": lambda: next(draws, None)}
    g.kind_weights = np.array([1.0])
    monkeypatch.setattr(generator, "ERROR_CHANCE", 0.0)      # redrawn, not kept as an error
    g.step()
    assert not g.steps and (g.env["a0"] == 0).all()


def _run_through_kfuse(programs):
    results = [(p, run_program(p, "cpu")) for p in programs]
    bad = [f"{p.describe()}\n{r.status}: {r.detail[:400]}" for p, r in results if r.failed]
    assert not bad, "\n\n".join(bad)
    unsupported = [r.op for _, r in results if r.status == "unsupported"]
    assert len(unsupported) <= len(programs) // 10, unsupported


@pytest.mark.parametrize("half", [0, 1])
def test_scatter_programs_run_through_kfuse(half):
    """80 scatter programs (two halves, for two workers): 0 mismatches, 0 crashes on the CPU
    backend, where scatters are NumPy's values bit for bit (no sum tolerance: comparison()).
    Longer campaigns: ``kfuse fuzz --kind scatter`` (docs/FUZZING.md)."""
    _run_through_kfuse(_scatter_programs()[half:80:2])
