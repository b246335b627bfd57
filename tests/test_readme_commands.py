"""Every ``kfuse`` command line of the README runs as written in ``sh`` and in ``zsh`` (skipped
where zsh is absent): specs with brackets are quoted, so zsh's globbing and a ``sh`` glob that
matches a file (``f324`` here) leave them unchanged. A ``kfuse`` on PATH runs this checkout."""
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def readme_cli_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```(?:bash|sh|console)\n(.*?)```", text, re.S)
    return [l.strip() for b in blocks for l in b.splitlines() if l.strip().startswith("kfuse ")]


def _has_nvrtc() -> bool:
    try:
        from cuda.bindings import nvrtc  # noqa: F401
        return True
    except Exception:
        return False


@pytest.fixture(scope="module")
def shell_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("readme")
    bin_dir = d / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kfuse"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m kfuse.cli \"$@\"\n")
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    (d / "examples").symlink_to(ROOT / "examples")
    for name in ("f324", "f328", "f326", "f321", "i64"):      # what an unquoted spec's glob matches
        (d / name).write_text("")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(ROOT),
               KFUSE_CACHE_DIR=str(d / "cache"))
    return d, env


def test_readme_has_cli_lines_with_quoted_specs():
    lines = readme_cli_lines()
    assert len(lines) >= 5, lines
    for line in lines:
        assert not re.search(r"(?<!')\b[a-z]+\d*\[[0-9,]*\]", line), f"unquoted spec: {line}"
        assert " #" not in line, f"a comment is an argument in interactive zsh: {line}"
        assert not re.search(r"\s[\[|]|\|", line), f"not a runnable command: {line}"


@pytest.mark.parametrize("shell", ["sh", "zsh"])
@pytest.mark.parametrize("line", readme_cli_lines())
def test_readme_cli_line_runs(shell_dir, shell, line):
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} not installed")
    if re.search(r"dump-(cuda|ptx)|--stage (cuda|ptx)", line) and not _has_nvrtc():
        pytest.skip("NVRTC not installed (the cuda extra)")
    d, env = shell_dir
    r = subprocess.run([shell, "-c", line], cwd=d, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{shell} -c {line!r}:\n{r.stderr[-2000:]}"
