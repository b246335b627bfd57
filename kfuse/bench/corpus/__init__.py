"""The corpus of real workloads (issue 30): NumPy-style functions as users write them, by category
(``transformer``, ``vision``, ``optim``, ``losses``, ``quant``, ``preprocess``, ``science``,
``layouts``), each written once against an array namespace ``xp`` (see ``base.py``).

``ENTRIES`` is every :class:`~kfuse.bench.corpus.base.Entry`; :func:`cases` picks them for a run
(size class, ``--filter`` substring, ``--shard K/N``). ``kfuse bench --suite corpus`` runs them
(``kfuse.bench.corpus_suite``).
"""
from __future__ import annotations

from . import layouts, losses, optim, preprocess, quant, science, transcendental, transformer, vision
from .base import CATEGORIES, SIZES, TOLERANCE_CLASSES, Arg, CorpusCase, Entry, cast, reference_mode

# The patterns of issue 30's table, at its sizes: first in every run (a time budget that runs out
# skips later entries' slow-compiling peers first).
ISSUE_PATTERNS = ("standardize_columns", "softmax_axis0", "groupnorm_nchw", "exp_transpose_add", "tanh_bias_odd",
                  "geglu_f16_halves", "rotary_3d", "cross_entropy_32000", "residual_layernorm_f16")
_ALL = (transformer.ENTRIES + vision.ENTRIES + optim.ENTRIES + losses.ENTRIES + quant.ENTRIES
        + preprocess.ENTRIES + science.ENTRIES + layouts.ENTRIES + transcendental.ENTRIES)
ENTRIES: tuple[Entry, ...] = tuple(sorted(_ALL, key=lambda e: e.name not in ISSUE_PATTERNS))
BY_NAME = {e.name: e for e in ENTRIES}


def select(filter: str | None = None, shard: str | None = None, device: str | None = None) -> list[Entry]:
    """Entries whose name, category or a tag contains one of the comma-separated substrings of
    ``filter`` (all when None; ``"issue"``: the issue's nine patterns), then the K-th of N round-robin shards (``shard="1/3"``)."""
    out = list(ENTRIES)
    if filter == "issue":
        return [e for e in out if e.name in ISSUE_PATTERNS]
    if filter:
        keys = [k.strip().lower() for k in filter.split(",") if k.strip()]
        out = [e for e in out if any(k in e.name.lower() or k == e.category or any(k in t for t in e.tags)
                                     for k in keys)]
    if shard:
        k, n = (int(x) for x in shard.split("/"))
        if not 1 <= k <= n:
            raise ValueError(f"--shard {shard}: K must be in 1..N")
        out = out[k - 1::n]
    return out


def cases(size: str, filter: str | None = None, shard: str | None = None) -> list[CorpusCase]:
    """One :class:`CorpusCase` per selected entry at size class ``size`` (gpu, cpu, tiny)."""
    if size not in SIZES:
        raise ValueError(f"size class must be one of {SIZES}, got {size!r}")
    return [e.case(size) for e in select(filter, shard)]


__all__ = ["ENTRIES", "ISSUE_PATTERNS", "BY_NAME", "CATEGORIES", "SIZES", "TOLERANCE_CLASSES", "Arg", "CorpusCase", "Entry",
           "cast", "reference_mode", "select", "cases"]
