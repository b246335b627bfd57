"""kfuse: a JIT kernel-fusion compiler for NumPy-style array code.

Public API: :func:`jit`, :func:`explain`, :func:`capture` (CUDA graphs), :mod:`config`, and the
error types.
"""
from . import config
from .api import JitFunction, explain, jit
from .errors import CompileError, DeviceError, GraphShapeError, KfuseError, TraceError, UnsupportedError
from .runtime.cuda_graph import CapturedStep, capture
from .runtime.keys import KFUSE_VERSION as __version__
__all__ = ["jit", "explain", "capture", "config", "JitFunction", "CapturedStep", "KfuseError",
           "UnsupportedError", "TraceError", "CompileError", "DeviceError", "GraphShapeError", "__version__"]
