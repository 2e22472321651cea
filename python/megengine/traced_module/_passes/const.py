"""``AttrToConstant``: the Tensor attributes a graph reads become Constants (copies), so that
later passes can fold them."""

from ...tensor import Tensor
from .. import tracer
from ..expr import Constant, GetAttr
from ..node import TensorNode
from .base import BackwardPass, get_const_value, register_pass


@register_pass("AttrToConstant")
class AttrToConstant(BackwardPass):
    r"""Replaces each GetAttr of a Tensor by a Constant of its value."""

    name = "AttrToConstant"

    def run_transform(self, expr):
        if not (isinstance(expr, GetAttr) and isinstance(expr.outputs[0], TensorNode)):
            return expr
        graph = expr.top_graph
        value = get_const_value(expr)
        old = expr.outputs[0]
        name = old.name
        with graph.insert_exprs(expr):
            node = Constant.make(Tensor(value))
            tracer.bind(value, node)
        graph.replace_node({old: node})
        graph.compile()
        node.name = name
        return node.expr
