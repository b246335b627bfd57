"""A slow, obviously-correct NumPy interpreter of the IR: one NumPy call per node.

``evaluate(graph, arrays)`` is the oracle other layers test against (fusion passes must not
change its results; backends must match it within ``kfuse/testing.py``). Results have exactly
each node's dtype and shape (checked).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..ir.graph import Graph, Node, toposort
from ..ir.ops import BINARY, SCAN_UFUNC, UNARY, Op


def _slices(node: Node) -> tuple[slice, ...]:
    out = []
    for start, step, length in zip(node.attr("starts"), node.attr("steps"), node.shape):
        if length == 0:
            out.append(slice(0, 0))
            continue
        stop = start + length * step
        out.append(slice(start, stop if stop >= 0 else None, step))
    return tuple(out)


_REDUCERS = {Op.SUM: np.sum, Op.PROD: np.prod, Op.MAX: np.max, Op.MIN: np.min,
             Op.ANY: np.any, Op.ALL: np.all}


def eval_node(node: Node, args: list[np.ndarray]) -> np.ndarray:
    """Value of one non-INPUT node given its input values."""
    op = node.op
    if op is Op.CONST:
        return np.array(node.attr("value"), dtype=node.dtype)
    if op is Op.CAST:
        return args[0].astype(node.dtype)
    if op is Op.COMPLEX:
        out = np.empty(node.shape, node.dtype)
        out.real, out.imag = args
        return out
    if op in UNARY or op in BINARY:
        return np.asarray(getattr(np, op.value)(*args))
    if op is Op.WHERE:
        return np.where(*args)
    if op in _REDUCERS:
        kw = {"dtype": node.dtype} if op in (Op.SUM, Op.PROD) else {}
        return np.asarray(_REDUCERS[op](args[0], axis=node.attr("axes"),
                                        keepdims=node.attr("keepdims"), **kw))
    if op in (Op.ARGMAX, Op.ARGMIN):
        fn = np.argmax if op is Op.ARGMAX else np.argmin
        return np.asarray(fn(args[0], axis=node.attr("axes")[0], keepdims=node.attr("keepdims")))
    if op in SCAN_UFUNC:
        return getattr(np, SCAN_UFUNC[op]).accumulate(args[0], axis=node.attr("axis"), dtype=node.dtype)
    if op is Op.BROADCAST:
        return np.broadcast_to(args[0], node.shape)
    if op is Op.RESHAPE:
        return args[0].reshape(node.shape)
    if op is Op.PERMUTE:
        return args[0].transpose(node.attr("perm"))
    if op is Op.SLICE:
        return args[0][_slices(node)]
    if op is Op.PAD:
        out = np.full(node.shape, node.attr("fill"), dtype=node.dtype)
        out[tuple(slice(s, s + t * (n - 1) + 1, t) for s, t, n in
                  zip(node.attr("starts"), node.attr("steps"), args[0].shape))] = args[0]
        return out
    if op is Op.GATHER:
        return gather(args[0], args[1:], node.attr("dims"), node.shape)
    if op is Op.SEARCHSORTED:
        return np.searchsorted(args[0], args[1], side=node.attr("side")).astype(np.int64)
    if op is Op.SCATTER:
        return scatter(args[0], args[1], args[2:], node.attr("dims"), node.attr("mode"),
                       node.attr("starts"), node.attr("steps"))
    if op is Op.MATMUL:
        return np.asarray(np.matmul(*args))
    raise NotImplementedError(f"reference: no rule for {op}")


def positions(src_shape, idx, dims, shape, starts=None, steps=None) -> list:
    """The index arrays (broadcastable to ``shape``) of the ``src_shape`` positions a GATHER with
    ``dims`` reads (``kfuse/ir/ops.py``): a negative position counts from the end once, one still
    out of range reads the nearest end; a region scatter's (``starts``/``steps``) along a domain
    dim are ``start + I * step``."""
    index = []
    for d, p in enumerate(dims):
        if src_shape[d] == 1:
            index.append(np.zeros((1,) * len(shape), np.int64))
        elif p >= 0:
            at = np.arange(shape[p]) if starts is None else starts[d] + np.arange(shape[p]) * steps[d]
            index.append(at.reshape([-1 if q == p else 1 for q in range(len(shape))]))
        else:
            x, n = idx[-1 - p].astype(np.int64), src_shape[d]
            index.append(np.clip(np.where(x < 0, x + n, x), 0, n - 1))
    return index


def gather(src: np.ndarray, idx, dims, shape) -> np.ndarray:
    """GATHER's meaning (``kfuse/ir/ops.py``)."""
    return np.broadcast_to(src[tuple(positions(src.shape, idx, dims, shape))], shape).copy()


def scatter(base: np.ndarray, values: np.ndarray, idx, dims, mode: str, starts=None, steps=None) -> np.ndarray:
    """SCATTER's meaning (``kfuse/ir/ops.py``): NumPy's own assignment (``mode == "set"``) or
    unbuffered ``ufunc.at`` at the positions a GATHER with ``dims`` reads; the result is a copy."""
    out = base.copy()
    index = tuple(np.broadcast_to(i, values.shape)
                  for i in positions(base.shape, idx, dims, values.shape, starts, steps))
    if mode == "set":
        out[index] = values
    else:
        with np.errstate(all="ignore"):
            getattr(np, mode).at(out, index, values)
    return out


def evaluate_nodes(nodes: Sequence[Node], input_value: Callable[[Node], Any]) -> list[np.ndarray]:
    """The values of ``nodes`` (a graph's host checks), ``input_value(node)`` giving each INPUT's."""
    return evaluator(nodes)(input_value)


def evaluator(nodes: Sequence[Node]) -> Callable[[Callable[[Node], Any]], list[np.ndarray]]:
    """:func:`evaluate_nodes` for these ``nodes``, sorted and with their constants made once (a
    cached call's host checks run it every call)."""
    order = toposort(nodes)
    consts = {n: eval_node(n, []) for n in order if n.op is Op.CONST}
    slots = {n: k for k, n in enumerate(order)}
    steps = [(n, [slots[i] for i in n.inputs]) for n in order]
    wanted = [slots[n] for n in nodes]

    def run(input_value: Callable[[Node], Any]) -> list[np.ndarray]:
        values: list = []
        with np.errstate(all="ignore"):
            for node, ins in steps:
                if node.op is Op.INPUT:
                    values.append(np.asarray(input_value(node), dtype=node.dtype))
                elif node in consts:
                    values.append(consts[node])
                else:
                    values.append(eval_node(node, [values[i] for i in ins]))
        return [values[k] for k in wanted]
    return run


def evaluate(graph: Graph, arrays: Sequence) -> list[np.ndarray]:
    """Run ``graph`` on ``arrays`` (one per ``graph.inputs``); returns the outputs in order."""
    if len(arrays) != len(graph.inputs):
        raise ValueError(f"{graph.name}: expected {len(graph.inputs)} inputs, got {len(arrays)}")
    values: dict[Node, np.ndarray] = {}
    for inp in graph.inputs:
        a = np.asarray(arrays[inp.attr("index")])
        if a.shape != inp.shape or a.dtype != inp.dtype:
            a = np.asarray(a, dtype=inp.dtype)
            if a.shape != inp.shape:
                raise ValueError(f"input {inp.attr('name')}: shape {a.shape} != {inp.shape}")
        values[inp] = a
    with np.errstate(all="ignore"):
        for node in graph.nodes():
            if node in values:
                continue
            if node.op is Op.INPUT:
                raise ValueError(f"input {node.attr('name')} is not in graph.inputs")
            v = eval_node(node, [values[i] for i in node.inputs])
            if v.dtype != node.dtype or v.shape != node.shape:
                raise AssertionError(f"reference: {node.op.value} gave {v.dtype}{list(v.shape)}, "
                                     f"node says {node.dtype}{list(node.shape)} (at {node.loc})")
            values[node] = v
    return [values[o] for o in graph.outputs]
