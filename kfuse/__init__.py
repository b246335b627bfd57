"""kfuse: a JIT kernel-fusion compiler for NumPy-style array code.

Public API: :func:`jit`, :func:`explain`, :mod:`config`, and the error types.
"""
from . import config
from .api import JitFunction, explain, jit
from .errors import CompileError, DeviceError, KfuseError, TraceError, UnsupportedError

__version__ = "0.1.0"
__all__ = ["jit", "explain", "config", "JitFunction", "KfuseError", "UnsupportedError",
           "TraceError", "CompileError", "DeviceError", "__version__"]
