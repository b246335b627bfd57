"""The trace layer: runs a NumPy-style function once on :class:`Tracer` proxies and records an
``ir.Graph`` (``trace_function``); ``reference.evaluate`` interprets a graph with NumPy."""
from .core import Tracer
from .tracer import trace_function

__all__ = ["Tracer", "trace_function"]
