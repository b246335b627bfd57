"""Helpers of the random-op tests: the seed a call draws from NumPy's global state, and the
reference interpreter's outputs of a traced graph for given seeds (``trace/reference.py``)."""
from __future__ import annotations

import numpy as np

from kfuse.trace.reference import evaluate


def next_global_seed(state: int) -> np.uint64:
    """The seed a call draws after ``np.random.seed(state)`` (``runtime/seeds.py``)."""
    np.random.seed(state)
    return np.random.randint(0, 2 ** 64, dtype=np.uint64)


def reference(graph, named: dict, seeds: dict) -> list[np.ndarray]:
    """``graph``'s outputs by the NumPy reference: ``named`` the arguments by parameter name,
    ``seeds`` each seed source's value (``""``: NumPy's global state, else a Generator's name)."""
    first = len(graph.inputs) - len(graph.constants)
    values = []
    for k, n in enumerate(graph.inputs):
        if n.attr("seed") is not None:
            values.append(np.asarray(seeds[n.attr("seed")], dtype=np.uint64))
        elif k < first:
            values.append(named[n.attr("name")])
        else:
            values.append(graph.constants[k - first])
    return evaluate(graph, values)


def normal_cdf(x: np.ndarray) -> np.ndarray:
    from math import erf, sqrt
    return 0.5 * (1.0 + np.vectorize(erf)(np.asarray(x, dtype=np.float64) / sqrt(2.0)))


def ks_statistic(samples: np.ndarray, cdf) -> float:
    """The Kolmogorov-Smirnov distance of ``samples`` from the distribution ``cdf``."""
    x = np.sort(np.asarray(samples, dtype=np.float64).ravel())
    n = x.size
    c = cdf(x)
    return float(max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n)))


# the KS distance a sample of n from the distribution exceeds with probability 1e-4
def ks_limit(n: int) -> float:
    return 2.23 / np.sqrt(n)
