"""Text form of IR graphs: one line per node, ``%id = op inputs {attrs} : dtype[shape]``."""
from __future__ import annotations

from .dtypes import short_name
from .graph import Graph, Node, toposort
from .ops import Op


def format_node(node: Node, names: dict[Node, str]) -> str:
    args = ", ".join(names[i] for i in node.inputs)
    attrs = ", ".join(f"{k}={v!r}" for k, v in node.attrs if k != "name")
    if node.op is Op.INPUT:
        head = f"input {node.attr('name')!s}"
    else:
        head = node.op.value + (" " + args if args else "")
    if attrs:
        head += " {" + attrs + "}"
    return f"{names[node]} = {head} : {short_name(node.dtype)}[{','.join(map(str, node.shape))}]"


def format_graph(graph: Graph) -> str:
    nodes = toposort(tuple(graph.inputs) + tuple(graph.outputs) + tuple(n for n, *_ in graph.host_checks))
    names = {n: f"%{i}" for i, n in enumerate(nodes)}
    lines = [f"graph {graph.name}:"]
    lines += ["  " + format_node(n, names) for n in nodes]
    lines.append("  return " + ", ".join(names[o] for o in graph.outputs))
    lines += [f"  write back {names[graph.outputs[o]]} into {names[graph.inputs[i]]}"
              for i, o in graph.writebacks]
    lines += [f"  check {names[graph.outputs[o]]}: {error} {msg!r}" for o, msg, error in graph.checks]
    lines += [f"  host check {names[n]}: {error} {msg!r}" for n, msg, error in graph.host_checks]
    return "\n".join(lines)
