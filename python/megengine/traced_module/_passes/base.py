"""The frame of graph passes: a registry by name and ``BackwardPass``, which visits a graph's
exprs from its outputs towards its inputs (and the graphs of called traced modules),
rewriting each with ``run_transform`` until nothing changes."""

import copy
import logging

from ..expr import Constant, GetAttr
from ..node import TensorNode

logger = logging.getLogger(__name__)

_passes = {}


def register_pass(name):
    """A class decorator registering a pass under ``name``."""

    def register(cls):
        _passes[name] = cls
        return cls

    return register


def get_registered_pass(name):
    if name not in _passes:
        raise ValueError(f"no graph pass named {name!r}; there are {sorted(_passes)}")
    return _passes[name]


class BackwardPass:
    """A pass whose ``run_transform(expr)`` returns the expr, or the expr that replaced it."""

    name = ""
    required_pass = ()
    run_once = True

    def __call__(self, module):
        for name in self.required_pass:
            module = get_registered_pass(name)()(module)
        changed, rounds = self.visit_graph(module.graph), 1
        while not self.run_once and changed:
            changed = self.visit_graph(module.graph)
            rounds += 1
            if rounds == 100:
                raise RuntimeError(f"{self.name} ran 100 times: passes conflict")
        return module

    def run_transform(self, expr):
        return expr

    def visit_graph(self, graph):
        changed = False
        queue = [n.expr for n in graph.outputs]
        visited, visited_graphs = set(), set()
        while queue:
            expr = queue.pop()
            if expr not in graph._exprs:
                continue
            new = self.run_transform(expr)
            if new is not expr:
                changed = True
                queue.append(new)
                continue
            visited.add(expr)
            sub = getattr(expr, "graph", None)
            if sub is not None and id(sub) not in visited_graphs:
                visited_graphs.add(id(sub))
                changed |= self.visit_graph(sub)
            for node in expr.inputs:
                if node.expr not in queue and node.expr not in visited:
                    queue.append(node.expr)
        return changed


def get_const_value(expr, fall_back=None):
    """A copy of the Tensor a Constant or tensor GetAttr (or its node) gives, else
    ``fall_back``."""
    if hasattr(expr, "expr") and not isinstance(expr, (GetAttr, Constant)):
        expr = expr.expr
    if isinstance(expr, GetAttr) and isinstance(expr.outputs[0], TensorNode):
        return copy.deepcopy(expr.interpret(expr.inputs[0].owner)[0])
    if isinstance(expr, Constant):
        return copy.deepcopy(expr.interpret()[0])
    return fall_back
