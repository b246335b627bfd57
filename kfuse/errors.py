"""Exception types of kfuse, and the helper that finds the user's file:line for messages.

Every error raised to the user names the operation and, where the error comes from traced code,
the user's ``file.py:line`` (the innermost frame outside the kfuse package).
"""
from __future__ import annotations

import os
import sys

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


class KfuseError(Exception):
    """Base class of every error kfuse raises on its own account."""


class UnsupportedError(KfuseError, TypeError):
    """kfuse cannot compile this: an operation, argument or dtype it does not support, or Python
    control flow on a traced value. The message names the op and the user's line and says what to
    do instead (a static argument, ``np.where``, ...)."""


# The former name of "cannot be traced" errors: the same type, so one ``except`` catches both.
TraceError = UnsupportedError


class CompileError(KfuseError):
    """A code generator or compiler failed; the message carries the log and the saved source."""


class DeviceError(KfuseError):
    """Arrays on different devices, host mixed with device, or a missing GPU/toolchain."""


def _user_file(fname: str, skip_pkg: str) -> str | None:
    """The base name of ``fname`` if it is a user's file (outside ``skip_pkg``, NumPy, CuPy and
    the import machinery), else None."""
    if not os.path.isabs(fname) and not fname.startswith("<"):
        try:
            fname = os.path.abspath(fname)
        except OSError:             # the working directory is gone: keep the name as it is
            pass
    if not fname.startswith(skip_pkg + os.sep) and "importlib" not in fname and not fname.startswith("<frozen"):
        if os.sep + "numpy" + os.sep not in fname and os.sep + "cupy" + os.sep not in fname:
            return os.path.basename(fname)
    return None


# (file name, package skipped) -> _user_file: every traced op asks for its location, walking
# the same few frames; a relative name (resolved against the working directory) is not kept
_USER_FILES: dict[tuple[str, str], str | None] = {}


def user_location(skip_pkg: str = _PKG_DIR) -> str | None:
    """Return ``"file.py:line"`` of the innermost stack frame outside the kfuse package, if any."""
    frame = sys._getframe(1)
    files = _USER_FILES
    while frame is not None:
        fname = frame.f_code.co_filename
        key = (fname, skip_pkg)
        try:
            base = files[key]
        except KeyError:
            base = _user_file(fname, skip_pkg)
            if (fname.startswith("<") or os.path.isabs(fname)) and len(files) < 4096:
                files[key] = base
        if base is not None:
            return f"{base}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def at(loc: str | None) -> str:
    """Suffix `` (at file.py:12)`` for messages, or empty when the location is unknown."""
    return f" (at {loc})" if loc else ""


class GraphShapeError(KfuseError, ValueError):
    """A captured CUDA graph (``kfuse.capture``) called with arrays of another shape, dtype or layout."""
