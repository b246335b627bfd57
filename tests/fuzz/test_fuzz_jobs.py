"""``kfuse fuzz --jobs``: worker processes run the same programs as a serial run (program i is
built from the seed alone) and the summary adds up to the serial one."""
import subprocess
import sys

from kfuse.fuzz import cli
from kfuse.fuzz.runner import Result

SEED, START, N = 2, 120, 6        # a few CPU programs: cheap with a warm kernel cache


def test_chunks_cover_the_range_once():
    for start, n, jobs in ((0, 1, 4), (5, 7, 2), (0, 2000, 12), (100, 333, 14)):
        ch = cli._chunks(start, n, jobs)
        assert [i for c in ch for i in c] == list(range(start, start + n))
        assert max(len(c) for c in ch) <= 25


def test_summary_add_and_line_order():
    a, b = cli.Summary(programs=3, mismatches=1), cli.Summary(programs=2, crashes=1, unsupported=2)
    a.unsupported_ops.update({"np.dot": 1})
    b.unsupported_ops.update({"matmul": 1, "np.dot": 1})
    b.failures.append((7, Result("crash", "x", exc_type="ValueError"), None))
    a.add(b)
    assert a.line() == "programs 5, mismatches 1, crashes 1, unsupported 2 (np.dot x2, matmul x1)"
    assert [f[0] for f in a.failures] == [7]


def test_jobs_gives_the_serial_summary(tmp_path):
    serial = cli.fuzz(N, SEED, "cpu", out=str(tmp_path / "s"), start=START)
    par = cli.fuzz(N, SEED, "cpu", out=str(tmp_path / "p"), start=START, jobs=2)
    assert par.line() == serial.line()
    assert [(i, r.status) for i, r, _ in par.failures] == [(i, r.status) for i, r, _ in serial.failures]


def test_cli_jobs_exit_status():
    r = subprocess.run([sys.executable, "-m", "kfuse.fuzz.cli", "--seed", str(SEED), "--start",
                        str(START), "--n", "3", "--jobs", "2"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1].startswith("programs 3, mismatches 0, crashes 0")


def test_time_limit_leaves_programs_out(tmp_path):
    s = cli.fuzz(5, SEED, "cpu", start=START, time_limit=1e-9)
    assert s.programs == 0 and [list(r) for r in s.not_run] == [list(range(START, START + 5))]
    assert cli.main(["--seed", str(SEED), "--start", str(START), "--n", "2", "--time-limit", "1e-9"]) == 2


def test_watchdog_records_a_hung_program_and_exits(tmp_path):
    code = ("import sys, time\nfrom kfuse.fuzz import cli, generator\n"
            "cli.run_program = lambda p, b: time.sleep(30)\n"
            f"cli._Watchdog(0.5, {str(tmp_path)!r}).run(generator.generate(2, 7), 'cpu')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 70 and (tmp_path / "7").exists(), r.stderr
    assert "[7] crash: ran past" in r.stderr
