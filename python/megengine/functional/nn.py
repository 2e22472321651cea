"""Neural-network functions (``F.nn.conv2d``, ``F.nn.softmax``, ...), also exported as ``F.*``.

Each builds generated ops (``megengine.core.ops.builtin``: ConvolutionForward, PoolingForward,
BatchNormForward, ...; ``dnn/ops/defs`` defines them) and runs them with ``apply``. The
activations that are one Elemwise mode (``relu``, ``sigmoid``, ...) are those of
``functional/elemwise.py``. The losses (``loss.py``) and ``topk_accuracy`` (``metric.py``) are
re-exported here, as MegEngine's ``F.nn`` does.
"""

import builtins

import numpy as np

from ..core import _imperative_rt as _rt
from ..core._imperative_rt import MegEngineError, MegEngineTypeError
from ..core.ops import builtin
from ..core.tensor import amp
from ..core.tensor.array_method import (
    Tensor,
    _promote,
    as_tensor,
    cached_op,
    device_name,
    elemwise,
    elemwise_op,
    kept_scalar,
    reduce,
    remember_op,
    reshape,
)
from ..core.tensor.array_method import transpose as _dimshuffle
from ..core.tensor.shape_dim import INTEGER_TYPES
from ..distributed.group import WORLD
from ..random.rng import _next_seed
from .attention import multi_head_attention
from .elemwise import gelu, hsigmoid, hswish, logsigmoid, relu, relu6, sigmoid, silu, softplus
from .local_conv import local_conv2d
from .loss import (  # noqa: F401 (ctc_loss: F.nn has it, F does not, as in MegEngine)
    binary_cross_entropy,
    cross_entropy,
    ctc_loss,
    hinge_loss,
    l1_loss,
    square_loss,
)
from .math import normalize
from .metric import topk_accuracy
from .sliding_window import sliding_window, sliding_window_transpose
from .tensor import where as _select

apply = _rt.apply
_rt_elemwise = _rt.elemwise
_is_tracing = _rt._is_tracing

__all__ = [
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "avg_pool2d",
    "batch_norm",
    "binary_cross_entropy",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose2d",
    "conv_transpose3d",
    "cross_entropy",
    "deformable_conv2d",
    "deformable_psroi_pooling",
    "dropout",
    "embedding",
    "gelu",
    "general_norm",
    "group_norm",
    "hinge_loss",
    "hsigmoid",
    "hswish",
    "indexing_one_hot",
    "instance_norm",
    "interpolate",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "local_conv2d",
    "local_response_norm",
    "logsigmoid",
    "logsoftmax",
    "logsumexp",
    "max_pool2d",
    "multi_head_attention",
    "normalize",
    "one_hot",
    "pad",
    "pixel_shuffle",
    "prelu",
    "region_restricted_conv",
    "relu",
    "relu6",
    "remap",
    "sigmoid",
    "silu",
    "sliding_window",
    "sliding_window_transpose",
    "softmax",
    "softplus",
    "square_loss",
    "sync_batch_norm",
    "topk_accuracy",
    "warp_affine",
    "warp_perspective",
]

_FLOAT_DTYPES = ("float32", "float16", "bfloat16")
_INT_DTYPES = ("int8", "uint8", "int16", "int32")


# ---------------------------------------------------------------------------------------------
# helpers


def _float_input(x, fname, what="inp"):
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    if x._dtype_name not in _FLOAT_DTYPES:
        raise MegEngineTypeError(
            f"{fname}: {what} must be a float tensor, got dtype {x._dtype_name}"
        )
    return x


def _int_input(x, fname, what, floats=False):
    # floats: MegEngine's IndexingOneHot takes a float index too and truncates it toward zero
    # (its own cross_entropy examples give float labels)
    x = as_tensor(x)
    if floats and x._dtype_name in _FLOAT_DTYPES:
        return x.astype("int32")
    if x._dtype_name not in _INT_DTYPES:
        raise MegEngineTypeError(
            f"{fname}: {what} must be an integer tensor, got dtype {x._dtype_name}"
        )
    if x._dtype_name != "int32":
        x = x.astype("int32")
    return x


def _tuple(value, n, fname, name):
    """``value`` (an int or a sequence of n ints) as a tuple of n Python ints."""
    if isinstance(value, INTEGER_TYPES):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise MegEngineError(f"{fname}: {name} needs {n} values, got {value}")
    return value


def _add_axis(x, axes):
    return apply(cached_op(builtin.AddAxis, axis=tuple(axes)), x)[0]


def _remove_axis(x, axes):
    return apply(cached_op(builtin.RemoveAxis, axis=tuple(axes)), x)[0]


def _fill(shape, value, dtype, device):
    op = cached_op(builtin.Fill, value=float(value), dtype=dtype)
    return _rt.apply_generator(op, [list(shape)], device)[0]


def _where(cond, a, b):
    """Elementwise ``a if cond else b`` (Elemwise COND); a and b share a dtype."""
    return apply(cached_op(builtin.Elemwise, mode="COND"), cond, a, b)[0]


def _channel_shape(ndim, c):
    """(1, C, 1, ...) for an input of ``ndim`` dims."""
    return (1, c) + (1,) * (ndim - 2)


# ---------------------------------------------------------------------------------------------
# activations


def leaky_relu(inp, negative_slope=0.01):
    """Leaky ReLU: ``x`` where positive, ``negative_slope * x`` elsewhere.

    Args:
        inp: input tensor.
        negative_slope: slope for negative inputs.

    Returns:
        a Tensor of inp's shape.

    Examples:
        >>> import megengine.functional as F
        >>> F.leaky_relu([-2.0, 3.0], negative_slope=0.5).numpy().tolist()
        [-1.0, 3.0]
    """
    x = as_tensor(inp)
    return _leaky(x, negative_slope)


def _leaky(x, slope):
    # x where x >= 0, slope * x elsewhere, by a select: at x == 0 the gradient is 1 for x (and
    # 0 for the slope), as MegEngine 1.13's PRELU gives. max(x, 0) + min(x, 0) * slope, the
    # same values, gave 1 + slope there: the max and the min each pass a tie's gradient.
    # Float data takes Elemwise PRELU, that select in one pass (the three ops LT, MUL and COND
    # moved about 3x the bytes: 0.21x PyTorch's leaky_relu on 32x64x28x28); its backward rule
    # is the select's. Integer data keeps the ops, which promote as MegEngine's do.
    if x._dtype_name in _FLOAT_DTYPES:
        return elemwise("PRELU", x, slope)
    return _select(elemwise("LT", x, 0), x * slope, x)


def prelu(x, y):
    """Parametric ReLU: ``max(x, 0) + y * min(x, 0)``, the slope ``y`` broadcasting to x.

    Args:
        x: input tensor.
        y: learned slope of the negative part, broadcastable to x (e.g. (1, C, 1, 1)).

    Returns:
        a Tensor of x's shape.

    Examples:
        >>> import megengine.functional as F
        >>> F.prelu([[-2.0, -2.0], [1.0, 1.0]], [0.5, 0.25]).numpy().tolist()
        [[-1.0, -0.5], [1.0, 1.0]]
    """
    x = as_tensor(x)
    return _leaky(x, as_tensor(y))


def _softmax_axis(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def _norm_axis(axis, ndim, fname):
    n = ndim or 1  # a 0-d tensor takes axis 0 and -1
    if not -n <= axis < n:
        raise MegEngineError(f"{fname}: axis {axis} is out of range for a tensor of {ndim} dims")
    return axis % n


def softmax(inp, axis=None):
    """Softmax along ``axis``: ``exp(x) / sum(exp(x))``, computed without overflow.

    Args:
        inp: input tensor.
        axis: the axis to normalise over; when None, 0 for 0-, 1- and 3-dim inputs and 1
            otherwise (MegEngine's default).

    Returns:
        a Tensor of inp's shape whose slices along ``axis`` sum to 1.

    Examples:
        >>> import megengine.functional as F
        >>> F.softmax([[0.0, 0.0], [1000.0, 1000.0]], axis=1).numpy().tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """
    x = _float_input(inp, "softmax")
    ndim = x.ndim
    if axis is None:
        axis = _softmax_axis(ndim)
    axis = _norm_axis(axis, ndim, "softmax")
    if ndim == 0:
        return _softmax_op(builtin.SoftmaxForward, reshape(x, (1,)), 0).reshape(())
    return apply(cached_op(builtin.SoftmaxForward, int(axis)), x)[0]


def _softmax_op(cls, x, axis):
    return apply(cached_op(cls, int(axis)), x)[0]


def logsoftmax(inp, axis):
    """Log of the softmax along ``axis``: ``x - logsumexp(x)``, computed without overflow.

    Args:
        inp: input tensor.
        axis: an axis, or a sequence of axes normalised together.

    Returns:
        a Tensor of inp's shape.

    Examples:
        >>> import megengine.functional as F
        >>> F.logsoftmax([[1.0, 1.0], [3.0, 3.0]], axis=0).numpy().tolist()
        [[-2.1269280910491943, -2.1269280910491943], [-0.12692801654338837, -0.12692801654338837]]
    """
    x = _float_input(inp, "logsoftmax")
    if amp._enabled:
        # MegEngine composes it of exp and log, which autocast computes in high precision.
        (x,) = amp.cast_tensors(x, promote=True)
    if isinstance(axis, (list, tuple)):
        return x - logsumexp(x, axis, keepdims=True)
    axis = _norm_axis(axis, x.ndim, "logsoftmax")
    if x.ndim == 0:
        return _softmax_op(builtin.LogSoftmaxForward, reshape(x, (1,)), 0).reshape(())
    return _softmax_op(builtin.LogSoftmaxForward, x, axis)


def logsumexp(inp, axis, keepdims=False):
    """``log(sum(exp(x)))`` over ``axis``, computed as ``max + log(sum(exp(x - max)))``.

    Args:
        inp: input tensor.
        axis: an axis or a sequence of axes.
        keepdims: keep the reduced axes with size 1.

    Returns:
        the reduced Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.logsumexp([[1000.0, 1000.0], [0.0, float("-inf")]], axis=1).numpy().tolist()
        [1000.6931762695312, 0.0]
    """
    if (
        type(axis) is int
        and isinstance(inp, Tensor)
        and inp._dtype_name in _FINITE_MAX
        and not amp._enabled
        and not _is_tracing()
    ):
        out = _logsumexp_axis(inp, axis, keepdims)
        if out is not None:
            return out
    x = as_tensor(inp)
    if x._dtype_name in _INT_DTYPES:
        x = x.astype("float32")  # as MegEngine 1.13, whose EXP takes integers in float32
    x = _float_input(x, "logsumexp")
    m = reduce(x, "max", axis, keepdims=True).detach()
    # A slice that is all -inf (or inf) has no finite max to shift by: shift by 0 there.
    if isinstance(m, Tensor) and not _is_tracing():
        zero = kept_scalar(0.0, m._dtype_name, device_name(m))  # a Fill was 1.7 us of the call
    else:
        zero = _zeros_like(m)
    m = _where(elemwise("ISINF", m), zero, m)
    s = reduce(elemwise("EXP", x - m), "sum", axis, keepdims=True)
    out = elemwise("LOG", s) + m
    if not keepdims:
        axes = _axes(axis, x.ndim)
        if axes and x.ndim:
            out = _remove_axis(out, axes)
    return out


# The largest finite value of each dtype _logsumexp_axis takes (bfloat16's is not a float32
# constant NumPy can name).
_FINITE_MAX = {"float32": float(np.finfo(np.float32).max), "float16": 65504.0}
_LSE_OPS = {m: elemwise_op(m) for m in ("CLIP", "EXP", "LOG")}


def _logsumexp_axis(x, axis, keepdims):
    """logsumexp over one axis of a float32/float16 Tensor in eight ops (the general path
    applies nine), or None for an axis out of range (the general path raises)."""
    ndim = x.ndim
    a = axis + ndim if axis < 0 else axis
    if not 0 <= a < ndim:
        return None
    dt, dev, ops = x._dtype_name, device_name(x), _LSE_OPS
    big = _FINITE_MAX[dt]
    m = _rt.apply(cached_op(builtin.Reduce, "MAX", a), x)[0].detach()
    # The general path shifts a slice whose max is infinite by 0 (ISINF, COND); clamping that
    # max to the largest finite value instead is one op and changes no result: exp of x - m is
    # still 0 for -inf and inf for inf, the sum 0 or inf, and log(0) + m = -inf, log(inf) + m =
    # inf. A finite max (and NaN) passes unchanged, so every bit is the general path's.
    m = _rt.elemwise(ops["CLIP"], m, kept_scalar(-big, dt, dev), kept_scalar(big, dt, dev))
    e = _rt.elemwise(ops["EXP"], x - m)
    out = _rt.elemwise(ops["LOG"], _rt.apply(cached_op(builtin.Reduce, "SUM", a), e)[0]) + m
    return out if keepdims else _rt.apply(cached_op(builtin.RemoveAxis, (a,)), out)[0]


def _zeros_like(x):
    return _fill(x.shape, 0, x._dtype_name, x.device)


def _axes(axis, ndim):
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, (list, tuple)):
        return sorted({a % ndim for a in axis})
    return [axis % builtins.max(ndim, 1)]


# ---------------------------------------------------------------------------------------------
# linear and convolution


def linear(inp, weight, bias=None, compute_mode="default"):
    """Applies a linear transformation: ``inp @ weight.T + bias``.

    Args:
        inp: input of shape (..., in_features).
        weight: weight of shape (out_features, in_features).
        bias: optional bias of shape (out_features,).
        compute_mode: accepted for MegEngine compatibility; NeoMeg computes in the input dtype.

    Returns:
        a Tensor of shape (..., out_features).

    Examples:
        >>> import megengine.functional as F
        >>> F.linear([[1.0, 2.0]], [[1.0, 1.0], [0.0, 1.0]], [0.5, -1.0]).numpy().tolist()
        [[3.5, 1.0]]
    """
    x = _float_input(inp, "linear")
    w = _float_input(weight, "linear", "weight")
    if w.ndim != 2 or x.ndim < 1 or x.shape[-1] != w.shape[1]:
        raise MegEngineError(
            f"linear: inp {x.shape} does not match weight {w.shape} (out_features, in_features)"
        )
    if amp._enabled:
        # MegEngine's rule: the product and the bias in the low-precision dtype.
        x, w = amp.cast_tensors(x, w)
        if bias is not None:
            (bias,) = amp.cast_tensors(as_tensor(bias))
    lead = x.shape[:-1]
    x2 = reshape(x, (-1, x.shape[-1])) if x.ndim != 2 else x
    out = apply(cached_op(builtin.MatrixMul, False, True), x2, w)[0]
    if x.ndim != 2:
        out = reshape(out, lead + (w.shape[0],))
    if bias is not None:
        out = out + as_tensor(bias)
    return out


_CONV_MODES = {"cross_correlation": "CROSS_CORRELATION", "convolution": "CONVOLUTION"}


def _conv_mode(conv_mode, fname):
    mode = _CONV_MODES.get(str(conv_mode).lower())
    if mode is None:
        raise MegEngineError(
            f"{fname}: conv_mode must be 'cross_correlation' or 'convolution', got {conv_mode!r}"
        )
    return mode


def _conv_filter(w, nd, groups, fname, x_shape, transposed=False):
    """The (OC, IC/group, k...) filter the op takes, from MegEngine's weight layouts: dense
    (nd + 2 dims) or grouped (groups, ..., k...) with nd + 3 dims."""
    if groups < 1:
        raise MegEngineError(f"{fname}: groups must be >= 1, got {groups}")
    if w.ndim == nd + 3:
        if w.shape[0] != groups:
            raise MegEngineError(
                f"{fname}: grouped weight {w.shape} does not start with groups={groups}"
            )
        w = reshape(w, (w.shape[0] * w.shape[1],) + w.shape[2:])
    elif w.ndim != nd + 2:
        raise MegEngineError(
            f"{fname}: weight must have {nd + 2} dims (or {nd + 3} when grouped), got {w.shape}"
        )
    in_c = w.shape[0] if transposed else w.shape[1] * groups
    if x_shape[1] != in_c or (not transposed and w.shape[0] % groups) or w.shape[0] == 0:
        raise MegEngineError(
            f"{fname}: inp {x_shape} has {x_shape[1]} channels, weight {w.shape} with "
            f"groups={groups} expects {in_c}"
        )
    if transposed and w.shape[0] % groups:
        raise MegEngineError(f"{fname}: weight {w.shape} is not divisible into groups={groups}")
    return w


def _add_bias(out, bias, fname):
    if bias is None:
        return out
    b = as_tensor(bias)
    if amp._enabled and out._dtype_name == amp._low_prec_dtype:
        (b,) = amp.cast_tensors(b)
    c = out.shape[1]
    if b.size != c:
        raise MegEngineError(
            f"{fname}: bias {b.shape} does not have {c} elements (output channels)"
        )
    if b.shape != _channel_shape(out.ndim, c):
        b = reshape(b, _channel_shape(out.ndim, c))
    return out + b


def _conv(fname, nd, inp, weight, bias, stride, padding, dilation, groups, conv_mode):
    x, w = as_tensor(inp), as_tensor(weight)
    # MegEngine promotes the two to one dtype: integer images convolve with a float filter
    # in the filter's dtype (and an integer filter takes the image's).
    if x._dtype_name not in _FLOAT_DTYPES and w._dtype_name in _FLOAT_DTYPES:
        x = x.astype(w._dtype_name)
    elif w._dtype_name not in _FLOAT_DTYPES and x._dtype_name in _FLOAT_DTYPES:
        w = w.astype(x._dtype_name)
    x = _float_input(x, fname)
    w = _float_input(w, fname, "weight")
    if amp._enabled and nd != 3:
        # MegEngine casts 1-D and 2-D convolutions (its Convolution op); 3-D ones promote.
        low = amp._low_prec_dtype
        out_c = w.shape[0] * (w.shape[1] if w.ndim == nd + 3 else 1)
        last = nd == 2 and amp._auto_channels_last(x, low, out_c)
        x, w = amp.cast(x, low, channels_last=last), amp.cast(w, low)
    elif nd == 2 and amp._auto_channels_last_float32(x, int(groups)):
        x = amp._auto_layout_copy(x)
    if x.ndim != nd + 2:
        raise MegEngineError(
            f"{fname}: inp must have {nd + 2} dims (N, C, spatial...), got {x.shape}"
        )
    w = _conv_filter(w, nd, int(groups), fname, x.shape)
    stride = _tuple(stride, nd, fname, "stride")
    padding = _tuple(padding, nd, fname, "padding")
    dilation = _tuple(dilation, nd, fname, "dilation")
    if builtins.min(stride) < 1 or builtins.min(dilation) < 1 or builtins.min(padding) < 0:
        raise MegEngineError(
            f"{fname}: stride {stride} and dilation {dilation} must be >= 1, padding {padding} >= 0"
        )
    for i in range(nd):
        span = dilation[i] * (w.shape[2 + i] - 1) + 1
        if x.shape[2 + i] + 2 * padding[i] < span:
            raise MegEngineError(
                f"{fname}: inp {x.shape} padded by {padding} is smaller than the dilated kernel "
                f"of weight {w.shape}"
            )
    op = cached_op(
        builtin.ConvolutionForward,
        mode=_conv_mode(conv_mode, fname),
        stride=stride,
        padding=padding,
        dilation=dilation,
        group=int(groups),
    )
    return _add_bias(apply(op, x, w)[0], bias, fname)


def conv1d(
    inp,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    conv_mode="cross_correlation",
    compute_mode="default",
):
    """1-D convolution over an (N, C, W) input.

    Args:
        inp: input of shape (N, IC, W); an integer input takes the filter's float dtype
            (MegEngine's promotion).
        weight: filter of shape (OC, IC // groups, K).
        bias: optional bias with OC elements, e.g. of shape (1, OC, 1).
        stride: step of the window.
        padding: zeros added at both ends.
        dilation: gap between kernel taps.
        groups: channel groups; IC and OC must be divisible by it.
        conv_mode: "cross_correlation" (the usual) or "convolution" (kernel flipped).
        compute_mode: accepted for MegEngine compatibility; NeoMeg computes in the input dtype.

    Returns:
        a Tensor of shape (N, OC, (W + 2 * padding - dilation * (K - 1) - 1) // stride + 1).

    Examples:
        >>> import megengine.functional as F
        >>> F.conv1d([[[1.0, 2.0, 3.0, 4.0]]], [[[1.0, -1.0]]]).numpy().tolist()
        [[[-1.0, -1.0, -1.0]]]
    """
    return _conv("conv1d", 1, inp, weight, bias, stride, padding, dilation, groups, conv_mode)


def conv2d(
    inp,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    conv_mode="cross_correlation",
    compute_mode="default",
):
    """2-D convolution over an (N, C, H, W) input.

    Args:
        inp: input of shape (N, IC, H, W); an integer input takes the filter's float dtype
            (MegEngine's promotion).
        weight: filter of shape (OC, IC, KH, KW), or (groups, OC // groups, IC // groups, KH, KW)
            when grouped.
        bias: optional bias with OC elements, e.g. of shape (1, OC, 1, 1).
        stride: step of the window, an int or (sh, sw).
        padding: zeros added at both ends, an int or (ph, pw).
        dilation: gap between kernel taps, an int or (dh, dw).
        groups: channel groups; IC and OC must be divisible by it.
        conv_mode: "cross_correlation" (the usual) or "convolution" (kernel flipped).
        compute_mode: accepted for MegEngine compatibility; NeoMeg computes in the input dtype.

    Returns:
        a Tensor of shape (N, OC, OH, OW) with
        OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1, likewise OW.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(9, dtype="float32").reshape(1, 1, 3, 3)
        >>> F.conv2d(x, np.ones((1, 1, 2, 2), "float32")).numpy().tolist()
        [[[[8.0, 12.0], [20.0, 24.0]]]]
    """
    return _conv("conv2d", 2, inp, weight, bias, stride, padding, dilation, groups, conv_mode)


def conv3d(
    inp,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    conv_mode="cross_correlation",
):
    """3-D convolution over an (N, C, D, H, W) input.

    Args:
        inp: input of shape (N, IC, D, H, W); an integer input takes the filter's float dtype
            (MegEngine's promotion).
        weight: filter of shape (OC, IC, KD, KH, KW), or (groups, OC // groups, IC // groups,
            KD, KH, KW) when grouped.
        bias: optional bias with OC elements, e.g. of shape (1, OC, 1, 1, 1).
        stride: step of the window, an int or three.
        padding: zeros added at both ends, an int or three.
        dilation: gap between kernel taps, an int or three.
        groups: channel groups; IC and OC must be divisible by it.
        conv_mode: "cross_correlation" (the usual) or "convolution" (kernel flipped).

    Returns:
        a Tensor of shape (N, OC, OD, OH, OW), each as for :func:`conv2d`.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.ones((1, 1, 2, 2, 2), "float32")
        >>> F.conv3d(x, np.ones((2, 1, 2, 2, 2), "float32")).numpy().tolist()
        [[[[[8.0]]], [[[8.0]]]]]
    """
    return _conv("conv3d", 3, inp, weight, bias, stride, padding, dilation, groups, conv_mode)


def conv_transpose2d(
    inp,
    weight,
    bias=None,
    stride=1,
    padding=0,
    output_padding=0,
    dilation=1,
    groups=1,
    conv_mode="cross_correlation",
    compute_mode="default",
):
    """2-D transposed convolution (the gradient of :func:`conv2d` with respect to its input).

    Args:
        inp: input of shape (N, IC, H, W).
        weight: filter of shape (IC, OC // groups, KH, KW), or (groups, IC // groups,
            OC // groups, KH, KW) when grouped.
        bias: optional bias with OC elements, e.g. of shape (1, OC, 1, 1).
        stride: stride of the matching conv2d, an int or (sh, sw).
        padding: padding of the matching conv2d, an int or (ph, pw).
        output_padding: extra rows/columns added at the bottom/right of the output, each
            smaller than the stride or the dilation of its dim.
        dilation: dilation of the matching conv2d, an int or (dh, dw).
        groups: channel groups; IC and OC must be divisible by it.
        conv_mode: "cross_correlation" (the usual) or "convolution" (kernel flipped).
        compute_mode: accepted for MegEngine compatibility; NeoMeg computes in the input dtype.

    Returns:
        a Tensor of shape (N, OC, OH, OW) with
        OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + 1 + output_padding[0], likewise OW.

    Examples:
        >>> import megengine.functional as F
        >>> F.conv_transpose2d([[[[1.0, 2.0]]]], [[[[1.0, 10.0]]]]).numpy().tolist()
        [[[[1.0, 12.0, 20.0]]]]
    """
    return _conv_transpose(
        "conv_transpose2d",
        2,
        inp,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        dilation,
        groups,
        conv_mode,
    )


def conv_transpose3d(
    inp,
    weight,
    bias=None,
    stride=1,
    padding=0,
    output_padding=0,
    dilation=1,
    groups=1,
):
    """3-D transposed convolution (the gradient of :func:`conv3d` with respect to its input).

    Args:
        inp: input of shape (N, IC, D, H, W).
        weight: filter of shape (IC, OC // groups, KD, KH, KW), or (groups, IC // groups,
            OC // groups, KD, KH, KW) when grouped.
        bias: optional bias with OC elements, e.g. of shape (1, OC, 1, 1, 1).
        stride: stride of the matching conv3d, an int or three.
        padding: padding of the matching conv3d, an int or three.
        output_padding: extra planes added at the back of each spatial dim of the output, each
            smaller than the stride or the dilation of its dim.
        dilation: dilation of the matching conv3d, an int or three.
        groups: channel groups; IC and OC must be divisible by it.

    Returns:
        a Tensor of shape (N, OC, OD, OH, OW), each as for :func:`conv_transpose2d`.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.ones((1, 1, 1, 1, 2), "float32")
        >>> F.conv_transpose3d(x, np.ones((1, 2, 1, 1, 2), "float32")).numpy().tolist()
        [[[[[1.0, 2.0, 1.0]]], [[[1.0, 2.0, 1.0]]]]]
    """
    return _conv_transpose(
        "conv_transpose3d",
        3,
        inp,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        dilation,
        groups,
        "cross_correlation",
    )


def _conv_transpose(
    fname, nd, inp, weight, bias, stride, padding, output_padding, dilation, groups, conv_mode
):
    x = _float_input(inp, fname)
    w = _float_input(weight, fname, "weight")
    if amp._enabled and nd != 3:  # as _conv: MegEngine casts the 2-D op, 3-D ones promote
        x, w = amp.cast_tensors(x, w)
    if x.ndim != nd + 2:
        raise MegEngineError(
            f"{fname}: inp must have {nd + 2} dims (N, C, spatial...), got {x.shape}"
        )
    w = _conv_filter(w, nd, int(groups), fname, x.shape, transposed=True)
    stride = _tuple(stride, nd, fname, "stride")
    padding = _tuple(padding, nd, fname, "padding")
    dilation = _tuple(dilation, nd, fname, "dilation")
    output_padding = _tuple(output_padding, nd, fname, "output_padding")
    if builtins.min(stride) < 1 or builtins.min(dilation) < 1 or builtins.min(padding) < 0:
        raise MegEngineError(
            f"{fname}: stride {stride} and dilation {dilation} must be >= 1, padding {padding} >= 0"
        )
    for i in range(nd):
        if not 0 <= output_padding[i] < builtins.max(stride[i], dilation[i]):
            raise MegEngineError(
                f"{fname}: output_padding {output_padding} must be smaller than stride {stride} "
                f"or dilation {dilation}"
            )
        out = (x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (w.shape[2 + i] - 1)
        if out + 1 <= 0:
            raise MegEngineError(
                f"{fname}: inp {x.shape} with weight {w.shape} and padding {padding} gives an "
                "empty output"
            )
    if not any(output_padding):
        out = _conv_transpose_op(conv_mode, fname, stride, padding, dilation, groups, w, x)
        return _add_bias(out, bias, fname)
    # The extra planes are input positions of the matching convolution that its padding covered
    # (they get the gradient there) or that no window reaches (zeros): compute the unpadded
    # result, add zeros at the back where needed, and crop the padding.
    full = _conv_transpose_op(conv_mode, fname, stride, (0,) * nd, dilation, groups, w, x)
    extra = tuple(builtins.max(o - p, 0) for o, p in zip(output_padding, padding))
    if any(extra):
        pad_op = cached_op(
            builtin.Padding,
            mode="CONSTANT",
            value=0.0,
            front_offsets=(0,) * (nd + 2),
            back_offsets=(0, 0) + extra,
        )
        full = apply(pad_op, full)[0]
    crop = tuple(
        slice(padding[i], full.shape[2 + i] - extra[i] - padding[i] + output_padding[i])
        for i in range(nd)
    )
    return _add_bias(full[(slice(None), slice(None)) + crop], bias, fname)


def _conv_transpose_op(conv_mode, fname, stride, padding, dilation, groups, w, x):
    op = cached_op(
        builtin.ConvolutionBackwardData,
        mode=_conv_mode(conv_mode, fname),
        stride=stride,
        padding=padding,
        dilation=dilation,
        group=int(groups),
    )
    return apply(op, w, x)[0]


# ---------------------------------------------------------------------------------------------
# pooling


def _pool(fname, inp, kernel_size, stride, padding, mode):
    x = as_tensor(inp)
    # a quantized tensor pools its integers: the maximum, or MegEngine's average (the window's
    # sum over the count, rounded half away from zero, padding counting as the zero point)
    if x.dtype.metadata is None:
        x = _float_input(x, fname)
    if x.ndim != 4:
        raise MegEngineError(f"{fname}: inp must have 4 dims (N, C, H, W), got {x.shape}")
    window = _tuple(kernel_size, 2, fname, "kernel_size")
    stride = window if stride is None else _tuple(stride, 2, fname, "stride")
    padding = _tuple(padding, 2, fname, "padding")
    if builtins.min(window) < 1 or builtins.min(stride) < 1:
        raise MegEngineError(f"{fname}: kernel_size {window} and stride {stride} must be >= 1")
    for i in range(2):
        if not 0 <= padding[i] < window[i]:
            raise MegEngineError(
                f"{fname}: padding {padding} must be >= 0 and smaller than kernel_size {window}"
            )
        if x.shape[2 + i] + 2 * padding[i] < window[i]:
            raise MegEngineError(
                f"{fname}: inp {x.shape} padded by {padding} is smaller than kernel_size {window}"
            )
    op = cached_op(builtin.PoolingForward, mode=mode, window=window, stride=stride, padding=padding)
    return apply(op, x)[0]


def max_pool2d(inp, kernel_size, stride=None, padding=0):
    """2-D max pooling over an (N, C, H, W) input.

    Args:
        inp: input of shape (N, C, H, W).
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window; kernel_size when None.
        padding: implicit padding (never the maximum) at both ends, smaller than the window.

    Returns:
        a Tensor of shape (N, C, (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1).

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
        >>> F.max_pool2d(x, 2).numpy().tolist()
        [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _pool("max_pool2d", inp, kernel_size, stride, padding, "MAX")


_AVG_MODES = {
    "average": "AVERAGE",
    "average_count_include_padding": "AVERAGE",
    "average_count_exclude_padding": "AVERAGE_COUNT_EXCLUDE_PADDING",
}


def avg_pool2d(inp, kernel_size, stride=None, padding=0, mode="average_count_exclude_padding"):
    """2-D average pooling over an (N, C, H, W) input.

    Args:
        inp: input of shape (N, C, H, W).
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window; kernel_size when None.
        padding: zeros added at both ends, smaller than the window.
        mode: "average_count_exclude_padding" divides by the number of input elements in the
            window; "average" (or "average_count_include_padding") by the window size.

    Returns:
        a Tensor of shape (N, C, (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1).

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
        >>> F.avg_pool2d(x, 2).numpy().tolist()
        [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    m = _AVG_MODES.get(str(mode).lower())
    if m is None:
        raise MegEngineError(f"avg_pool2d: mode must be one of {sorted(_AVG_MODES)}, got {mode!r}")
    return _pool("avg_pool2d", inp, kernel_size, stride, padding, m)


def _adaptive_pool(fname, inp, oshp, mode):
    x = as_tensor(inp)
    if x.dtype.metadata is None:  # a quantized tensor pools its integers, as in _pool
        x = _float_input(x, fname)
    if x.ndim != 4:
        raise MegEngineError(f"{fname}: inp must have 4 dims (N, C, H, W), got {x.shape}")
    shape = _tuple(oshp, 2, fname, "oshp")
    if builtins.min(shape) < 1 or builtins.min(x.shape[2:]) < 1:
        raise MegEngineError(
            f"{fname}: oshp {shape} and the spatial dims of inp {x.shape} must be >= 1"
        )
    return apply(cached_op(builtin.AdaptivePoolingForward, mode=mode, shape=shape), x)[0]


def adaptive_max_pool2d(inp, oshp):
    """2-D max pooling to a fixed output size: MegEngine's windows, one length
    ``in - (out - 1) * (in // out)`` at a stride of ``in // out`` (neighbours may overlap; an
    output larger than its input takes ``[floor(i * in / out), ceil((i + 1) * in / out))``).

    Args:
        inp: input of shape (N, C, H, W).
        oshp: output size, an int or (OH, OW).

    Returns:
        a Tensor of shape (N, C, OH, OW).

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
        >>> F.adaptive_max_pool2d(x, (1, 2)).numpy().tolist()
        [[[[13.0, 15.0]]]]
    """
    return _adaptive_pool("adaptive_max_pool2d", inp, oshp, "MAX")


def adaptive_avg_pool2d(inp, oshp):
    """2-D average pooling to a fixed output size: MegEngine's windows, one length
    ``in - (out - 1) * (in // out)`` at a stride of ``in // out`` (neighbours may overlap; an
    output larger than its input takes ``[floor(i * in / out), ceil((i + 1) * in / out))``).

    Args:
        inp: input of shape (N, C, H, W).
        oshp: output size, an int or (OH, OW).

    Returns:
        a Tensor of shape (N, C, OH, OW).

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
        >>> F.adaptive_avg_pool2d(x, 1).numpy().tolist()
        [[[[7.5]]]]
    """
    return _adaptive_pool("adaptive_avg_pool2d", inp, oshp, "AVERAGE")


# ---------------------------------------------------------------------------------------------
# normalisation


_RSQRT = elemwise_op("RSQRT")


def _bn_param(t, dt, c, cshape):
    # A Tensor of dtype dt with c elements as (1, C, 1, ...), as batch_norm's param() gives it;
    # None for anything its checks and conversions would treat otherwise.
    if not isinstance(t, Tensor) or t._dtype_name != dt:
        return None
    if t.shape == cshape:
        return t
    return reshape(t, cshape) if t.size == c else None


def _batch_norm_inference(x, running_mean, running_var, weight, bias, eps):
    """batch_norm's inference output for Tensors of one float dtype outside tracing and
    autocast; None for any other call, which the general path takes.

    The general path's ops in its order, without its per-call Fills for an absent weight and
    bias (a Fill is 1.5-3 us): multiplying by ones is exact, so a missing weight is left out;
    adding zeros turns -0.0 into +0.0, so a missing bias adds a kept 0-d zero of the dtype (an
    operand only: never returned, never written).
    """
    if amp._enabled or _is_tracing() or not isinstance(x, Tensor):
        return None
    dt = x._dtype_name
    shape = x.shape
    if dt not in _FLOAT_DTYPES or len(shape) < 2:
        return None
    c = shape[1]
    cshape = (1, c, 1, 1) if len(shape) == 4 else (1, c) + (1,) * (len(shape) - 2)
    rm, rv, w, b = running_mean, running_var, weight, bias
    if not (
        # the module's parameters and statistics: nothing to convert
        isinstance(rm, Tensor)
        and isinstance(rv, Tensor)
        and rm._dtype_name == rv._dtype_name == dt
        and rm.shape == rv.shape == cshape
        and (w is None or (isinstance(w, Tensor) and w._dtype_name == dt and w.shape == cshape))
        and (b is None or (isinstance(b, Tensor) and b._dtype_name == dt and b.shape == cshape))
    ):
        rm = _bn_param(rm, dt, c, cshape)
        rv = _bn_param(rv, dt, c, cshape)
        w = None if weight is None else _bn_param(weight, dt, c, cshape)
        b = None if bias is None else _bn_param(bias, dt, c, cshape)
        if rm is None or rv is None or (w is None) != (weight is None):
            return None
        if b is None and bias is not None:
            return None
    if b is None:
        b = kept_scalar(0.0, dt, device_name(x))
    scale = _rt_elemwise(_RSQRT, rv + eps)
    if w is not None:
        scale = scale * w
    out = (x - rm) * scale + b
    # bfloat16 statistics plus the float eps are float32, as on the general path
    return out if out._dtype_name == dt else out.astype(dt)


def batch_norm(
    inp,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    *,
    training=False,
    momentum=0.9,
    eps=1e-5,
    inplace=True,
    compute_mode="default",
    param_dim="dim_1c11",
):
    """Batch normalisation over every axis but axis 1 (the channels).

    With ``training``, normalises with the batch statistics and updates the running ones as
    ``running = running * momentum + batch * (1 - momentum)`` (the unbiased batch variance for
    ``running_var``); otherwise normalises with ``running_mean`` and ``running_var``.

    NeoMeg tensors are values, so "in place" means that with ``inplace=True`` the Tensor
    objects passed as ``running_mean`` and ``running_var`` are given the new values with
    ``Tensor._reset`` (their identity stays, as an optimizer's update keeps a Parameter's); with
    ``inplace=False`` they are left alone and the new statistics are returned.

    Args:
        inp: input of shape (N, C, ...).
        running_mean: running mean with C elements ((1, C, 1, ...) or (C,)); required unless
            training.
        running_var: running variance, shaped as running_mean.
        weight: optional scale with C elements.
        bias: optional shift with C elements.
        training: normalise with the batch statistics and update the running ones.
        momentum: weight of the old running statistics in the update.
        eps: added to the variance before the square root.
        inplace: update running_mean and running_var themselves (see above).
        compute_mode: accepted for MegEngine compatibility; NeoMeg computes in the input dtype.
        param_dim: "dim_1c11" or "dim_c", the layout of the statistics MegEngine expects; any
            tensor with C elements is accepted here.

    Returns:
        the normalised Tensor; with ``inplace=False``, the tuple
        (output, new running_mean, new running_var) (the given statistics when not training).

    Examples:
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> x = mge.Tensor([[1.0], [3.0]])
        >>> mean, var = mge.Tensor([0.0]), mge.Tensor([1.0])
        >>> F.batch_norm(x, mean, var, training=True, eps=0.0).numpy().tolist()
        [[-1.0], [1.0]]
        >>> round(mean.item(), 5), round(var.item(), 5)  # 0.9 * old + 0.1 * (2, 2)
        (0.2, 1.1)
    """
    fname = "batch_norm"
    x = _float_input(inp, fname)
    if x.ndim < 2:
        raise MegEngineError(f"{fname}: inp must have at least 2 dims (N, C, ...), got {x.shape}")
    if param_dim not in ("dim_1c11", "dim_c", "dim_111c"):
        raise MegEngineError(f"{fname}: param_dim must be 'dim_1c11' or 'dim_c', got {param_dim!r}")
    c = x.shape[1]
    cshape = _channel_shape(x.ndim, c)
    if (running_mean is None) != (running_var is None):
        raise MegEngineError(f"{fname}: give both running_mean and running_var, or neither")
    has_stats = running_mean is not None
    if not training and not has_stats:
        raise MegEngineError(
            f"{fname}: running_mean and running_var are required when not training"
        )
    if training and has_stats and inplace:
        for t in (running_mean, running_var):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"{fname}: inplace=True updates running_mean and running_var, so they must "
                    f"be Tensors, got {type(t).__name__}"
                )

    def param(t, what, default):
        if t is None:
            return _fill(cshape, default, x._dtype_name, x.device)
        t = _float_input(t, fname, what)
        if t.size != c:
            raise MegEngineError(
                f"{fname}: {what} {t.shape} does not have one element per channel of inp {x.shape}"
            )
        return reshape(t, cshape) if t.shape != cshape else t

    if not training:
        out = _batch_norm_inference(x, running_mean, running_var, weight, bias, eps)
        if out is not None:
            return out if inplace else (out, running_mean, running_var)
    w = param(weight, "weight", 1.0)
    b = param(bias, "bias", 0.0)
    rm = param(running_mean, "running_mean", 0.0)
    rv = param(running_var, "running_var", 1.0)
    if len({t._dtype_name for t in (w, b, rm, rv)}) > 1:
        # Given parameters in float32 beside missing ones filled in a 16-bit input's dtype (a
        # float32 BatchNorm without running statistics fed float16): all in float32, as the
        # op takes a low-precision input with high-precision parameters (amp's rule below).
        w, b, rm, rv = (
            t if t._dtype_name == "float32" else t.astype("float32") for t in (w, b, rm, rv)
        )
    if amp._enabled:
        # MegEngine's rule: the input in low precision, the statistics and affine parameters in
        # high precision; the output is in the input's (low) dtype.
        (x,) = amp.cast_tensors(x)
        w, b, rm, rv = amp.cast_tensors(w, b, rm, rv, promote=True)
    if not training:
        # Inference is elementwise; built from Elemwise ops it is differentiable everywhere.
        scale = elemwise("RSQRT", rv + eps) * w
        out = (x - rm) * scale + b
        if out._dtype_name != x._dtype_name:
            out = out.astype(x._dtype_name)
        return out if inplace else (out, running_mean, running_var)
    # One value per channel trains as MegEngine's does: the output is the bias and the running
    # variance, updated with the unbiased variance 0 / 0, becomes NaN.
    op = cached_op(
        builtin.BatchNormForward, fwd_mode="TRAINING", epsilon=float(eps), momentum=float(momentum)
    )
    out, _, _, new_mean, new_var = apply(op, x, w, b, rm.detach(), rv.detach())
    if not has_stats:
        return out if inplace else (out, None, None)
    new_mean = reshape(new_mean, running_mean.shape)
    new_var = reshape(new_var, running_var.shape)
    if inplace:
        for old, new in ((running_mean, new_mean), (running_var, new_var)):
            # astype copies even to the same dtype: two TypeCvt ops per layer and step saved.
            old._reset(new if new._dtype_name == old._dtype_name else new.astype(old._dtype_name))
        return out
    return out, new_mean, new_var


def layer_norm(inp, normalized_shape, affine, weight=None, bias=None, eps=1e-5):
    """Layer normalisation over the trailing ``normalized_shape`` axes.

    Args:
        inp: input tensor whose shape ends with normalized_shape.
        normalized_shape: an int or the tuple of trailing dims normalised together.
        affine: whether weight and bias (of shape normalized_shape) scale and shift the result.
        weight: scale, required when affine.
        bias: shift, required when affine.
        eps: added to the variance before the square root.

    Returns:
        a Tensor of inp's shape.

    Examples:
        >>> import megengine.functional as F
        >>> F.layer_norm([[1.0, 3.0], [2.0, 6.0]], 2, affine=False, eps=0.0).numpy().tolist()
        [[-1.0, 1.0], [-1.0, 1.0]]
    """
    fname = "layer_norm"
    x = _float_input(inp, fname)
    if isinstance(normalized_shape, INTEGER_TYPES):
        normalized_shape = (int(normalized_shape),)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    k = len(normalized_shape)
    if k == 0 or k > x.ndim or x.shape[x.ndim - k :] != normalized_shape:
        raise MegEngineError(
            f"{fname}: inp {x.shape} does not end with normalized_shape {normalized_shape}"
        )
    op = cached_op(builtin.LayerNormForward, affine=bool(affine), eps=float(eps), normalized_dim=k)
    if not affine:
        return apply(op, x)[0]
    if weight is None or bias is None:
        raise MegEngineError(f"{fname}: affine=True needs weight and bias")
    w = _float_input(weight, fname, "weight")
    b = _float_input(bias, fname, "bias")
    if w.shape != normalized_shape or b.shape != normalized_shape:
        raise MegEngineError(
            f"{fname}: weight {w.shape} and bias {b.shape} must have normalized_shape "
            f"{normalized_shape}"
        )
    # MegEngine promotes the three to one dtype (float16 input, float32 weight: float32).
    x, w, b = _promote([x, w, b])
    return apply(op, x, w, b)[0]


def _group_norm(fname, x, groups, affine, weight, bias, eps, keep_dtype=False):
    c = x.shape[1]
    op = cached_op(builtin.GroupNormForward, affine=bool(affine), eps=float(eps), group=groups)
    if not affine:
        return apply(op, x)[0]
    if weight is None or bias is None:
        raise MegEngineError(f"{fname}: affine=True needs weight and bias")
    w = _float_input(weight, fname, "weight")
    b = _float_input(bias, fname, "bias")
    if w.size != c or b.size != c:
        raise MegEngineError(
            f"{fname}: weight {w.shape} and bias {b.shape} need one element per channel of inp "
            f"{x.shape}"
        )
    # MegEngine promotes the three to one dtype; its instance norm keeps the input's.
    dtype = x._dtype_name
    x, w, b = _promote([x, w, b])
    out = apply(op, x, reshape(w, (c,)), reshape(b, (c,)))[0]
    return out.astype(dtype) if keep_dtype and out._dtype_name != dtype else out


def group_norm(inp, num_groups, affine, weight=None, bias=None, eps=1e-5):
    """Group normalisation: the channels split into ``num_groups`` groups, each normalised
    together with all spatial axes, per sample.

    Args:
        inp: input of shape (N, C, ...).
        num_groups: number of groups; must divide C.
        affine: whether per-channel weight and bias scale and shift the result.
        weight: scale with C elements, required when affine.
        bias: shift with C elements, required when affine.
        eps: added to the variance before the square root.

    Returns:
        a Tensor of inp's shape.

    Examples:
        >>> import megengine.functional as F
        >>> x = [[[1.0, 3.0], [5.0, 9.0]]]
        >>> F.group_norm(x, 2, affine=False, eps=0.0).numpy().tolist()
        [[[-1.0, 1.0], [-1.0, 1.0]]]
    """
    fname = "group_norm"
    x = _float_input(inp, fname)
    if x.ndim < 2:
        raise MegEngineError(f"{fname}: inp must have at least 2 dims (N, C, ...), got {x.shape}")
    if num_groups < 1 or x.shape[1] % num_groups:
        raise MegEngineError(
            f"{fname}: num_groups={num_groups} does not divide the channels of {x.shape}"
        )
    return _group_norm(fname, x, int(num_groups), affine, weight, bias, eps)


def instance_norm(inp, affine, weight=None, bias=None, eps=1e-5):
    """Instance normalisation: each (sample, channel) normalised over its spatial axes.

    Args:
        inp: input of shape (N, C, ...).
        affine: whether per-channel weight and bias scale and shift the result.
        weight: scale with C elements, required when affine.
        bias: shift with C elements, required when affine.
        eps: added to the variance before the square root.

    Returns:
        a Tensor of inp's shape.

    Examples:
        >>> import megengine.functional as F
        >>> x = [[[1.0, 3.0], [5.0, 9.0]]]
        >>> F.instance_norm(x, True, [2.0, 1.0], [0.0, 1.0], eps=0.0).numpy().tolist()
        [[[-2.0, 2.0], [0.0, 2.0]]]
    """
    fname = "instance_norm"
    if not isinstance(affine, (bool, np.bool_)):
        raise TypeError(f"{fname}: affine must be a bool, got {type(affine).__name__}")
    x = _float_input(inp, fname)
    if x.ndim < 2:
        raise MegEngineError(f"{fname}: inp must have at least 2 dims (N, C, ...), got {x.shape}")
    return _group_norm(fname, x, x.shape[1], affine, weight, bias, eps, keep_dtype=True)


def general_norm(inp, normalized_axis, affine=True, weight=None, bias=None, eps=1e-5):
    """Normalisation over the given axes together: ``(x - mean) / sqrt(var + eps)``, the
    statistics taken over ``normalized_axis`` (biased variance), then ``* weight + bias``
    with weight and bias of the normalised axes' shape.

    Args:
        inp: input tensor.
        normalized_axis: an axis or ascending axes (negative counts from the end).
        affine: whether weight and bias scale and shift the result.
        weight: scale of the normalised axes' shape, required when affine.
        bias: shift of the normalised axes' shape, required when affine.
        eps: added to the variance before the square root.

    Returns:
        a Tensor of inp's shape.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.array([[1.0, 2.0], [3.0, 6.0]], "float32")
        >>> F.nn.general_norm(x, 0, False, eps=0.0).numpy().tolist()
        [[-1.0, -1.0], [1.0, 1.0]]
    """
    fname = "general_norm"
    x = _float_input(inp, fname)
    axes = [normalized_axis] if isinstance(normalized_axis, (int, np.integer)) else normalized_axis
    axes = [int(a) + x.ndim if a < 0 else int(a) for a in axes]
    if not axes:
        raise MegEngineError(f"{fname}: normalized_axis is empty")
    if axes != sorted(set(axes)) or not 0 <= axes[0] <= axes[-1] < x.ndim:
        raise MegEngineError(
            f"{fname}: normalized_axis {normalized_axis!r} must be distinct ascending axes of an "
            f"input with {x.ndim} dims"
        )
    mean = x.mean(axis=axes, keepdims=True)
    centred = x - mean
    y = centred / ((centred * centred).mean(axis=axes, keepdims=True) + eps) ** 0.5
    if not affine:
        return y
    if weight is None or bias is None:
        raise MegEngineError(f"{fname}: affine=True needs weight and bias")
    sizes = tuple(x.shape[a] for a in axes)
    shape = tuple(x.shape[i] if i in axes else 1 for i in range(x.ndim))
    w, b = as_tensor(weight), as_tensor(bias)
    for name, t in (("weight", w), ("bias", b)):
        if tuple(t.shape) != sizes:
            raise MegEngineError(
                f"{fname}: {name} {tuple(t.shape)} must have the normalised shape {sizes}"
            )
    return y * w.reshape(shape) + b.reshape(shape)


def local_response_norm(inp, kernel_size=5, k=2.0, alpha=1e-4, beta=0.75):
    """Local response normalisation across channels, as MegEngine's LRN:
    ``y[:, c] = x[:, c] / (k + alpha * sum(x[:, c'] ** 2)) ** beta``, the sum over the
    ``kernel_size`` channels centred on ``c`` that exist (MegEngine does not divide alpha by
    the window).

    Args:
        inp: input of shape (N, C, H, W).
        kernel_size: the number of channels summed, odd.
        k: added to the scaled sum.
        alpha: scale of the sum of squares.
        beta: exponent of the denominator.

    Returns:
        a Tensor of inp's shape.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.full((1, 3, 1, 1), 2.0, "float32")
        >>> y = F.nn.local_response_norm(x, kernel_size=3, k=1.0, alpha=0.25, beta=1.0)
        >>> [round(float(v), 4) for v in y.numpy().ravel()]  # 2 / (1 + 0.25 * 8), 2 / 4
        [0.6667, 0.5, 0.6667]
    """
    fname = "local_response_norm"
    x = _float_input(inp, fname)
    if x.ndim != 4:
        raise MegEngineError(f"{fname}: inp must have 4 dims (N, C, H, W), got {x.shape}")
    if not isinstance(kernel_size, (int, np.integer)) or kernel_size < 1 or kernel_size % 2 == 0:
        raise MegEngineError(
            f"{fname}: kernel_size must be a positive odd int, got {kernel_size!r}"
        )
    half, channels = int(kernel_size) // 2, x.shape[1]
    # The window as kernel_size shifted slices of the zero-padded squares: exact sums (no
    # cumsum cancellation), differentiable through pad and slicing, and in x's dtype.
    sq = pad(x * x, ((0, 0), (half, half)))
    window = sq[:, 0:channels]
    for d in range(1, 2 * half + 1):
        window = window + sq[:, d : d + channels]
    return x / (k + alpha * window) ** beta


# ---------------------------------------------------------------------------------------------
# dropout, embedding, indexing


def dropout(inp, drop_prob, training=True):
    """Zeroes each element with probability ``drop_prob`` and scales the rest by
    ``1 / (1 - drop_prob)``, so the expectation is unchanged; the identity when not training.

    Each call keys the kernel's Philox stream with the next seed of ``megengine.random``'s
    global generator, so ``megengine.random.seed(s)`` makes the masks reproducible.

    Args:
        inp: input tensor.
        drop_prob: probability of zeroing an element, in [0, 1).
        training: whether to drop; when False inp is returned as it is.

    Returns:
        a Tensor of inp's shape.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> y = F.dropout(np.ones(1000, "float32"), 0.5).numpy()
        >>> sorted(set(y.tolist()))
        [0.0, 2.0]
        >>> F.dropout([1.0, 2.0], 0.5, training=False).numpy().tolist()
        [1.0, 2.0]
    """
    x = _float_input(inp, "dropout")
    if not 0 <= drop_prob < 1:
        raise MegEngineError(f"dropout: drop_prob must be in [0, 1), got {drop_prob}")
    if not training or drop_prob == 0:
        return x
    op = builtin.DropoutForward(drop_prob=float(drop_prob), seed=_next_seed())
    return apply(op, x)[0]


def embedding(inp, weight, padding_idx=None, max_norm=None, norm_type=None):
    """Looks up rows of ``weight``: ``out[..., :] = weight[inp[...], :]``.

    Args:
        inp: integer indices of any shape, each in [0, num_embeddings).
        weight: table of shape (num_embeddings, embedding_dim).
        padding_idx: an index whose row receives no gradient (its lookups stay as they are).
        max_norm: not supported (MegEngine does not support it either); must be None.
        norm_type: not supported (MegEngine does not support it either); must be None.

    Returns:
        a Tensor of shape inp.shape + (embedding_dim,).

    Examples:
        >>> import megengine.functional as F
        >>> F.embedding([[1, 0]], [[0.0, 1.0], [2.0, 3.0]]).numpy().tolist()
        [[[2.0, 3.0], [0.0, 1.0]]]
    """
    fname = "embedding"
    if max_norm is not None or norm_type is not None:
        raise MegEngineError(f"{fname}: max_norm and norm_type are not supported")
    idx = _int_input(inp, fname, "inp")
    w = as_tensor(weight)
    if w.ndim != 2:
        raise MegEngineError(f"{fname}: weight must be 2-D (num_embeddings, dim), got {w.shape}")
    out = apply(cached_op(builtin.IndexingMultiAxisVec, axes=(0,)), w, idx)[0]
    if padding_idx is not None:
        n = w.shape[0]
        if not -n <= padding_idx < n:
            raise MegEngineError(
                f"{fname}: padding_idx {padding_idx} is out of range for {w.shape}"
            )
        # The same values, but the padding rows' lookups come from a detached copy.
        keep = _add_axis(elemwise("NE", idx, int(padding_idx) % n), [idx.ndim])
        out = _where(keep, out, out.detach()) if out.size else out
    return out


def indexing_one_hot(src, index, axis=1, keepdims=False):
    """Picks one element along ``axis`` per position: ``out[i, j] = src[i, index[i], j]`` for
    axis 1.

    Args:
        src: input tensor.
        index: tensor of src's shape without ``axis``, values in [0, src.shape[axis]): integers,
            or floats, truncated toward zero as MegEngine does.
        axis: the axis to pick along.
        keepdims: keep ``axis`` with size 1.

    Returns:
        a Tensor of src's shape without ``axis`` (with it of size 1 when keepdims).

    Examples:
        >>> import megengine.functional as F
        >>> F.indexing_one_hot([[1.0, 2.0], [3.0, 4.0]], [1, 0]).numpy().tolist()
        [2.0, 3.0]
    """
    fname = "indexing_one_hot"
    x = as_tensor(src)
    idx = _int_input(index, fname, "index", floats=True)
    if x.ndim < 1:
        raise MegEngineError(f"{fname}: src must have at least 1 dim, got {x.shape}")
    axis = _norm_axis(axis, x.ndim, fname)
    expect = x.shape[:axis] + x.shape[axis + 1 :]
    if idx.shape != expect:
        raise MegEngineError(
            f"{fname}: index {idx.shape} must have src {x.shape} without axis {axis}: {expect}"
        )
    out = apply(cached_op(builtin.IndexingOneHot, axis=axis), x, idx)[0]
    return out if keepdims else _remove_axis(out, [axis])


def one_hot(inp, num_classes):
    """One-hot encoding: ``out[..., k] = 1`` where ``k == inp[...]``, 0 elsewhere.

    Args:
        inp: integer tensor of class indices, each in [0, num_classes).
        num_classes: number of classes.

    Returns:
        an int32 Tensor of shape inp.shape + (num_classes,).

    Examples:
        >>> import megengine.functional as F
        >>> F.one_hot([2, 0], 3).numpy().tolist()
        [[0, 0, 1], [1, 0, 0]]
    """
    fname = "one_hot"
    idx = _int_input(inp, fname, "inp")
    if num_classes < 1:
        raise MegEngineError(f"{fname}: num_classes must be >= 1, got {num_classes}")
    # Zeros and ones as one broadcast element each (views, eagerly): the kernel writes dst once,
    # filling it from the repeated zero, where a filled tensor would be written, then copied.
    shape = idx.shape + (int(num_classes),)
    if isinstance(idx, Tensor) and not _is_tracing():
        # The 0-d zero and one kept per device (a Fill each was a third of the call); a trace
        # records its own fills.
        device = device_name(idx)
        zero = kept_scalar(0, "int32", device)
        one = kept_scalar(1, "int32", device)
    else:
        zero = _fill((), 0, "int32", idx.device)
        one = _fill((), 1, "int32", idx.device)
    zeros = _rt.apply(cached_op(builtin.Broadcast, shape=shape), zero)[0]
    ones = _rt.apply(cached_op(builtin.Broadcast, shape=shape[:-1] + (1,)), one)[0]
    axis = idx.ndim
    try:
        return apply(cached_op(builtin.IndexingSetOneHot, axis=axis), zeros, idx, ones)[0]
    except IndexError as e:
        raise MegEngineError(
            f"{fname}: a value of inp is outside [0, {num_classes}): {e}"
        ) from None


# ---------------------------------------------------------------------------------------------
# reshaping, padding and resampling


_PAD_MODES = {"constant": "CONSTANT", "edge": "REPLICATE", "replicate": "REPLICATE"}
_PAD_MODES["reflect"] = "REFLECT"


def pad(src, pad_width, mode="constant", constant_value=0.0):
    """Pads a tensor.

    Args:
        src: input tensor.
        pad_width: ((before, after), ...) per dim, for the leading dims (the rest are not
            padded); a single (before, after) pads every dim by the same widths.
        mode: "constant" (constant_value), "edge" or "replicate" (repeat the edge value),
            "reflect" (mirror without repeating the edge; widths must be smaller than the dim).
        constant_value: the border value of "constant" mode.

    Returns:
        a Tensor with dim i of size src.shape[i] + before + after.

    Examples:
        >>> import megengine.functional as F
        >>> F.pad([[1.0, 2.0]], ((0, 0), (1, 2)), constant_value=9.0).numpy().tolist()
        [[9.0, 1.0, 2.0, 9.0, 9.0]]
        >>> F.pad([1.0, 2.0, 3.0], ((2, 1),), mode="reflect").numpy().tolist()
        [3.0, 2.0, 1.0, 2.0, 3.0, 2.0]
    """
    fname = "pad"
    x = as_tensor(src)
    # A loop pads the same shapes the same way every call: the op (None: nothing to pad) by the
    # arguments as given, after the checks passed once for them.
    key, op = None, _pad_ops
    if type(constant_value) in (int, float) and not _is_tracing():
        key = (pad_width, mode, constant_value, x.shape)
        try:
            op = _pad_ops.get(key, _pad_ops)
        except TypeError:  # a list or an array among the arguments
            key = None
    if op is not _pad_ops:
        return x if op is None else apply(op, x)[0]
    m = _PAD_MODES.get(mode) or _PAD_MODES.get(str(mode).lower())
    if m is None:
        raise MegEngineError(f"{fname}: mode must be one of {sorted(_PAD_MODES)}, got {mode!r}")
    shape = x.shape
    nd = len(shape)
    pairs, single = _pad_pairs(pad_width)
    if pairs is None or len(pairs) > nd:
        raise MegEngineError(
            f"{fname}: pad_width {_as_list(pad_width)} must be (before, after) pairs "
            f"for at most the {nd} dims of src {shape}"
        )
    if single:
        pairs = pairs * nd  # one (before, after) for every dim
    if any(b < 0 or a < 0 for b, a in pairs):
        raise MegEngineError(f"{fname}: pad_width {[list(p) for p in pairs]} must not be negative")
    pairs = list(pairs) + [(0, 0)] * (nd - len(pairs))
    if m == "REFLECT":
        for d, (b, a) in enumerate(pairs):
            if max(b, a) >= shape[d] and max(b, a) > 0:
                raise MegEngineError(
                    f"{fname}: reflect widths {[b, a]} must be smaller than dim {d} of src {shape}"
                )
    if m == "REPLICATE":
        for d, (b, a) in enumerate(pairs):
            if max(b, a) > 0 and shape[d] == 0:
                raise MegEngineError(
                    f"{fname}: cannot replicate the edge of empty dim {d} of {shape}"
                )
    op = None
    if nd and any(b or a for b, a in pairs):
        front = tuple(b for b, _ in pairs)
        back = tuple(a for _, a in pairs)
        op = cached_op(builtin.Padding, m, float(constant_value), front, back)
    if key is not None:
        remember_op(_pad_ops, key, op)
    return x if op is None else apply(op, x)[0]


_pad_ops = {}  # (pad_width, mode, constant_value, src shape) -> Padding op or None; bounded


def _as_list(w):
    try:
        return np.asarray(w).tolist()
    except ValueError:  # ragged
        return w


def _pad_pairs(pad_width):
    """pad_width as a tuple of (before, after) int pairs and whether it was a single pair (for
    every dim); (None, False) for another form. Ints in a list or tuple are read in Python
    (NumPy's conversion was most of a small pad's cost); anything else (arrays, NumPy or float
    scalars) through NumPy's int64 conversion as before."""
    if type(pad_width) in (tuple, list) and pad_width:
        if len(pad_width) == 2 and all(type(v) is int for v in pad_width):
            return ((pad_width[0], pad_width[1]),), True
        if all(
            type(p) in (tuple, list) and len(p) == 2 and type(p[0]) is int and type(p[1]) is int
            for p in pad_width
        ):
            return tuple((p[0], p[1]) for p in pad_width), False
    try:
        w = np.asarray(pad_width, dtype=np.int64)
    except (TypeError, ValueError):
        return None, False
    single = w.shape == (2,)
    if single:
        w = w.reshape(1, 2)
    if w.ndim != 2 or w.shape[1] != 2:
        return None, False
    return tuple((int(b), int(a)) for b, a in w.tolist()), single


def pixel_shuffle(inp, upscale_factor):
    """Rearranges (..., C * r * r, H, W) into (..., C, H * r, W * r) with r = upscale_factor:
    ``out[..., c, h * r + i, w * r + j] = inp[..., c * r * r + i * r + j, h, w]``.

    Args:
        inp: input with at least 3 dims, the third-last divisible by upscale_factor ** 2.
        upscale_factor: r, the factor each spatial dim grows by.

    Returns:
        a Tensor of shape (..., C, H * r, W * r).

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(4, dtype="float32").reshape(1, 4, 1, 1)
        >>> F.pixel_shuffle(x, 2).numpy().tolist()
        [[[[0.0, 1.0], [2.0, 3.0]]]]
    """
    fname = "pixel_shuffle"
    x = as_tensor(inp)
    r = int(upscale_factor)
    if x.ndim < 3 or r < 1 or x.shape[-3] % (r * r):
        raise MegEngineError(
            f"{fname}: inp {x.shape} needs >= 3 dims with dim -3 divisible by "
            f"upscale_factor ** 2 = {r * r}"
        )
    lead = x.shape[:-3]
    c, h, w = x.shape[-3] // (r * r), x.shape[-2], x.shape[-1]
    y = reshape(x, (-1, c, r, r, h, w))
    y = _dimshuffle(y, (0, 1, 4, 2, 5, 3))
    return reshape(y, lead + (c, h * r, w * r))


_RESIZE_MODES = {
    "bilinear": "LINEAR",
    "linear": "LINEAR",
    "trilinear": "LINEAR",
    "nearest": "NEAREST",
    "bicubic": "CUBIC",
}
_RESIZE_DIMS = {"linear": 1, "trilinear": 3}  # spatial dims; the others take 2


def _resize(x, out, mode, align_corners):
    """(N, C, H, W) resized to ``out`` = (OH, OW) by the Resize op."""
    op = cached_op(
        builtin.Resize,
        mode=_RESIZE_MODES[mode],
        out_h=out[0],
        out_w=out[1],
        align_corners=bool(align_corners),
    )
    return apply(op, x)[0]


def _trilinear(x, out, align_corners):
    # Linear interpolation is separable: (H, W) of every depth slice, then D with the (H, W)
    # plane as one row of unchanged width, which a linear resize leaves as it is (its source
    # coordinate of o is o exactly). The values are those of the 8-point weights, rounded
    # apart.
    n, c, d, h, w = x.shape
    od, oh, ow = out
    if (oh, ow) != (h, w):
        x = reshape(
            _resize(reshape(x, (n, c * d, h, w)), (oh, ow), "linear", align_corners),
            (n, c, d, oh, ow),
        )
    if od != d:
        x = reshape(
            _resize(reshape(x, (n, c, d, oh * ow)), (od, oh * ow), "linear", align_corners),
            (n, c, od, oh, ow),
        )
    return x


def interpolate(inp, size=None, scale_factor=None, mode="bilinear", align_corners=None):
    """Resizes the spatial dims of an (N, C, H, W) input, the last dim of an (N, C, W) input
    with mode "linear", or the three of an (N, C, D, H, W) input with mode "trilinear".

    Args:
        inp: input of shape (N, C, H, W), (N, C, W) for "linear", (N, C, D, H, W) for
            "trilinear".
        size: output size, one per spatial dim ((OH, OW), ...), or an int n, which is (n, 1)
            ((n, 1, 1) for "trilinear"), as MegEngine 1.13 reads it; exactly one of size and
            scale_factor is given.
        scale_factor: a float or one per spatial dim; the output size is floor(in * factor).
        mode: "bilinear", "linear", "trilinear", "nearest" (which takes
            inp[floor(o * in / out)]) or "bicubic" (MegEngine's: Keys' kernel with a = -0.75
            over the 4 x 4 nearest pixels, edges replicated, as OpenCV's INTER_CUBIC).
        align_corners: linear modes only: corner pixels of input and output coincide when True;
            pixel centres are aligned when False (the default).

    Returns:
        the resized Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> x = [[[[0.0, 2.0]]]]
        >>> F.interpolate(x, size=(1, 3), align_corners=True).numpy().tolist()
        [[[[0.0, 1.0, 2.0]]]]
        >>> F.interpolate(x, scale_factor=2, mode="nearest").numpy().tolist()
        [[[[0.0, 0.0, 2.0, 2.0], [0.0, 0.0, 2.0, 2.0]]]]
        >>> v = [[[[[0.0]], [[4.0]]]]]  # (1, 1, 2, 1, 1)
        >>> F.interpolate(v, size=(3, 1, 1), mode="trilinear", align_corners=True).numpy().ravel()
        array([0., 2., 4.], dtype=float32)
    """
    fname = "interpolate"
    x = _float_input(inp, fname)
    mode = str(mode).lower()
    if mode not in _RESIZE_MODES:
        raise MegEngineError(f"{fname}: mode must be one of {sorted(_RESIZE_MODES)}, got {mode!r}")
    if mode in ("nearest", "bicubic") and align_corners:
        raise MegEngineError(f"{fname}: align_corners only applies to the linear modes")
    one_d = mode == "linear"
    nd = _RESIZE_DIMS.get(mode, 2)
    if x.ndim != nd + 2:
        raise MegEngineError(f"{fname}: mode {mode!r} needs a {nd + 2}-dim input, got {x.shape}")
    if (size is None) == (scale_factor is None):
        raise MegEngineError(f"{fname}: give exactly one of size and scale_factor")
    in_size = x.shape[2:]
    if size is not None:
        if isinstance(size, INTEGER_TYPES):
            # MegEngine 1.13 reads an int n as (n, 1) ((n, 1, 1) for "trilinear"): only the
            # first spatial dim takes it.
            size = (int(size),) + (1,) * (nd - 1)
        out = _tuple(size, nd, fname, "size")
    else:
        if isinstance(scale_factor, (int, float, np.number)):
            scale_factor = (float(scale_factor),) * nd
        scale_factor = tuple(float(f) for f in scale_factor)
        if len(scale_factor) != nd:
            raise MegEngineError(f"{fname}: scale_factor needs {nd} values, got {scale_factor}")
        out = tuple(int(np.floor(i * f)) for i, f in zip(in_size, scale_factor))
    if builtins.min(out) < 1 or builtins.min(in_size) < 1:
        raise MegEngineError(f"{fname}: input {x.shape} and output size {out} must not be empty")
    if nd == 3:
        return _trilinear(x, out, align_corners)
    if one_d:
        x = _add_axis(x, [2])
        out = (1,) + out
    y = _resize(x, out, mode, align_corners)
    return _remove_axis(y, [2]) if one_d else y


def sync_batch_norm(
    inp,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.9,
    eps=1e-5,
    eps_mode="additive",
    group=WORLD,
):
    r"""Applies synchronized batch normalization to the input: in distributed training, the
    statistics are those of the group's whole batch (the ranks' batches concatenated), and so
    are the gradients. Otherwise it is :func:`batch_norm` (with ``eps_mode="max"``, the variance
    is ``max(var, eps)`` instead of ``var + eps``).

    Args:
        inp: input tensor (N, C, ...).
        running_mean: tensor to store running mean.
        running_var: tensor to store running variance.
        weight: scaling tensor in the learnable affine parameters.
        bias: bias tensor in the learnable affine parameters.
        training: a boolean value to indicate whether batch norm is performed in training mode.
        momentum: value used for the ``running_mean`` and ``running_var`` computation.
        eps: a value added to the denominator for numerical stability.
        eps_mode: mode of calculation for eps, "max" or "additive".
        group: communication group, caculate mean and variance between this group.

    Returns:
        the normalised Tensor.

    Examples:
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> x = mge.Tensor([[1.0], [3.0]])
        >>> mean, var = mge.Tensor([0.0]), mge.Tensor([1.0])
        >>> F.nn.sync_batch_norm(x, mean, var, training=True, eps=0.0).numpy().tolist()
        [[-1.0], [1.0]]
    """
    from ..distributed.sync_bn import sync_batch_norm_impl

    return sync_batch_norm_impl(
        inp,
        running_mean,
        running_var,
        weight,
        bias,
        training,
        momentum,
        eps,
        eps_mode,
        group,
        batch_norm,
    )


# MegEngine's F.nn (and so F) re-exports remap and the warps of F.vision, which imports this
# module's interpolate, and the convolution variants build on this module's helpers: imported
# last, when everything they need from here exists (deformable_psroi_pooling, in __all__, lives
# in vision.py beside the other roi ops). F.nn also carries nms, roi_align, roi_pooling,
# correlation and cvt_color, outside __all__ (so not in F), as MegEngine's does: the zoo's
# detectors call F.nn.nms and F.nn.roi_align.
from .conv_variants import deformable_conv2d, region_restricted_conv
from .vision import (
    correlation,  # noqa: F401
    cvt_color,  # noqa: F401
    deformable_psroi_pooling,
    nms,  # noqa: F401
    remap,
    roi_align,  # noqa: F401
    roi_pooling,  # noqa: F401
    warp_affine,
    warp_perspective,
)

# MegEngine's F.nn has it (outside __all__); importing here also makes F.quantized.
from .quantized import conv_bias_activation  # noqa: F401  # isort:skip
