"""The generator's ``scan`` kind (kfuse/fuzz/gen_scan.py): its programs scan in every supported form
(cumsum/cumprod as functions and methods, the nan-scans, cumulative_sum/cumulative_prod, the
ufuncs' accumulate), along axes None/positive/negative/of length 1, with ``dtype=``, scans of
computed values and values computed from scans; they are valid NumPy, keep float products mostly
finite, print as standalone regression files, and a few run through kfuse on the CPU backend like
every other fuzz program. The calls kfuse got wrong when this kind was written are drawn like the
rest (``docs/FUZZING.md`` 35; tests/regressions/test_fuzz_scan_tracing_edges.py)."""
import ast
import functools
import re

import numpy as np

from kfuse.fuzz import gen_scan, generator
from kfuse.fuzz.program import _evaluate
from kfuse.fuzz.runner import run_numpy, run_program
from tests.fuzz.writer_check import check_written

SEED, N = 13, 1000

FORMS = {
    "cumsum": r"np\.cumsum\(", "cumsum method": r"(?<!np)\.cumsum\(",
    "cumprod": r"np\.cumprod\(", "cumprod method": r"(?<!np)\.cumprod\(",
    "nancumsum": r"np\.nancumsum\(", "nancumprod": r"np\.nancumprod\(",
    "cumulative_sum": r"np\.cumulative_sum\(", "cumulative_prod": r"np\.cumulative_prod\(",
    "add.accumulate": r"np\.add\.accumulate\(", "multiply.accumulate": r"np\.multiply\.accumulate\(",
    "maximum.accumulate": r"np\.maximum\.accumulate\(", "minimum.accumulate": r"np\.minimum\.accumulate\(",
    "logical_or.accumulate": r"np\.logical_or\.accumulate\(",
    "logical_and.accumulate": r"np\.logical_and\.accumulate\(",
}


@functools.cache
def _programs():
    # scans about half the steps (kfuse fuzz --kind scan): the forms below do not hang on the
    # other kinds' weights (a new kind changes every seed's programs)
    return [generator.generate(SEED, i, favor="scan") for i in range(N)]


@functools.cache
def _scan_programs():
    return [p for p in _programs() if gen_scan.scan_steps(p)]


def _scan_exprs():
    return [s.expr for p in _scan_programs() for s in p.steps if gen_scan.step_scans(s.expr)]


def _walk(p):
    """(step, value, names so far) of each step NumPy runs (an error program stops before its
    last step)."""
    env = {i.name: i.build() for i in p.inputs}
    for s in p.steps:
        try:
            env[s.out] = np.asarray(s.run(env))
        except Exception:       # noqa: BLE001
            return
        yield s, env[s.out], env


def test_scans_appear():
    assert len(_scan_programs()) >= N * 8 // 100, len(_scan_programs())
    assert generator.scan_steps is gen_scan.scan_steps
    assert set(FORMS) == set(gen_scan.FORMS)


def test_every_form_is_drawn():
    text = "\n".join(_scan_exprs())
    missing = [k for k, v in FORMS.items() if not re.search(v, text)]
    assert not missing, missing
    features = {
        "axis=None": r"(cumsum|cumprod|cumulative_sum|cumulative_prod)\(.*axis=None",
        "axis left out": r"(cumsum|cumprod|accumulate)\([\w.]*\)",
        "negative axis": r"(cumsum|cumprod|accumulate)\(.*axis=-\d",
        "positive axis": r"(cumsum|cumprod|accumulate)\(.*axis=\d",
        "positional axis": r"(cumsum|cumprod|accumulate)\([\w.\[\]]+, -?\d[,)]",
        "int8 wrap": r"dtype=np\.int8", "float16 accumulator": r"dtype=np\.float16",
        "float16 values": r"astype\(np\.float16\)", "include_initial": "include_initial=True",
        "bool values": r"accumulate\(\(\w+ [>!<]=? [01]\)",
        "NaN values": r"np\.nan|np\.sqrt\(|np\.log\(", "length-1 axis": r"\[None\]|\[:, None\]|keepdims=True",
        "scan of a reduction": r"(cumsum|cumprod|accumulate)\(\w+\.(sum|mean|max|prod)\(axis",
        "tamed product": r"\* 0\.5 \+ 0\.75\)", "scaled scan": r"\) / 3\)",
        "reversed scan": r"\)\[::-1\]", "reduction of a scan": r"\)\.(sum|mean|any|max|min|prod)\(",
        "scan of a scan": r"(cumsum|accumulate)\(np\.(cum|nancum|add\.|multiply\.|max|min|logical)",
    }
    missing = [k for k, v in features.items() if not re.search(v, text, re.M)]
    assert not missing, missing
    assert any(_exclusive(e) for e in _scan_exprs()), "no exclusive scan (S - x)"


def _exclusive(expr):
    """Whether ``expr`` is ``scan(x, ...) - x`` (or ``x.cumsum(...) - x``)."""
    t = ast.parse(expr, mode="eval").body
    if not (isinstance(t, ast.BinOp) and isinstance(t.op, ast.Sub) and isinstance(t.left, ast.Call)):
        return False
    call = t.left
    scanned = call.args[0] if call.args and isinstance(call.func.value, (ast.Name, ast.Attribute)) \
        and ast.unparse(call.func.value) in ("np", "np.add", "np.multiply", "np.maximum", "np.minimum") \
        else call.func.value
    return ast.unparse(scanned) == ast.unparse(t.right)


def test_integer_scans_wrap():
    """Some dtype=np.int8 scans wrap: their values differ from the same scan in int64."""
    wrapped = 0
    for p in _scan_programs():
        for s, _, env in _walk(p):
            m = re.search(r"((?:np\.)?[\w.]*(?:cumsum|cumprod|accumulate)\(.*?dtype=)np\.int8\)", s.expr)
            if m:
                try:
                    a = np.asarray(_evaluate(m.group(0), env))
                    b = np.asarray(_evaluate(m.group(1) + "np.int64)", env))
                except Exception:       # noqa: BLE001 - the regex cut an expression badly
                    continue
                wrapped += bool(a.shape == b.shape and (a != b).any())
    assert wrapped >= 2, wrapped


def test_scanned_axes_of_length_one():
    """Some scans run along an axis of length 1 (the scan is the cast input)."""
    ones = 0
    for p in _scan_programs():
        for s, _, env in _walk(p):
            m = re.fullmatch(r"np\.cumsum\((.+), axis=(-?\d)\)", s.expr)
            if m:
                try:
                    v = np.asarray(_evaluate(m.group(1), env))
                except Exception:       # noqa: BLE001
                    continue
                ones += v.ndim > 0 and v.shape[int(m.group(2))] == 1
    assert ones, "no cumsum along an axis of length 1"


def test_scan_programs_are_valid_numpy():
    """Only the generator's rare error programs raise in NumPy (their last step)."""
    bad = [p for p in _scan_programs() if run_numpy(p)[1] is not None]
    assert len(bad) <= len(_scan_programs()) // 10, [p.describe() for p in bad[:3]]


def test_float_products_stay_mostly_finite():
    """A float product scan's terms are moved near 1: most such steps hold no inf."""
    total = inf = 0
    for p in _scan_programs():
        for s, v, _ in _walk(p):
            if re.search(r"cumprod|cumulative_prod|multiply\.accumulate", s.expr) and v.dtype.kind == "f" \
                    and v.size:
                total += 1
                inf += bool(np.isinf(v).any())
    assert total >= 10 and inf <= total // 4, (inf, total)


def test_nan_inputs_reach_max_min_and_nan_scans():
    seen = 0
    for p in _scan_programs():
        for s, _, env in _walk(p):
            m = re.match(r"np\.(nancumsum|nancumprod|maximum\.accumulate|minimum\.accumulate)"
                         r"\((np\.\w+\(.*?\))[,)]", s.expr)
            if m:
                try:
                    seen += bool(np.isnan(np.asarray(_evaluate(m.group(2), env), dtype=float)).any())
                except Exception:       # noqa: BLE001
                    continue
    assert seen >= 2, seen


def test_edge_forms_are_drawn():
    """A 0-d value's scans, ``ufunc.accumulate`` with ``axis=None`` and with a one-axis tuple
    (kfuse got these wrong when the kind was written: docs/FUZZING.md 35)."""
    text = "\n".join(s.expr for p in _scan_programs() for s in p.steps)
    assert re.search(r"\.accumulate\([^()]*(\([^()]*\))?[^()]*axis=None", text)
    assert re.search(r"\.accumulate\(.*axis=\(-?\d,\)", text)
    assert re.search(r"np\.cumulative_(sum|prod)\(", text)


def test_writer_prints_scan_programs(tmp_path):
    check_written(_scan_programs()[:20], tmp_path)


def _covering(programs, n):
    """Programs that cover every form (the first one with a form not yet covered), then the
    first others up to ``n``."""
    out, left = [], set(FORMS)
    for p in programs:
        text = "\n".join(s.expr for s in p.steps)
        new = {k for k in left if re.search(FORMS[k], text)}
        if new:
            out.append(p)
            left -= new
    assert not left, left
    return out + [p for p in programs if p not in out][:max(0, n - len(out))]


def test_a_few_scan_programs_run_through_kfuse():
    """About 0.3 s a program with a cold kernel cache (2 cores)."""
    ps = _covering(_scan_programs(), 20)
    assert len(ps) == 20
    results = [(p, run_program(p, "cpu")) for p in ps]
    bad = [f"{p.describe()}\n{r.status}: {r.detail[:400]}" for p, r in results if r.status != "ok"]
    assert not bad, "\n\n".join(bad)
