"""The IR layer: ops, dtypes, nodes and graphs, and their text form."""
from .graph import Graph, Node, toposort, unflatten
from .ops import Op

__all__ = ["Graph", "Node", "Op", "toposort", "unflatten"]
