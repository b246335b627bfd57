"""The hot call's guard: for the dispatch key a jitted function was last called with, one generated
Python function that tests the arguments against that key inline and, where they match, runs the
entry's generated hot path (``runtime.direct_launch``, ``runtime.cpu_direct``); else it returns
:data:`MISS` and the call takes the dictionary lookup (``api.JitFunction.__call__``).

The test is the dispatch key's (``dispatch_keys.flat_key``) written out per argument, never
looser: type by identity, dtype by identity (a miss where only an equal dtype object comes), then
shape, strides and device by equality. It saves the key's tuples, its hash and the lookup: a
1024-element CuPy call spent 1.10 µs of 8.30 in ``flat_key`` and the lookup (H200, 2026-11-28).

Torch CUDA tensors are tested together in one call of torch's own C++ tensor guard (Dynamo's
``TensorGuards``: type, dispatch keys (the device type, a lazy conjugate or negative bit), dtype,
device index, requires_grad, sizes and strides), where torch has it and the tensors are distinct
objects (it fails a tensor passed twice): the test written out per tensor cost 0.79 µs a tensor,
most of a torch call's time above torch eager's (H200, 2026-11-28)."""
from __future__ import annotations

import numpy as np

from .dispatch_keys import _family
from .runtime.generated import define

MISS = object()


def never(args):
    """The guard of no entry: every call misses."""
    return MISS


def _checks(a, name: str, ns: dict, k: int, guarded: frozenset = frozenset()) -> list[str] | None:
    """The conditions under which argument ``name`` has ``a``'s dispatch key (the names they use
    go into ``ns``), or None for an argument keyed otherwise (a static value, a list); none for a
    torch tensor among ``guarded`` (tested by the tensor guard: :func:`_torch_guard`)."""
    t = type(a)
    ns[f"GT{k}"] = t
    same_type = f"type({name}) is GT{k}"
    if t in (float, int, bool) or issubclass(t, (np.number, np.bool_)):
        return [same_type]                      # (a NumPy scalar type fixes its dtype)
    family = _family(t)
    if family is None:
        return None
    ns[f"GD{k}"], ns[f"GS{k}"] = a.dtype, tuple(a.shape)
    out = [same_type, f"{name}.dtype is GD{k}", f"{name}.shape == GS{k}"]
    if family == "numpy":
        ns[f"GR{k}"] = a.strides
        return out + [f"{name}.strides == GR{k}"]
    if family == "cupy":
        ns[f"GR{k}"], ns[f"GV{k}"] = a.strides, a.data.device_id
        return out + [f"{name}.strides == GR{k}", f"{name}.data.device_id == GV{k}"]
    if not a.is_cuda or a.is_conj() or a.is_neg():
        return None
    if name in guarded:
        return []
    ns[f"GR{k}"], ns[f"GV{k}"] = tuple(a.stride()), a.get_device()
    return out + [f"{name}.stride() == GR{k}", f"{name}.is_cuda", f"{name}.get_device() == GV{k}",
                  f"not ({name}.is_conj() or {name}.is_neg())"]


def _torch_guard(args: tuple, ns: dict) -> tuple[list[str], frozenset]:
    """``(condition, the names it tests)``: every torch CUDA tensor of ``args`` tested at once by
    torch's tensor guard (``ns["TG"]``); none where torch has no such guard or a tensor comes
    twice."""
    tensors = [k for k, a in enumerate(args) if _family(type(a)) == "torch" and a.is_cuda]
    if not tensors or len({id(args[k]) for k in tensors}) < len(tensors):
        return [], frozenset()
    try:
        from torch._C._dynamo.guards import TensorGuards
        ns["TG"] = TensorGuards(*(args[k] for k in tensors), dynamic_dims_sizes=None, dynamic_dims_strides=None)
    except (ImportError, TypeError, RuntimeError):     # (a private API: a torch without it)
        return [], frozenset()
    return [f"TG.check({', '.join(f'g{k}' for k in tensors)})"], frozenset(f"g{k}" for k in tensors)


def make_guard(args: tuple, run):
    """The guard that runs ``run(args)`` for calls whose arguments have ``args``' dispatch key
    (``run``: an entry's generated hot path, reached through that key), or None where some
    argument is keyed otherwise."""
    ns = run.__globals__        # (the hot path's body runs inline, in its namespace: a frame less)
    ns["MISS"] = MISS
    conds, guarded = _torch_guard(args, ns)
    for k, a in enumerate(args):
        c = _checks(a, f"g{k}", ns, k, guarded)
        if c is None:
            return None
        conds += c
    lines = ["def direct(args):", f"    if len(args) == {len(args)}:"]
    lines += [f"        g{k} = args[{k}]" for k in range(len(args))]
    lines += ["        if " + " and ".join(conds or ["True"]) + ":"]
    lines += ["        " + line for line in run.source.splitlines()[1:]]
    return define(lines, "MISS", ns)
