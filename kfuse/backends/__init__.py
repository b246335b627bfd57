"""The backends and their registry: ``get(name)``, ``names()``, ``for_arrays(requested, kinds)``,
``for_stage(stage)``.

A backend is one :class:`~kfuse.backends.base.Backend` object (``cpu``, ``cuda``, ``numba_cuda``
packages here, the GPU ones sharing ``gpu.py``); ``docs/BACKENDS.md`` says how to add one. The
registry's order is the order ``backend="auto"`` tries them in: the first that accepts every
argument array runs the call.
"""
from __future__ import annotations

from ..errors import DeviceError
from .base import Backend, CapabilityRefusal, Feature
from .cpu import CPU
from .cuda import CUDA
from .numba_cuda import NUMBA_CUDA

AUTO = "auto"
_REGISTRY: dict[str, Backend] = {}
_HOST_KINDS = frozenset({"numpy", "torch-cpu"})


def register(backend: Backend) -> Backend:
    """Add ``backend`` to the registry (after those there); its name must be new."""
    if not backend.name or backend.name in _REGISTRY or backend.name == AUTO:
        raise ValueError(f"kfuse: cannot register a backend named {backend.name!r}")
    _REGISTRY[backend.name] = backend
    return backend


for _b in (CPU, CUDA, NUMBA_CUDA):
    register(_b)


def names() -> tuple[str, ...]:
    """The registered backends' names, in registry order."""
    return tuple(_REGISTRY)


def get(backend: str | Backend) -> Backend:
    """The backend named ``backend`` (a Backend is returned as it is)."""
    if isinstance(backend, Backend):
        return backend
    try:
        return _REGISTRY[backend]
    except (KeyError, TypeError):
        raise ValueError(f"kfuse: unknown backend {backend!r}; backends: {', '.join(names())}") from None


def default() -> Backend:
    """The backend of a function lowered without arrays (``backend="auto"``): the first."""
    return next(iter(_REGISTRY.values()))


def for_stage(stage: str) -> Backend | None:
    """The first backend that prints ``stage`` (``cuda``, ``numba``, ``ptx``, ...), or None."""
    return next((b for b in _REGISTRY.values() if stage in b.stages), None)


def stages() -> tuple[str, ...]:
    """Every backend's printable stages: each one's source stage (registry order), then the rest."""
    sources = [b.source_stage for b in _REGISTRY.values()]
    rest = [s for b in _REGISTRY.values() for s in b.stages if s not in sources]
    return tuple(dict.fromkeys(sources + rest))


def with_feature(feature: Feature) -> tuple[Backend, ...]:
    """The backends that have ``feature``."""
    return tuple(b for b in _REGISTRY.values() if feature in b.features)


def first_accepting(kinds) -> Backend | None:
    """The first registered backend that runs arrays of every one of ``kinds``, or None."""
    return next((b for b in _REGISTRY.values() if all(b.accepts(k) for k in kinds)), None)


def for_arrays(requested: str | Backend, kinds: set, fname: str) -> Backend:
    """The backend that runs a call of ``fname`` whose argument arrays are of ``kinds``
    ('numpy', 'torch-cpu', 'cupy', 'torch'): the requested one, checked against the arrays, or
    for ``"auto"`` the first registered that accepts them all."""
    if len(kinds) > 1 and kinds & _HOST_KINDS:
        raise DeviceError(f"{fname}(): host (NumPy) arrays mixed with device arrays ({sorted(kinds)}); "
                          "move them to one device first")
    if requested == AUTO:
        b = first_accepting(kinds)
        if b is None:
            raise DeviceError(f"{fname}(): no backend runs arrays of {sorted(kinds)}")
        return b
    b = get(requested)
    refused = sorted(k for k in kinds if not b.accepts(k))
    if b.on_host and refused:
        raise DeviceError(f"{fname}(): backend={b.name!r} was requested but the arguments are "
                          f"device arrays ({', '.join(refused)})")
    b.check_available()
    if not b.on_host and (refused or not kinds):
        raise DeviceError(f"{fname}(): backend={b.name!r} needs device arrays (CuPy or torch CUDA "
                          "tensors); got NumPy arrays")
    return b


__all__ = ["Backend", "CapabilityRefusal", "Feature", "register", "names", "get", "default",
           "first_accepting", "for_stage", "stages", "with_feature", "for_arrays", "CPU", "CUDA", "NUMBA_CUDA"]
