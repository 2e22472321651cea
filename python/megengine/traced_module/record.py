"""The recording versions of functions and Tensor methods that ``Patcher`` installs while a
trace runs: a call records a CallFunction (or CallMethod) expr, runs the original eagerly
(nested calls unrecorded) and binds its result Tensors to the expr's output nodes."""

import functools
import inspect

from ..tensor import Tensor
from . import tm_config, tracer
from .expr import Apply, CallFunction, CallMethod, capture_constant
from .pytree import tree_flatten
from .utils import convert_kwargs_to_args


def _is_tensor_leaf(obj):
    if not isinstance(obj, Tensor):
        raise TypeError(
            f"traced_module does not support {type(obj).__name__} in return values: return "
            "Tensors, or register the type with megengine.traced_module.register_supported_type"
        )
    return True


def _capture_untraced(leaves):
    for leaf in leaves:
        if isinstance(leaf, Tensor) and tracer.get_node(leaf, None) is None:
            capture_constant(leaf)


def _normalized(func, args, kwargs):
    try:
        return convert_kwargs_to_args(func, args, kwargs)
    except TypeError:
        # a C function: no Python signature to normalise by (a wrong call raises when run)
        try:
            inspect.getfullargspec(inspect.unwrap(func))
        except TypeError:
            return args, kwargs
        raise


def record_call(func, method, args, kwargs):
    """Records one call of ``func`` (Tensor method ``method`` when not None) and runs it."""
    _capture_untraced(tree_flatten((args, kwargs))[0])
    args, kwargs = _normalized(func, args, kwargs)
    leaves, arg_def = tree_flatten((args, kwargs))
    if method is not None:
        expr = CallMethod.make(tracer.get_node(args[0]), method)
        expr.add_inputs(leaves[1:])
        values = [args[0]] + [v for v in leaves[1:] if _is_node_value(v)]
    else:
        expr = CallFunction.make(func)
        expr.add_inputs(leaves)
        values = [v for v in leaves if _is_node_value(v)]
    expr.arg_def = arg_def
    result = func(*args, **kwargs)
    if method == "__setitem__":
        result = args[0]
    outputs = None
    if result is not None:
        outputs, expr.out_def = tree_flatten(result, is_leaf=_is_tensor_leaf)
    expr.add_outputs(outputs)
    if tm_config.expr_checker_enabled() and method != "__setitem__" and not method_inplace(method):
        _check_expr(expr, values, outputs)
    return result


def method_inplace(method):
    return method is not None and method.startswith("__i") and method != "__invert__"


def _is_node_value(value):
    return tracer.get_node(value, None) is not None and not isinstance(value, (str, int, float))


def _check_expr(expr, values, outputs):
    """The expr checker: ``expr`` interpreted on the call's inputs gives its outputs."""
    import numpy as np

    got = expr.interpret(*values) or []
    want = outputs or []
    if len(got) != len(want) or not all(
        np.array_equal(g.numpy(), w.numpy(), equal_nan=True) for g, w in zip(got, want)
    ):
        raise RuntimeError(f"the recorded expr does not reproduce its call: {expr}")


def wrapped_function(func, method=None):
    """``func`` recording itself while a trace records, unchanged otherwise."""

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        if not tracer.is_tracing_module():
            return func(*args, **kwargs)
        if method is not None and not isinstance(args[0], Tensor):
            return func(*args, **kwargs)
        with tracer.exclude_from_trace():
            return record_call(func, method, args, kwargs)

    return wrapped


def wrapped_apply(apply):
    """``apply(opdef, *tensors)`` recording an Apply expr while a trace records."""

    @functools.wraps(apply)
    def wrapped(opdef, *inputs):
        if not tracer.is_tracing_module():
            return apply(opdef, *inputs)
        with tracer.exclude_from_trace():
            _capture_untraced(inputs)
            expr = Apply.make(opdef)
            expr.add_inputs(list(inputs))
            outputs = apply(opdef, *inputs)
            expr.add_outputs(list(outputs))
            return outputs

    return wrapped


def _holds_traced_tensor(data):
    # Tensor([1, x, 1]) follows x as Tensor(x) does (MegEngine records both as __new__)
    if isinstance(data, (list, tuple)):
        return any(_holds_traced_tensor(d) for d in data)
    return isinstance(data, Tensor) and tracer.get_node(data, None) is not None


def wrapped_tensor_init(init):
    """``Tensor.__init__`` recording ``Tensor(traced_tensor, ...)`` (or a list holding traced
    Tensors) as a CallMethod of the class (MegEngine's ``Tensor.__new__`` expr), so that the
    copy follows the input."""

    @functools.wraps(init)
    def wrapped(self, *args, **kwargs):
        data = args[0] if args else kwargs.get("data")
        if (
            not tracer.is_tracing_module()
            or type(self) is not Tensor
            or not _holds_traced_tensor(data)
        ):
            return init(self, *args, **kwargs)
        with tracer.exclude_from_trace():
            init(self, *args, **kwargs)
            leaves, arg_def = tree_flatten(((Tensor, *args), kwargs))
            expr = CallMethod.make(Tensor, "__new__")
            expr.add_inputs(leaves[1:])
            expr.arg_def = arg_def
            expr.out_def = tree_flatten(self)[1]
            expr.add_outputs([self])

    return wrapped
