"""Elementwise functions (``F.add``, ``F.relu``, ...), each one Elemwise mode of the kernel
library (``dnn/ops/defs/elemwise.py`` lists the modes and their dtype rules). Inputs are
promoted to a common dtype first (``megengine/core/tensor/dtype.py``)."""

from ..core import _imperative_rt as _rt
from ..core._imperative_rt import MegEngineError
from ..core.tensor.array_method import Tensor as _Tensor
from ..core.tensor.array_method import as_tensor as _as_tensor
from ..core.tensor.array_method import elemwise as _elemwise
from ..core.tensor.array_method import elemwise_op as _elemwise_op

__all__ = []


# MegEngine's parameter names where they are not x (and y): keyword calls must bind alike.
_PARAM_NAMES = {
    "atan2": ("y", "x"),
    "softplus": ("inp",),
    "logsigmoid": ("inp",),
    "isnan": ("inp",),
    "isinf": ("inp",),
}


def _function(run, op, names):
    # Written out per parameter list: a keyword call binds by these real names.
    if names == ("x",):

        def fn(x):
            return run(op, x)

    elif names == ("inp",):

        def fn(inp):
            return run(op, inp)

    elif names == ("x", "y"):

        def fn(x, y):
            return run(op, x, y)

    elif names == ("y", "x"):

        def fn(y, x):
            return run(op, y, x)

    else:
        raise AssertionError(f"no elementwise function template for parameters {names}")
    return fn


def _define(name, mode, arity, summary, example, expect, module_globals):
    """Defines F.<name> with a MegEngine-style docstring; ``example`` is the call's argument
    text and ``expect`` the hand-computed result the doctest checks."""
    names = _PARAM_NAMES.get(name, ("x", "y")[:arity])
    arg_docs = "\n".join(f"        {a}: input tensor or scalar." for a in names)
    # The op is built once; each call is one C call (python/src/fast_apply.cpp).
    fn = _function(_rt.elemwise, _elemwise_op(mode), names)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{summary}

    Args:
{arg_docs}

    Returns:
        a Tensor of the inputs' broadcast shape.

    Examples:
        >>> import megengine.functional as F
        >>> F.{name}({example}).numpy().tolist()
        {expect}
    """
    module_globals[name] = fn
    __all__.append(name)


# (name, Elemwise mode, summary, example arguments, hand-computed result)
_UNARY = [
    ("abs", "ABS", "Absolute value.", "[-1.5, 2.0]", "[1.5, 2.0]"),
    ("neg", "NEGATE", "Negation.", "[1.0, -2.0]", "[-1.0, 2.0]"),
    ("exp", "EXP", "Exponential.", "[0.0]", "[1.0]"),
    ("expm1", "EXPM1", "exp(x) - 1, accurate near 0.", "[0.0]", "[0.0]"),
    ("log", "LOG", "Natural logarithm.", "[1.0]", "[0.0]"),
    ("log1p", "LOG1P", "log(1 + x), accurate near 0.", "[0.0]", "[0.0]"),
    ("sqrt", "SQRT", "Square root.", "[4.0, 9.0]", "[2.0, 3.0]"),
    ("rsqrt", "RSQRT", "1 / sqrt(x).", "[4.0, 16.0]", "[0.5, 0.25]"),
    ("square", "SQUARE", "x * x.", "[-3.0, 2.0]", "[9.0, 4.0]"),
    ("sin", "SIN", "Sine.", "[0.0]", "[0.0]"),
    ("cos", "COS", "Cosine.", "[0.0]", "[1.0]"),
    ("tan", "TAN", "Tangent.", "[0.0]", "[0.0]"),
    ("asin", "ASIN", "Arcsine.", "[0.0]", "[0.0]"),
    ("acos", "ACOS", "Arccosine.", "[1.0]", "[0.0]"),
    ("atan", "ATAN", "Arctangent.", "[0.0]", "[0.0]"),
    ("sinh", "SINH", "Hyperbolic sine.", "[0.0]", "[0.0]"),
    ("cosh", "COSH", "Hyperbolic cosine.", "[0.0]", "[1.0]"),
    ("tanh", "TANH", "Hyperbolic tangent.", "[0.0]", "[0.0]"),
    ("asinh", "ASINH", "Inverse hyperbolic sine.", "[0.0]", "[0.0]"),
    ("acosh", "ACOSH", "Inverse hyperbolic cosine.", "[1.0]", "[0.0]"),
    ("atanh", "ATANH", "Inverse hyperbolic tangent.", "[0.0]", "[0.0]"),
    ("sigmoid", "SIGMOID", "1 / (1 + exp(-x)).", "[0.0]", "[0.5]"),
    ("erf", "ERF", "Gauss error function.", "[0.0]", "[0.0]"),
    ("erfinv", "ERFINV", "Inverse of erf.", "[0.0]", "[0.0]"),
    ("erfc", "ERFC", "1 - erf(x).", "[0.0]", "[1.0]"),
    ("erfcinv", "ERFCINV", "Inverse of erfc.", "[1.0]", "[0.0]"),
    ("round", "ROUND", "Rounds half away from zero.", "[0.5, -1.5, 2.4]", "[1.0, -2.0, 2.0]"),
    ("floor", "FLOOR", "Largest integer not above x.", "[1.5, -1.5]", "[1.0, -2.0]"),
    ("ceil", "CEIL", "Smallest integer not below x.", "[1.5, -1.5]", "[2.0, -1.0]"),
    ("sign", "SIGN", "-1, 0 or 1 by the sign of x.", "[-2.0, 0.0, 3.0]", "[-1.0, 0.0, 1.0]"),
    ("relu", "RELU", "max(x, 0).", "[-1.0, 2.0]", "[0.0, 2.0]"),
    ("gelu", "GELU", "x * Phi(x), the exact (erf) form.", "[0.0]", "[0.0]"),
    ("silu", "SILU", "x * sigmoid(x).", "[0.0]", "[0.0]"),
    ("hswish", "H_SWISH", "x * relu6(x + 3) / 6.", "[0.0, 3.0]", "[0.0, 3.0]"),
    ("hsigmoid", "HSIGMOID", "relu6(x + 3) / 6.", "[0.0, 3.0]", "[0.5, 1.0]"),
    (
        "softplus",
        "SOFTPLUS",
        "log(1 + exp(x)), stable for large x.",
        "[0.0, 100.0]",
        "[0.6931471824645996, 100.0]",
    ),
    (
        "logsigmoid",
        "LOGSIGMOID",
        "log(sigmoid(x)), stable for large |x|.",
        "[0.0, -100.0]",
        "[-0.6931471824645996, -100.0]",
    ),
    ("logical_not", "NOT", "Logical not of a bool tensor.", "[True, False]", "[False, True]"),
    ("isnan", "ISNAN", "Whether each element is NaN.", "[1.0, float('nan')]", "[False, True]"),
    ("isinf", "ISINF", "Whether each element is infinite.", "[1.0, float('inf')]", "[False, True]"),
]
_BINARY = [
    ("add", "ADD", "x + y.", "[1.0, 2.0], 1", "[2.0, 3.0]"),
    ("sub", "SUB", "x - y.", "[1.0, 2.0], 1", "[0.0, 1.0]"),
    ("mul", "MUL", "x * y.", "[1.0, 2.0], 3", "[3.0, 6.0]"),
    ("div", "TRUE_DIV", "x / y (true division; integers give float32).", "[1, 3], 2", "[0.5, 1.5]"),
    ("floor_div", "FLOOR_DIV", "x // y, rounded towards minus infinity.", "[7, -7], 2", "[3, -4]"),
    (
        "mod",
        "MOD",
        "Remainder of x / y, as MegEngine: integers take y's sign (Python's %), floats x's (C's fmod).",
        "[7, -7], 3",
        "[1, 2]",
    ),
    ("pow", "POW", "x ** y.", "[2.0, 3.0], 2", "[4.0, 9.0]"),
    ("maximum", "MAX", "Elementwise maximum.", "[1.0, 5.0], 3", "[3.0, 5.0]"),
    ("minimum", "MIN", "Elementwise minimum.", "[1.0, 5.0], 3", "[1.0, 3.0]"),
    ("equal", "EQ", "x == y.", "[1.0, 2.0], 2", "[False, True]"),
    ("not_equal", "NE", "x != y.", "[1.0, 2.0], 2", "[True, False]"),
    ("less", "LT", "x < y.", "[1.0, 2.0], 2", "[True, False]"),
    ("less_equal", "LEQ", "x <= y.", "[1.0, 3.0], 2", "[True, False]"),
    ("logical_and", "AND", "Logical and of bool tensors.", "[True, False], True", "[True, False]"),
    ("logical_or", "OR", "Logical or of bool tensors.", "[True, False], False", "[True, False]"),
    ("logical_xor", "XOR", "Logical xor of bool tensors.", "[True, False], True", "[False, True]"),
    (
        "atan2",
        "ATAN2",
        "atan2(y, x): the angle of the point (x, y), as numpy.arctan2(y, x).",
        "y=[1.0], x=0.0",
        "[1.5707963705062866]",
    ),
    (
        "logaddexp",
        "LOG_SUM_EXP",
        "log(exp(x) + exp(y)), without overflow.",
        "[1000.0], 1000.0",
        "[1000.6931762695312]",
    ),
    ("left_shift", "SHL", "x << y on integers.", "[1, 2], 3", "[8, 16]"),
    ("right_shift", "SHR", "x >> y on integers (arithmetic).", "[8, -8], 2", "[2, -2]"),
]

for _name, _mode, _summary, _example, _expect in _UNARY:
    _define(_name, _mode, 1, _summary, _example, _expect, globals())
for _name, _mode, _summary, _example, _expect in _BINARY:
    _define(_name, _mode, 2, _summary, _example, _expect, globals())


def greater(x, y):
    """x > y.

    Args:
        x: input tensor or scalar.
        y: input tensor or scalar.

    Returns:
        a bool Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.greater([1.0, 3.0], 2).numpy().tolist()
        [False, True]
    """
    return _elemwise("LT", y, x)


def greater_equal(x, y):
    """x >= y.

    Args:
        x: input tensor or scalar.
        y: input tensor or scalar.

    Returns:
        a bool Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.greater_equal([1.0, 2.0], 2).numpy().tolist()
        [False, True]
    """
    return _elemwise("LEQ", y, x)


_RELU6 = _elemwise_op("RELU6")


def relu6(x):
    """min(max(x, 0), 6).

    Args:
        x: input tensor or scalar.

    Returns:
        a Tensor of x's shape; integer inputs keep their dtype, as MegEngine's RELU6 does.

    Examples:
        >>> import megengine.functional as F
        >>> F.relu6([-1.0, 7.0]).numpy().tolist()
        [0.0, 6.0]
        >>> F.relu6([-1, 3, 7]).numpy().tolist()
        [0, 3, 6]
    """
    t = x if isinstance(x, _Tensor) else _as_tensor(x)
    # The RELU6 kernel computes in float; on integers it is a clip, which keeps the dtype.
    if t._dtype_name in ("uint8", "int8", "int16", "int32"):
        return _elemwise("CLIP", t, 0, 6)
    return _rt.elemwise(_RELU6, t)


def clip(x, lower=None, upper=None):
    """Limits x to [lower, upper]; either bound may be None.

    Args:
        x: input tensor.
        lower: lower bound, or None.
        upper: upper bound, or None.

    Returns:
        a Tensor of x's shape.

    Examples:
        >>> import megengine.functional as F
        >>> F.clip([-2.0, 0.5, 3.0], 0, 1).numpy().tolist()
        [0.0, 0.5, 1.0]
    """
    if lower is None:
        if upper is None:
            raise MegEngineError("clip needs at least one of lower and upper")
        return _rt.elemwise(_MIN, x, upper)
    if upper is None:
        return _rt.elemwise(_MAX, x, lower)
    return _rt.elemwise(_CLIP, x, lower, upper)


_CLIP, _MIN, _MAX = _elemwise_op("CLIP"), _elemwise_op("MIN"), _elemwise_op("MAX")


__all__ += ["clip", "greater", "greater_equal", "relu6"]
