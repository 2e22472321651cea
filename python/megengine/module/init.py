"""``megengine.module.init``: in-place initialisers of Parameters and the fan computations the
layers' default initialisation uses. Random values come from ``megengine.random``'s global
generator, so ``megengine.random.seed`` makes a model's initialisation reproducible."""

import math

import numpy as np

from .. import random as _random
from ..tensor import Tensor

__all__ = [
    "calculate_correct_fan",
    "calculate_fan_in_and_fan_out",
    "calculate_gain",
    "fill_",
    "msra_normal_",
    "msra_uniform_",
    "normal_",
    "ones_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]


def _check(fname, tensor):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{fname} expects a Tensor, got {type(tensor).__name__}")


def _fill_with(tensor, values):
    if values._dtype_name != tensor._dtype_name:
        values = values.astype(tensor._dtype_name)
    if values.device != tensor.device:
        values = values.to(tensor.device)
    tensor._reset(values)


def fill_(tensor, val):
    """Fills ``tensor`` in place with ``val``.

    Args:
        tensor: the Tensor to fill.
        val: the value.

    Returns:
        None.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> w = mge.Parameter([1.0, 2.0])
        >>> M.init.fill_(w, 0.5)
        >>> w.numpy().tolist()
        [0.5, 0.5]
    """
    _check("fill_", tensor)
    try:
        dtype = np.dtype(tensor._dtype_name)
    except TypeError:  # bfloat16: numpy has no such dtype, _fill_with converts
        dtype = np.float32
    _fill_with(tensor, Tensor(np.full(tensor.shape, val, dtype=dtype), device=tensor.device))


def zeros_(tensor):
    """Fills ``tensor`` in place with zeros.

    Args:
        tensor: the Tensor to fill.

    Returns:
        None.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> w = mge.Parameter([1.0, 2.0])
        >>> M.init.zeros_(w)
        >>> w.numpy().tolist()
        [0.0, 0.0]
    """
    fill_(tensor, 0)


def ones_(tensor):
    """Fills ``tensor`` in place with ones.

    Args:
        tensor: the Tensor to fill.

    Returns:
        None.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> w = mge.Parameter([3.0, 2.0])
        >>> M.init.ones_(w)
        >>> w.numpy().tolist()
        [1.0, 1.0]
    """
    fill_(tensor, 1)


def uniform_(tensor, a=0.0, b=1.0):
    """Fills ``tensor`` in place with values drawn uniformly from [a, b).

    Args:
        tensor: the Tensor to fill.
        a: lower bound.
        b: upper bound.

    Returns:
        None.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> w = mge.Parameter([0.0] * 100)
        >>> M.init.uniform_(w, 2, 3)
        >>> bool(((w.numpy() >= 2) & (w.numpy() < 3)).all())
        True
    """
    _check("uniform_", tensor)
    if not a <= b:
        raise ValueError(f"uniform_: needs a <= b, got a={a}, b={b}")
    if a == b:
        fill_(tensor, a)
        return
    _fill_with(tensor, _random.uniform(low=a, high=b, size=tuple(tensor.shape)))


def normal_(tensor, mean=0.0, std=1.0):
    """Fills ``tensor`` in place with values drawn from N(mean, std**2).

    Args:
        tensor: the Tensor to fill.
        mean: mean of the distribution.
        std: standard deviation, >= 0.

    Returns:
        None.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> w = mge.Parameter([0.0] * 4)
        >>> M.init.normal_(w, mean=5.0, std=0.0)
        >>> w.numpy().tolist()
        [5.0, 5.0, 5.0, 5.0]
    """
    _check("normal_", tensor)
    if std < 0:
        raise ValueError(f"normal_: std must be >= 0, got {std}")
    _fill_with(tensor, _random.normal(mean=mean, std=std, size=tuple(tensor.shape)))


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (as in MegEngine and PyTorch): 1 for linear,
    conv and sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for leaky_relu.

    Args:
        nonlinearity: name of the nonlinearity (``"linear"``, ``"conv1d"``, ``"conv2d"``,
            ``"conv3d"``, ``"conv_transpose1d"``, ``"conv_transpose2d"``, ``"conv_transpose3d"``,
            ``"sigmoid"``, ``"tanh"``, ``"relu"``, ``"leaky_relu"``).
        param: the negative slope of leaky_relu (0.01 when None).

    Returns:
        the gain, a float.

    Examples:
        >>> import megengine.module as M
        >>> M.init.calculate_gain("tanh")
        1.6666666666666667
        >>> M.init.calculate_gain("leaky_relu", 1.0)
        1.0
    """
    linear_fns = (
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
    )
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative slope {param!r} is not a number")
        return math.sqrt(2.0 / (1 + slope**2))
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def calculate_fan_in_and_fan_out(tensor):
    """Fan in and fan out of a weight in NCHW layout, as MegEngine computes them: a 2-D
    (out, in) Linear weight gives (in, out); any other (d0, d1, k...) gives
    (d1 * prod(k), d0 * prod(k)).

    Args:
        tensor: the weight, of at least 2 dims.

    Returns:
        a tuple (fan_in, fan_out).

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.init.calculate_fan_in_and_fan_out(mge.Parameter([[0.0] * 3] * 4))
        (3, 4)
    """
    shape = tuple(tensor.shape)
    if len(shape) < 2:
        raise ValueError(
            f"calculate_fan_in_and_fan_out: needs a tensor of at least 2 dims, got shape {shape}"
        )
    num_input, num_output = shape[1], shape[0]
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return num_input * receptive, num_output * receptive


def calculate_correct_fan(tensor, mode):
    """Fan in or fan out of ``tensor``, as ``mode`` says.

    Args:
        tensor: the weight, of at least 2 dims.
        mode: ``"fan_in"`` or ``"fan_out"``.

    Returns:
        the fan, an int.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.init.calculate_correct_fan(mge.Parameter([[0.0] * 3] * 4), "fan_out")
        4
    """
    mode = str(mode).lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"calculate_correct_fan: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0):
    """Fills ``tensor`` with U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot).

    Args:
        tensor: the weight, of at least 2 dims.
        gain: scaling factor.

    Returns:
        None.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> w = mge.Parameter([[0.0] * 3] * 3)  # a = sqrt(6 / 6) = 1
        >>> M.init.xavier_uniform_(w)
        >>> bool((abs(w.numpy()) <= 1).all())
        True
    """
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain=1.0):
    """Fills ``tensor`` with N(0, std**2), std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot).

    Args:
        tensor: the weight, of at least 2 dims.
        gain: scaling factor.

    Returns:
        None.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> w = mge.Parameter([[0.0] * 3] * 2)
        >>> M.init.xavier_normal_(w, gain=0.0)
        >>> w.numpy().tolist()
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    normal_(tensor, 0.0, std)


def msra_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """Fills ``tensor`` with U(-b, b), b = sqrt(3) * gain / sqrt(fan) (He, Kaiming).

    Args:
        tensor: the weight, of at least 2 dims.
        a: negative slope of the leaky_relu that follows (the gain's param).
        mode: ``"fan_in"`` (keeps the forward variance) or ``"fan_out"`` (the backward one).
        nonlinearity: the nonlinearity name given to ``calculate_gain``.

    Returns:
        None.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> w = mge.Parameter([[0.0] * 6] * 2)  # b = sqrt(3) * sqrt(2) / sqrt(6) = 1
        >>> M.init.msra_uniform_(w, nonlinearity="relu")
        >>> bool((abs(w.numpy()) <= 1).all())
        True
    """
    fan = calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(fan)
    uniform_(tensor, -bound, bound)


def msra_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """Fills ``tensor`` with N(0, std**2), std = gain / sqrt(fan) (He, Kaiming).

    Args:
        tensor: the weight, of at least 2 dims.
        a: negative slope of the leaky_relu that follows (the gain's param).
        mode: ``"fan_in"`` or ``"fan_out"``.
        nonlinearity: the nonlinearity name given to ``calculate_gain``.

    Returns:
        None.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> w = mge.Parameter([[0.0] * 500] * 20)
        >>> M.init.msra_normal_(w, nonlinearity="relu")  # std = sqrt(2 / 500) = 0.063
        >>> 0.05 < float(w.numpy().std()) < 0.08
        True
    """
    fan = calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    normal_(tensor, 0.0, gain / math.sqrt(fan))
