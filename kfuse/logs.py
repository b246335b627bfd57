"""kfuse's diagnostics: the ``kfuse`` logger and the stderr handler that ``KFUSE_DEBUG`` adds.

A compile logs its plan at INFO, the fusion pipeline the graph after every pass that changed it
at DEBUG. Turn them on with ``KFUSE_DEBUG=1`` (plans) or ``2`` (also the IR between passes), or
as for any library's logger: ``logging.getLogger("kfuse").setLevel(logging.INFO)`` with a handler
of one's own (``logging.basicConfig(level=logging.INFO)`` does both). :func:`fmt_bytes` writes
the byte counts of kfuse's reports (``kfuse cache``, the chunk plan of ``kfuse.dask``).
"""
from __future__ import annotations

import logging

logger = logging.getLogger("kfuse")
logger.addHandler(logging.NullHandler())

_HANDLER = "kfuse-debug"


def fmt_bytes(n: float) -> str:
    """``n`` bytes as B, KiB, MiB or GiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def configure(debug: int) -> None:
    """Apply ``KFUSE_DEBUG`` (``config.debug``): from 1, the logger's level (INFO, or DEBUG from 2)
    and one stderr handler; 0 leaves the logger as the application set it."""
    if debug <= 0:
        return
    if not any(h.get_name() == _HANDLER for h in logger.handlers):
        handler = logging.StreamHandler()           # sys.stderr
        handler.set_name(_HANDLER)
        handler.setFormatter(logging.Formatter("kfuse: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug >= 2 else logging.INFO)
