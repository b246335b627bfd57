"""Differential fuzzer: seeded random NumPy-style programs run through ``kfuse.jit`` and through
NumPy, compared with the project's tolerance table; failures are shrunk and written as pytest files.

``generator`` (programs), ``runner`` (run + classify), ``compare`` (the tolerance table, loaded
from ``kfuse/testing.py``), ``shrink``, ``writer``, ``cli`` (``kfuse fuzz``).
"""
