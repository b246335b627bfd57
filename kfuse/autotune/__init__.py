"""Autotuning: candidate tile configs per kernel (space), pruning by resource limits and the cost
model (prune), honest timing (bench), search within budgets + persistence (tuner), and the
``kfuse tune`` command (cli). Entry points: :func:`tune_program` and :func:`apply`."""
from .space import TileConfig, space_for
from .targets import apply
from .tuner import MODES, tune_program

__all__ = ["TileConfig", "space_for", "apply", "tune_program", "MODES"]
