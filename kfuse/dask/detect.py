"""Which calls take the Dask path, and which backend runs a chunk (decided from its type, as a
plain call decides from its arguments). Imports no Dask: a type's module name is enough."""
from __future__ import annotations

from typing import Any, Iterable


def is_dask_array(v: Any) -> bool:
    t = type(v)
    return t.__name__ == "Array" and t.__module__.startswith("dask.array")


def has_dask_arrays(values: Iterable[Any]) -> bool:
    return any(is_dask_array(v) for v in values)


def is_cupy(v: Any) -> bool:
    return type(v).__module__.startswith("cupy")


def chunk_backend(chunks: Iterable[Any], requested: str):
    """The backend (``kfuse.backends``) that runs a chunk: the requested one where it takes the
    chunk's kind of array, else the first registered backend that does (as a plain call's "auto")."""
    from .. import backends
    kind = "cupy" if any(is_cupy(c) for c in chunks) else "numpy"
    if requested != backends.AUTO and (b := backends.get(requested)).accepts(kind):
        return b
    return backends.first_accepting({kind})


def on_device(chunks: list, backend) -> list:
    """Host arrays among device chunks (an ordinary argument, a constant) copied to the device."""
    if backend.on_host:
        return chunks
    import cupy
    return [c if is_cupy(c) else cupy.asarray(c) for c in chunks]


def array_module(a: Any):
    """NumPy, or CuPy for a CuPy array."""
    if is_cupy(a):
        import cupy
        return cupy
    import numpy
    return numpy
