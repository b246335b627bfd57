"""Probe helper: kfuse's CUDA launcher made to build one-pass elementwise kernels (a grid covering
the domain once, no grid-stride loop) for whatever tile a probe asks, where the runtime keeps the
loop (1 unit a thread loops unless the device's StreamTile says one pass). Used by
``tile_probe.py`` and ``ptx_bisect.py``; an experiment helper, not a test."""
import contextlib

from kfuse.runtime import cuda as rc


@contextlib.contextmanager
def one_pass_grids(units: int, on: bool = True):
    """Within the block (when ``on``), a launch whose grid covers ``units`` elements once is
    built exact (``Variant.exact``)."""
    covers = rc._Launcher._covers
    if on:
        rc._Launcher._covers = lambda self, v, grid: grid * v.block * v.ept * v.vec == units
    try:
        yield
    finally:
        rc._Launcher._covers = covers
