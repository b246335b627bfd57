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


# id of a code object -> (the code object, kept so that its id is not reused; _user_file of its
# file): every traced op asks for its location, walking the same few frames (a code object's own
# hash reads its contents); a relative file name (resolved against the working directory) is not kept
_USER_FILES: dict[int, tuple] = {}
_UNKNOWN = object()
_NOT_SEEN = (None, _UNKNOWN)


def user_location(skip_pkg: str = _PKG_DIR) -> str | None:
    """Return ``"file.py:line"`` of the innermost stack frame outside the kfuse package, if any."""
    frame = sys._getframe(1)
    files = _USER_FILES if skip_pkg == _PKG_DIR else {}
    while frame is not None:
        code = frame.f_code
        base = files.get(id(code), _NOT_SEEN)[1]
        if base is _UNKNOWN:
            fname = code.co_filename
            base = _user_file(fname, skip_pkg)
            if (fname.startswith("<") or os.path.isabs(fname)) and len(files) < 4096:
                files[id(code)] = (code, base)
        if base is not None:
            return f"{base}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def at(loc: str | None) -> str:
    """Suffix `` (at file.py:12)`` for messages, or empty when the location is unknown."""
    return f" (at {loc})" if loc else ""


class GraphShapeError(KfuseError, ValueError):
    """A captured CUDA graph (``kfuse.capture``) called with arrays of another shape, dtype or layout."""
