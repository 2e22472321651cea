"""``BackwardFoldScale``: a multiplication by a constant after a convolution moves into the
convolution's weight and bias, through the ops between that commute with scaling (ReLU for a
positive scale, pooling, reshapes, indexing, additions of constants, which are scaled too).

An addition of two tensors passes the scale to both of its operands. Unlike MegEngine 1.13's
pass, which drops the scale of ``x * 3`` when ``x`` is an input and can scale a convolution
twice where branches join, this one folds a scale only when every expr below it has a single
reader and every branch ends at a convolution (a Conv2d module, or ``F.conv2d`` with constant
weights): what it does never changes the outputs."""

import copy
import operator

from ... import functional as F
from ... import module as M
from ...tensor import Parameter
from ..expr import is_call_function, is_call_module, is_constant
from ..node import TensorNode
from .base import BackwardPass, get_const_value, register_pass
from .elemwise import _const_of, _matches, _scalar_like, _target

# ops f with f(s * x) == s * f(x) for any s, and those where it holds for s > 0 only
_LINEAR = {
    F.reshape,
    "reshape",
    F.transpose,
    "transpose",
    F.avg_pool2d,
    F.adaptive_avg_pool2d,
    F.expand_dims,
    "__getitem__",
    F.flatten,
    "flatten",
}
_POSITIVE = {F.relu, F.max_pool2d, F.adaptive_max_pool2d, F.min, "min", F.max, "max"}
_LINEAR_MODULES = (M.AvgPool2d, M.AdaptiveAvgPool2d)
_POSITIVE_MODULES = (M.ReLU, M.MaxPool2d, M.AdaptiveMaxPool2d)


def _is(target, group):
    try:
        return target in group
    except TypeError:
        return False


def _data_input(expr):
    return expr.inputs[1] if is_call_module(expr) else expr.inputs[0]


def _is_conv(expr):
    if is_call_module(expr) and type(expr.inputs[0].owner) is M.Conv2d:
        return True
    if is_call_function(expr, F.conv2d):
        named = expr.named_args
        bias = named.get("bias")
        return is_constant(named["weight"].expr) and (bias is None or is_constant(bias.expr))
    return False


def _is_tensor_add(expr):
    target = _target(expr)
    return (
        _is(target, {"__add__", F.add})
        and len(expr.inputs) == 2
        and all(isinstance(n, TensorNode) and not is_constant(n.expr) for n in expr.inputs)
        and expr.inputs[0] is not expr.inputs[1]
    )


def _commutes(expr, positive):
    if is_call_module(expr):
        owner = expr.inputs[0].owner
        return isinstance(owner, _LINEAR_MODULES) or (
            positive and isinstance(owner, _POSITIVE_MODULES)
        )
    target = _target(expr)
    if _is(target, _LINEAR):
        return True
    if target == F.leaky_relu or _is(target, _POSITIVE):
        return positive
    return False


@register_pass("BackwardFoldScale")
class BackwardFoldScale(BackwardPass):
    r"""Moves constant scales back into the convolution that produces their input."""

    name = "BackwardFoldScale"
    required_pass = ("AttrToConstant", "NormElemWise")
    run_once = False

    def run_transform(self, expr):
        if not _matches(expr, {"__mul__", F.neg}):
            return expr
        scale = _const_of(expr)
        if scale is None or not _scalar_like(scale):
            return expr
        path = self._path(expr, scale)
        if path is None:
            return expr
        convs, adds, muls = path
        graph = expr.top_graph
        renames = [self._scale_conv(conv, factor) for conv, factor in convs]
        for add, f in adds:
            # the scaled constant is computed here: inside the block it would be recorded
            const = operator.mul(_const_of(add), f)
            with graph.insert_exprs(add):
                node = add.inputs[0] + const
            graph.replace_node({add.outputs[0]: node})
            renames.append((node, add.outputs[0].name))
        for mul in muls:
            graph.replace_node({mul.outputs[0]: mul.inputs[0]})
        graph.compile()
        for node, name in renames:
            if node is not None:
                node.name = name
        return renames[0][0].expr if renames[0][0] is not None else convs[0][0]

    def _path(self, mul, scale):
        """The convs (with their factors), the additions of constants (with theirs) and the
        multiplications that the scale of ``mul`` passes, or None. An addition of two tensors
        passes the scale to both, so the exprs below ``mul`` form a tree whose leaves must all
        be convs; every node in it has one reader, so scaling it changes nothing else."""
        found = ([], [], [mul])
        if not self._collect(mul.inputs[0], scale, mul.top_graph, found):
            return None
        convs, adds, muls = found
        return convs, adds, muls

    def _collect(self, node, factor, graph, found):
        convs, adds, muls = found
        while True:
            expr = node.expr
            if len(node.users) != 1 or expr.top_graph is not graph or len(expr.outputs) != 1:
                return False
            if _is_conv(expr):
                convs.append((expr, factor))
                return True
            if _matches(expr, {"__mul__", F.neg}):
                c = _const_of(expr)
                if c is None or not _scalar_like(c):
                    return False
                muls.append(expr)
                factor = factor * c
            elif _matches(expr, {"__add__"}):
                c = _const_of(expr)
                if c is None or not _scalar_like(c):
                    return False
                adds.append((expr, factor))
            elif _is_tensor_add(expr):
                return all(self._collect(n, factor, graph, found) for n in expr.inputs)
            elif not _commutes(expr, bool(factor > 0)):
                return False
            node = _data_input(expr)

    def _scale_conv(self, conv, factor):
        graph = conv.top_graph
        if is_call_function(conv, F.conv2d):
            named = conv.named_args
            named["weight"] = get_const_value(named["weight"]) * factor
            if named.get("bias") is not None:
                named["bias"] = get_const_value(named["bias"]) * factor
            with graph.insert_exprs():
                out = F.conv2d(**named)
            graph.replace_node({conv.outputs[0]: out})
            return out, conv.outputs[0].name
        mnode = conv.inputs[0]
        module = mnode.owner
        if len(mnode.users) > 1:  # the module is called elsewhere: scale a copy
            module = copy.deepcopy(module)
            self_node = mnode.expr.inputs[0]
            name = f"{mnode.expr.name}_scaled"
            setattr(self_node.owner, name, module)
            with graph.insert_exprs(mnode.expr):
                new_node = getattr(self_node, name)
            conv.replace_inputs({mnode: new_node})
        module.weight = Parameter(module.weight * factor)
        if module.bias is not None:
            module.bias = Parameter(module.bias * factor)
        return None, None
