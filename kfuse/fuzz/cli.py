"""``kfuse fuzz``: generate N seeded programs, run each through kfuse and NumPy, shrink and write
every failure, and print ``programs N, mismatches M, crashes C, unsupported U (ops...)``.

Program ``i`` of seed ``S`` is reproducible on its own: ``--seed S --start i --n 1``.
Run as ``python3 -m kfuse.fuzz.cli`` (``kfuse fuzz`` delegates to :func:`main`).
"""
from __future__ import annotations

import argparse
import collections
import sys
import time

from .generator import generate
from .runner import run_program
from .shrink import shrink
from .writer import write


@dataclass_like := None  # noqa: E305 - placeholder removed below
