"""CUDA graphs: a step made of kfuse calls on fixed CuPy buffers, captured once and replayed.

A training or inference step of many small fused calls spends its time on the host (about 15 us a
call); replaying the step's kernels as one CUDA graph removes that. :func:`capture` calls the step
once for real (it compiles and tunes every kernel, and sizes a memory pool private to the graph),
then captures a second call on a side stream (captured work does not run) and instantiates the
graph. :meth:`CapturedStep.replay` launches it on the current stream.

What a replay reads and writes is fixed at capture: the arguments' buffers (pass the same arrays,
or arrays of the same shapes, dtypes and strides, which are copied into the captured ones first)
and the outputs, which live in the graph's private pool and are overwritten by every replay, as
``torch.cuda.graphs`` does. A different shape, dtype or layout raises :class:`GraphShapeError`.
The private pool keeps the memory of the captured call's temporaries from being handed to other
arrays while the graph may still write it.
"""
from __future__ import annotations

from ..errors import DeviceError, GraphShapeError
from .seeds import capturing


def _leaves(tree):
    """The arrays in a nested tuple/list/dict of call arguments or results, in order."""
    if isinstance(tree, (tuple, list)):
        return [x for t in tree for x in _leaves(t)]
    if isinstance(tree, dict):
        return [x for k in sorted(tree, key=str) for x in _leaves(tree[k])]
    return [tree]


def _layout(a) -> tuple:
    return (tuple(a.shape), str(a.dtype), tuple(a.strides))


class CapturedStep:
    """A captured step: :meth:`replay` (the captured buffers) or call it with new arguments."""

    def __init__(self, graph, pool, args, outputs):
        import cupy
        self._graph, self._pool, self._outputs = graph, pool, outputs
        self._args = [a for a in _leaves(args) if isinstance(a, cupy.ndarray)]
        self._layouts = [_layout(a) for a in self._args]

    @property
    def outputs(self):
        """The captured call's results: arrays the graph overwrites on every replay."""
        return self._outputs

    def replay(self):
        """Launch the captured kernels on the current stream; returns :attr:`outputs`."""
        import cupy
        self._graph.launch(cupy.cuda.get_current_stream())
        return self._outputs

    def __call__(self, *args, **kwargs):
        """Copy arrays that are not the captured buffers into them, then :meth:`replay`. Only
        CuPy arrays are replaced; scalars and other values keep their captured values."""
        import cupy
        new = [a for a in _leaves((args, kwargs)) if isinstance(a, cupy.ndarray)]
        if len(new) != len(self._args):
            raise GraphShapeError(f"kfuse: the step was captured with {len(self._args)} arrays, "
                                  f"called with {len(new)}")
        for i, (a, old, lay) in enumerate(zip(new, self._args, self._layouts)):
            if _layout(a) != lay:
                raise GraphShapeError(
                    f"kfuse: array {i} of the captured step is {a.dtype}{list(a.shape)} with strides "
                    f"{a.strides}; it was captured as {lay[1]}{list(lay[0])} with strides {lay[2]}. "
                    "A CUDA graph replays fixed buffers: capture the step again for new shapes")
            if a.data.ptr != old.data.ptr:
                old[...] = a
        return self.replay()


def capture(fn, *args, **kwargs) -> CapturedStep:
    """Capture ``fn(*args, **kwargs)`` (CuPy arrays; any number of kfuse calls and CuPy
    operations that do not wait on the device) as one CUDA graph.

    ``fn`` runs once for real first (its writes into arguments happen), then once under capture.
    Raises :class:`~kfuse.errors.DeviceError` when something in ``fn`` cannot be captured (a
    read of a device value on the host, such as an index check's flag or ``float(x.sum())``)."""
    import cupy
    if not any(isinstance(a, cupy.ndarray) for a in _leaves((args, kwargs))):
        raise TypeError("kfuse.capture: the step needs CuPy array arguments (torch tensors: capture "
                        "the step with torch.cuda.graph, which kfuse calls without scalar "
                        "arguments follow on torch's stream)")
    pool = cupy.cuda.MemoryPool()
    stream = cupy.cuda.Stream(non_blocking=True)
    stream.wait_event(cupy.cuda.get_current_stream().record())
    with cupy.cuda.using_allocator(pool.malloc), stream, capturing():
        fn(*args, **kwargs)     # compiles, tunes, and sizes the pool for the captured call
        stream.synchronize()
        stream.begin_capture()
        try:
            outputs = fn(*args, **kwargs)
        except BaseException as e:
            _abandon(stream)
            if isinstance(e, cupy.cuda.runtime.CUDARuntimeError) or (
                    isinstance(e, RuntimeError) and "captur" in str(e)):
                raise DeviceError(f"kfuse.capture: {e} while capturing {_name(fn)}: the step reads a "
                                  "device value on the host (an index check, a conversion to a "
                                  "Python number) or synchronises, which a CUDA graph cannot hold") from e
            raise
        graph = stream.end_capture()
    cupy.cuda.get_current_stream().wait_event(stream.record())
    return CapturedStep(graph, pool, (args, kwargs), outputs)


def _abandon(stream) -> None:
    """End a failed capture so the stream is usable again (the partial graph is dropped)."""
    try:
        stream.end_capture()
    except Exception:       # an invalidated capture reports its error again here
        pass


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
