"""The generated hot paths' last step (``runtime.cpu_direct``, ``runtime.direct_launch``): their
source text compiled once per text (every size of a shape class writes the same text; the values
it names live in its namespace) and the function it defines bound to that namespace."""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1024)
def _code(source: str):
    return compile(source, "<kfuse:generated>", "exec")


def define(lines: list[str], ret: str | None, ns: dict):
    """The function ``direct`` that ``lines`` (its header and body) and ``return <ret>`` define in
    namespace ``ns``, its text kept as ``direct.source``; None where ``ret`` is None (a result
    the hot path does not build)."""
    if ret is None:
        return None
    source = "\n".join(lines + [f"    return {ret}"]) + "\n"
    exec(_code(source), ns)
    direct = ns["direct"]
    direct.source = source
    return direct
