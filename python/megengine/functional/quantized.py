"""Inference ops on quantized tensors, as MegEngine 1.13's ``megengine.functional.quantized``.

The convolutions run the ConvBias kernel on the integers: a QuantizedS8 (or Quantized8Asymm) input
and a QuantizedS8 filter give the exact int32 sums plus a QuantizedS32 bias, as QuantizedS32 of
scale input scale x filter scale; IDENTITY and RELU apply to those sums (exact), and the result is
requantised to ``dtype`` by a TypeCvt (round half away from zero, saturate), the one rounding
MegEngine's fused kernel makes too. Other nonlinearities (H_SWISH, SIGMOID) run on the dequantized
sums in float32 before that rounding, as MegEngine's reference kernel does.
"""

import numpy as np

from ..core._imperative_rt import MegEngineError, MegEngineTypeError
from ..core.ops import builtin
from ..core.tensor import amp
from ..core.tensor.array_method import (
    _QUANTIZED,
    _is_tracing,
    apply,
    as_tensor,
    cached_op,
    device_name,
    kept_scalar,
    remember_op,
    reshape,
)
from ..core.tensor.quant_dtype import get_scale, is_quantize
from .nn import _conv_filter, _conv_mode, _tuple

__all__ = ["batch_conv_bias_activation", "conv_bias_activation", "conv_transpose2d"]

_FUSED = ("IDENTITY", "RELU")
_NONLINEAR = ("IDENTITY", "RELU", "SIGMOID", "H_SWISH")


def _nonlinear_mode(mode, fname):
    name = getattr(mode, "name", str(mode)).upper()
    if name not in _NONLINEAR:
        raise MegEngineError(f"{fname}: nonlinear_mode must be one of {_NONLINEAR}, got {mode!r}")
    return name


def _check_compute_mode(compute_mode, fname):
    if getattr(compute_mode, "name", str(compute_mode)).upper() != "DEFAULT":
        raise MegEngineError(f"{fname}: quantized ops take compute_mode 'default' only")


def _activate_and_requantize(acc, mode, dtype):
    # acc: the QuantizedS32 sums (with IDENTITY or RELU already applied when fused)
    if mode not in _FUSED:
        from . import elemwise  # the float activations

        value = acc.astype("float32")
        value = elemwise.hswish(value) if mode == "H_SWISH" else elemwise.sigmoid(value)
        return value if dtype is None else value.astype(dtype)
    return acc if dtype is None else acc.astype(dtype)


def _quantized(t):
    # is_quantize(t.dtype) without building t's numpy dtype (2 us for a quantized one)
    return t._dtype_name in _QUANTIZED or is_quantize(t.dtype)


def _quantized_operands(inp, weight, bias, fname):
    inp, weight = as_tensor(inp), as_tensor(weight)
    for name, t in (("inp", inp), ("weight", weight)):
        if not _quantized(t):
            raise MegEngineTypeError(
                f"{fname}: {name} must be a quantized tensor, got dtype {t.dtype}"
            )
    if bias is None:
        return inp, weight, None
    bias = as_tensor(bias)
    if not _quantized(bias):
        # a float bias is quantized to MegEngine's bias dtype: qint32(inp scale x weight scale)
        from ..core.tensor.quant_dtype import qint32

        bias = bias.astype(qint32(get_scale(inp.dtype) * get_scale(weight.dtype)))
    return inp, weight, bias


def conv_bias_activation(
    inp,
    weight,
    bias,
    dtype=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    nonlinear_mode="identity",
    conv_mode="cross_correlation",
    compute_mode="default",
):
    """2-D convolution of quantized tensors plus bias and a nonlinearity, requantised to
    ``dtype`` (inference only).

    Args:
        inp: quantized input (N, IC, H, W): qint8 or quint8.
        weight: qint8 filter (OC, IC, KH, KW), or (groups, OC/groups, IC/groups, KH, KW).
        bias: qint32 bias of scale inp scale x weight scale, shape (1, OC, 1, 1); a float bias
            is quantized to that dtype; None adds nothing.
        dtype: the output's quantized dtype; None keeps the qint32 sums.
        stride: step per spatial dim.
        padding: zeros added at both ends per spatial dim.
        dilation: gap between kernel taps.
        groups: channel groups.
        nonlinear_mode: ``"identity"``, ``"relu"``, ``"sigmoid"`` or ``"h_swish"``.
        conv_mode: ``"cross_correlation"`` or ``"convolution"``.
        compute_mode: ``"default"`` only.

    Returns:
        the output tensor, of ``dtype``.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> from megengine.core.tensor import dtype
        >>> x = mge.Tensor(np.ones((1, 1, 2, 2), np.float32)).astype(dtype.qint8(0.5))
        >>> w = mge.Tensor(np.ones((1, 1, 2, 2), np.float32)).astype(dtype.qint8(0.25))
        >>> b = mge.Tensor(np.zeros((1, 1, 1, 1), np.float32))
        >>> y = F.quantized.conv_bias_activation(x, w, b, dtype=dtype.qint8(0.1))
        >>> y.numpy().tolist(), y.dtype.metadata["mgb_dtype"]["name"]
        ([[[[40]]]], 'QuantizedS8')
    """
    fname = "conv_bias_activation"
    key = _conv_bias_key(nonlinear_mode, conv_mode, compute_mode, stride, padding, dilation, groups)
    known = _conv_bias_ops.get(key) if key is not None else None
    if known is None:
        _check_compute_mode(compute_mode, fname)
        mode = _nonlinear_mode(nonlinear_mode, fname)
    else:
        op, mode = known
    inp, weight, bias = _quantized_operands(inp, weight, bias, fname)
    if inp.ndim != 4:
        raise MegEngineError(f"{fname}: inp must be (N, C, H, W), got {inp.shape}")
    w = _conv_filter(weight, 2, int(groups), fname, inp.shape)
    if bias is not None and bias.ndim != 4:
        bias = reshape(bias, (1, -1, 1, 1))
    if known is None:
        op = cached_op(
            builtin.ConvBias,
            nonlineMode=mode if mode in _FUSED else "IDENTITY",
            mode=_conv_mode(conv_mode, fname),
            stride=_tuple(stride, 2, fname, "stride"),
            padding=_tuple(padding, 2, fname, "padding"),
            dilation=_tuple(dilation, 2, fname, "dilation"),
            group=int(groups),
        )
        if key is not None:
            remember_op(_conv_bias_ops, key, (op, mode))
    no_tensor = _no_tensor(inp)
    acc = apply(op, inp, w, no_tensor if bias is None else bias, no_tensor)[0]
    return _activate_and_requantize(acc, mode, dtype)


# conv_bias_activation's (op, nonlinear mode) by its parameters as given, when they are plain
# ints and strs (their types checked: 1.0 and True are keys equal to 1, not arguments equal to
# it): checking and converting them took 2 us of a quantized Linear call. A hit is a set of
# arguments that passed the checks.
_conv_bias_ops = {}


def _conv_bias_key(nonlinear_mode, conv_mode, compute_mode, stride, padding, dilation, groups):
    if (
        type(nonlinear_mode) is str
        and type(conv_mode) is str
        and type(compute_mode) is str
        and type(stride) is int
        and type(padding) is int
        and type(dilation) is int
        and type(groups) is int
    ):
        return (nonlinear_mode, conv_mode, compute_mode, stride, padding, dilation, groups)
    return None


def _no_tensor(like):
    # ConvBias's absent bias or z: a tensor of ndim 0. Making one per call (a host array copied
    # to the device) cost 8-10 us of a 35 us call, so one per device is kept: an operand only,
    # never returned or written. A trace gets its own, as before.
    if _is_tracing():
        return as_tensor(np.zeros((), np.int32), device=like.device)
    return kept_scalar(0, "int32", device_name(like))


def batch_conv_bias_activation(
    inp,
    weight,
    bias,
    dtype=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    nonlinear_mode="identity",
    conv_mode="cross_correlation",
    compute_mode="default",
):
    """Per-sample 2-D convolution of quantized tensors (sample n convolves with weight[n]) plus
    bias and a nonlinearity, requantised to ``dtype`` (inference only).

    Args:
        inp: quantized input (N, IC, H, W).
        weight: qint8 filters (N, OC, IC, KH, KW).
        bias: qint32 (or float) bias of shape (1, OC, 1, 1).
        dtype: the output's quantized dtype; None keeps the qint32 sums.
        stride: step per spatial dim.
        padding: zeros added at both ends per spatial dim.
        dilation: gap between kernel taps.
        groups: 1 only.
        nonlinear_mode: ``"identity"``, ``"relu"``, ``"sigmoid"`` or ``"h_swish"``.
        conv_mode: ``"cross_correlation"`` or ``"convolution"``.
        compute_mode: ``"default"`` only.

    Returns:
        the output tensor (N, OC, OH, OW), of ``dtype``.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> from megengine.core.tensor import dtype
        >>> x = mge.Tensor(np.ones((2, 1, 1, 1), np.float32)).astype(dtype.qint8(1.0))
        >>> w = mge.Tensor(np.array([1, 2], np.float32).reshape(2, 1, 1, 1, 1))
        >>> w = w.astype(dtype.qint8(1.0))
        >>> b = mge.Tensor(np.zeros((1, 1, 1, 1), np.float32))
        >>> F.quantized.batch_conv_bias_activation(x, w, b, dtype.qint8(1.0)).numpy().ravel()
        array([1, 2], dtype=int8)
    """
    fname = "batch_conv_bias_activation"
    if int(groups) != 1:
        raise NotImplementedError(f"{fname}: groups must be 1")
    inp, weight, bias = _quantized_operands(inp, weight, bias, fname)
    if weight.ndim != 5 or weight.shape[0] != inp.shape[0]:
        raise MegEngineError(f"{fname}: weight must be (N, OC, IC, KH, KW), got {weight.shape}")
    from .tensor import concat

    outs = [
        conv_bias_activation(
            inp[n : n + 1],
            weight[n],
            bias,
            None,
            stride,
            padding,
            dilation,
            1,
            nonlinear_mode if _nonlinear_mode(nonlinear_mode, fname) in _FUSED else "identity",
            conv_mode,
            compute_mode,
        )
        for n in range(inp.shape[0])
    ]
    acc = concat(outs, axis=0)
    return _activate_and_requantize(acc, _nonlinear_mode(nonlinear_mode, fname), dtype)


def conv_transpose2d(
    inp,
    weight,
    bias=None,
    dtype=None,
    stride=1,
    padding=0,
    output_padding=0,
    dilation=1,
    groups=1,
    conv_mode="cross_correlation",
    compute_mode="default",
):
    """2-D transposed convolution of quantized tensors, requantised to ``dtype`` (inference only).

    The sums of the integer products are exact, as MegEngine's int32 kernel's, while they stay
    below 2**24 in magnitude (they are accumulated in float32, also under autocast: an int8 x
    int8 product is at most 2**14, so any 1024 taps per output are exact; a GPU with
    ``config.allow_tf32`` on rounds them); the result is requantised to ``dtype`` by a TypeCvt
    (round half away from zero, saturate).

    Args:
        inp: quantized input (N, IC, H, W).
        weight: qint8 filter (IC, OC, KH, KW).
        bias: must be None (MegEngine's rule).
        dtype: the output's quantized dtype; None keeps the sums, as QuantizedS32 of scale
            input scale x filter scale.
        stride: step per spatial dim.
        padding: padding per spatial dim.
        output_padding: extra rows/columns of the output.
        dilation: gap between kernel taps.
        groups: 1 only.
        conv_mode: ``"cross_correlation"`` only.
        compute_mode: ``"default"`` only.

    Returns:
        the output tensor (N, OC, OH, OW), of ``dtype``.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> from megengine.core.tensor import dtype
        >>> x = mge.Tensor(np.ones((1, 1, 2, 2), np.float32)).astype(dtype.qint8(0.5))
        >>> w = mge.Tensor(np.ones((1, 1, 2, 2), np.float32)).astype(dtype.qint8(0.25))
        >>> F.quantized.conv_transpose2d(x, w).numpy()[0, 0]
        array([[ 8, 16,  8],
               [16, 32, 16],
               [ 8, 16,  8]], dtype=int32)
        >>> F.quantized.conv_transpose2d(x, w, dtype=dtype.qint8(0.5)).numpy()[0, 0]
        array([[2, 4, 2],
               [4, 8, 4],
               [2, 4, 2]], dtype=int8)
    """
    fname = "conv_transpose2d"
    if groups != 1:
        raise NotImplementedError("group quantized transposed conv2d is not supported yet.")
    if bias is not None:
        raise NotImplementedError("bias of quantized transposed conv2d is not supported yet.")
    if getattr(conv_mode, "name", str(conv_mode)).upper() != "CROSS_CORRELATION":
        raise MegEngineError(f"{fname}: conv_mode must be 'cross_correlation', got {conv_mode!r}")
    _check_compute_mode(compute_mode, fname)
    inp, weight, _ = _quantized_operands(inp, weight, None, fname)
    from ..core.tensor.quant_dtype import qint32
    from .elemwise import round as _round
    from .nn import conv_transpose2d as _float_conv_transpose2d

    in_scale, w_scale = get_scale(inp.dtype), get_scale(weight.dtype)
    # the stored integers (less any zero point) as float32: exact, and so are their products
    x = _round(inp.astype("float32") / in_scale)
    w = _round(weight.astype("float32") / w_scale)
    # autocast would run the float kernel in float16, where the integer sums are not exact
    low_prec = amp._enabled
    if low_prec:
        amp._set_amp_dtype_autocast(False)
    try:
        acc = _float_conv_transpose2d(x, w, None, stride, padding, output_padding, dilation)
    finally:
        if low_prec:
            amp._set_amp_dtype_autocast(True)
    acc_scale = in_scale * w_scale
    acc = (acc * acc_scale).astype(qint32(acc_scale))
    return acc if dtype is None else acc.astype(dtype)
