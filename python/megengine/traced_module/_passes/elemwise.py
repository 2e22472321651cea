"""Elementwise passes: ``FlodConstant`` (MegEngine's spelling) computes the exprs whose inputs
are all constants, ``NormElemWise`` rewrites subtractions and divisions by constants as
additions and multiplications (``x - c`` -> ``x + (-c)``, ``c - x`` -> ``neg(x) + c``,
``x / c`` -> ``x * (1 / c)``), and ``FuseAddMul`` folds chains of them (``(x + 1) + 2`` ->
``x + 3``, ``-(x * 2)`` -> ``x * -2``)."""

import operator

from ... import functional as F
from ...tensor import Tensor
from .. import tracer
from ..expr import CallFunction, CallMethod, Constant, is_call_function, is_constant
from ..node import ModuleNode, TensorNode
from .base import BackwardPass, get_const_value, register_pass


def _as_const_node(value):
    node = Constant.make(value)
    tracer.bind(value, node)
    return node


def _replace(graph, expr, node):
    graph.replace_node({expr.outputs[0]: node})
    graph.compile()
    return node.expr


@register_pass("FlodConstant")
class FlodConstant(BackwardPass):
    r"""Replaces each single-output expr whose inputs are all Constants by a Constant of its
    value."""

    name = "FlodConstant"
    required_pass = ("AttrToConstant",)
    run_once = False

    def run_transform(self, expr):
        if (
            not expr.inputs
            or len(expr.outputs) != 1
            or any(not is_constant(n.expr) or isinstance(n, ModuleNode) for n in expr.inputs)
        ):
            return expr
        value = expr.interpret(*[get_const_value(n.expr) for n in expr.inputs])[0]
        graph = expr.top_graph
        name = expr.outputs[0].name
        with graph.insert_exprs(expr):
            node = _as_const_node(value)
        new = _replace(graph, expr, node)
        node.name = name
        return new


_ADD = {F.add, "__add__", "__iadd__", "__radd__"}
_SUB = {F.sub, "__sub__", "__isub__", "__rsub__"}
_MUL = {F.mul, "__mul__", "__imul__", "__rmul__"}
_DIV = {F.div, "__truediv__", "__itruediv__", "__rtruediv__"}


def _target(expr):
    if isinstance(expr, CallFunction):
        return expr.func
    if isinstance(expr, CallMethod) and not isinstance(expr.inputs[0], ModuleNode):
        return expr.method
    return None


def _is(target, group):
    try:
        return target in group
    except TypeError:
        return False


@register_pass("NormElemWise")
class NormElemWise(BackwardPass):
    r"""Rewrites additions, subtractions, multiplications and divisions with a constant as
    ``x + c`` and ``x * c`` (MegEngine's normal form, which FuseAddMul folds)."""

    name = "NormElemWise"
    required_pass = ("FlodConstant",)
    run_once = False

    def run_transform(self, expr):
        target = _target(expr)
        if target is None or not any(_is(target, g) for g in (_ADD, _SUB, _MUL, _DIV)):
            return expr
        swap_sides = target in ("__rsub__", "__rtruediv__")
        coef, left, right = 1, None, None
        if len(expr.inputs) == 1 and target not in ("__add__", "__mul__"):
            left = expr.inputs[0]
            right = next(v for v in expr.named_args.values() if not isinstance(v, TensorNode))
            if swap_sides or (target in (F.sub, F.div) and left is not expr.named_args["x"]):
                coef = -1
        elif len(expr.inputs) == 2 and (
            target not in ("__add__", "__mul__") or is_constant(expr.inputs[0].expr)
        ):
            left, right = expr.inputs
            if swap_sides or (target in (F.sub, F.div) and left is not expr.named_args["x"]):
                left, right = right, left
            if is_constant(left.expr):
                left, right = right, left
                coef = -1
        if left is None:
            return expr
        if isinstance(right, TensorNode):
            right = get_const_value(right.expr, right)
        graph = expr.top_graph
        with graph.insert_exprs():
            if _is(target, _MUL):
                out = left * right
            elif _is(target, _ADD):
                out = left + right
            elif _is(target, _SUB):
                if coef == -1:
                    out = F.neg(left) + right
                else:
                    out = left + (F.neg(right) if isinstance(right, TensorNode) else -1 * right)
            else:
                if coef == -1:
                    out = F.pow(left, -1) * right
                else:
                    out = left * (F.pow(right, -1) if isinstance(right, TensorNode) else 1 / right)
        return _replace(graph, expr, out)


def _const_of(expr):
    """The constant operand of ``x + c``, ``x * c``, ``F.pow(x, c)`` or ``F.neg(x)`` (-1)."""
    if is_call_function(expr, F.neg):
        return -1
    if len(expr.inputs) == 2:
        return get_const_value(expr.inputs[1].expr)
    if expr.const_val:
        return expr.const_val[0][-1]
    return None


def _matches(expr, targets):
    target = _target(expr)
    if not _is(target, targets) or is_constant(expr.inputs[0].expr):
        return False
    if target == F.neg:
        return len(expr.inputs) == 1
    if len(expr.inputs) == 2:
        return is_constant(expr.inputs[1].expr)
    return len(expr.inputs) == 1


def _scalar_like(value):
    return not isinstance(value, Tensor) or tuple(value.shape) in ((1,), ())


@register_pass("FuseAddMul")
class FuseAddMul(BackwardPass):
    r"""Folds two adjacent additions (multiplications, powers) of constants into one, or
    removes them when they cancel."""

    name = "FuseAddMul"
    required_pass = ("NormElemWise",)
    run_once = False

    _rules = (
        ({"__add__"}, {"__add__"}, operator.add, operator.add),
        ({F.pow}, {F.pow}, operator.mul, F.pow),
        ({F.neg, "__mul__"}, {F.neg, "__mul__"}, operator.mul, operator.mul),
    )

    def run_transform(self, expr):
        for outer, inner, fold, apply in self._rules:
            if not _matches(expr, outer):
                continue
            first = expr.inputs[0]
            if len(first.users) != 1 or not _matches(first.expr, inner):
                continue
            c0, c1 = _const_of(expr), _const_of(first.expr)
            if c0 is None or c1 is None or not (_scalar_like(c0) and _scalar_like(c1)):
                continue
            x = first.expr.inputs[0]
            const = fold(c0, c1)
            graph = expr.top_graph
            if (const == 1 and apply in (F.pow, operator.mul)) or (
                const == 0 and apply is operator.add
            ):
                graph.replace_node({expr.outputs[0]: x})
                graph.compile()
                return x.expr
            with graph.insert_exprs():
                out = apply(x, const)
            return _replace(graph, expr, out)
        return expr
