"""Two 2-D convolutions of MegEngine's beyond the plain one, each its own op
(``dnn/ops/defs/convolution.py``): ``F.nn.deformable_conv2d``, whose kernel taps read the input
at learned fractional offsets, each scaled by a learned mask (DeformableConvForward,
differentiable for the input, weight, offset and mask), and ``F.nn.region_restricted_conv``,
whose taps count only where the input position's region id equals the output position's
(RegionRestrictedConvolutionForward, differentiable for the input and weight). Biases are added
afterwards."""

from ..core import _imperative_rt as _rt
from ..core._imperative_rt import MegEngineError, MegEngineTypeError
from ..core.ops import builtin
from ..core.tensor import amp
from ..core.tensor.array_method import as_tensor, cached_op
from .nn import _add_bias, _conv_filter, _float_input, _tuple

__all__ = ["deformable_conv2d", "region_restricted_conv"]


def _cross_correlation_only(conv_mode, fname):
    mode = getattr(conv_mode, "name", conv_mode)
    if str(mode).lower() != "cross_correlation":
        raise MegEngineError(
            f"{fname}: only conv_mode='cross_correlation' is supported, got {conv_mode!r}"
        )


def _geometry(fname, stride, padding, dilation):
    stride = _tuple(stride, 2, fname, "stride")
    padding = _tuple(padding, 2, fname, "padding")
    dilation = _tuple(dilation, 2, fname, "dilation")
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
        raise MegEngineError(
            f"{fname}: stride {stride} and dilation {dilation} must be >= 1, padding {padding} >= 0"
        )
    return stride, padding, dilation


def deformable_conv2d(
    inp,
    weight,
    offset,
    mask,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    conv_mode="cross_correlation",
    compute_mode="default",
):
    r"""Deformable convolution (DCNv2): tap ``(i, j)`` of output position ``(y, x)`` reads the
    input bilinearly at ``(y * sh - ph + i * dh + dy, x * sw - pw + j * dw + dx)`` and is
    multiplied by ``m``, where ``dy``, ``dx`` and ``m`` come from ``offset`` and ``mask`` at
    ``(y, x)``. A point outside ``(-1, H) x (-1, W)`` reads 0, and so do the taps of a point
    that fall outside the input.

    The input channels split into ``dg`` deformable groups (``dg`` is offset's channels
    ``/ (2 * KH * KW)``), each with its own offsets and masks: offset channel
    ``2 * (g * KH * KW + i * KW + j)`` holds ``dy`` of tap ``(i, j)`` of group ``g`` and the next
    channel its ``dx``; mask channel ``g * KH * KW + i * KW + j`` holds ``m``.

    Args:
        inp: input of shape (N, IC, H, W).
        weight: filter of shape (OC, IC, KH, KW), or (groups, OC // groups, IC // groups, KH, KW)
            when grouped.
        offset: (N, 2 * dg * KH * KW, OH, OW) offsets, cast to the input's dtype.
        mask: (N, dg * KH * KW, OH, OW) tap weights, cast to the input's dtype.
        bias: optional bias with OC elements, e.g. of shape (1, OC, 1, 1).
        stride: step of the window, an int or (sh, sw).
        padding: zeros added at both ends, an int or (ph, pw).
        dilation: gap between kernel taps, an int or (dh, dw).
        groups: channel groups; IC and OC must be divisible by it.
        conv_mode: only ``"cross_correlation"``, as in MegEngine.
        compute_mode: accepted for MegEngine compatibility; NeoMeg accumulates in double.

    Returns:
        a Tensor of shape (N, OC, OH, OW) with OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1,
        likewise OW.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(9, dtype="float32").reshape(1, 1, 3, 3)
        >>> w = np.ones((1, 1, 1, 1), "float32")
        >>> offset = np.zeros((1, 2, 3, 3), "float32")
        >>> offset[0, 1] = 0.5  # every tap half a pixel to the right
        >>> mask = np.ones((1, 1, 3, 3), "float32")
        >>> F.nn.deformable_conv2d(x, w, offset, mask).numpy()[0, 0]
        array([[0.5, 1.5, 1. ],
               [3.5, 4.5, 2.5],
               [6.5, 7.5, 4. ]], dtype=float32)
    """
    fname = "deformable_conv2d"
    _cross_correlation_only(conv_mode, fname)
    x = _float_input(inp, fname)
    w = _float_input(weight, fname, "weight")
    off, m = as_tensor(offset), as_tensor(mask)
    if amp._enabled:
        x, w, off, m = amp.cast_tensors(x, w, off, m)
    if x.ndim != 4:
        raise MegEngineError(f"{fname}: inp must have 4 dims (N, C, H, W), got {x.shape}")
    w = _conv_filter(w, 2, int(groups), fname, x.shape)
    if w._dtype_name != x._dtype_name:
        w = w.astype(x.dtype)
    off = off if off._dtype_name == x._dtype_name else off.astype(x.dtype)
    m = m if m._dtype_name == x._dtype_name else m.astype(x.dtype)
    stride, padding, dilation = _geometry(fname, stride, padding, dilation)
    op = cached_op(
        builtin.DeformableConvForward,
        stride=stride,
        padding=padding,
        dilation=dilation,
        group=int(groups),
    )
    return _add_bias(_rt.apply(op, x, w, off, m)[0], bias, fname)


def region_restricted_conv(
    inp,
    weight,
    rin,
    rout,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
    conv_mode="cross_correlation",
    compute_mode="default",
):
    r"""Region-restricted convolution: a 2-D convolution in which tap ``(i, j)`` of output
    position ``(y, x)`` contributes only if its input position ``(iy, ix)`` lies in the input
    (padding contributes nothing) and ``rin[n, iy, ix] == rout[n, y, x]``.

    Args:
        inp: input of shape (N, IC, H, W).
        weight: filter of shape (groups, OC // groups, IC // groups, KH, KW), or (OC, IC // groups,
            KH, KW).
        rin: (N, H, W) region ids of the input positions, int32 or uint8.
        rout: (N, OH, OW) region ids of the output positions, of rin's dtype.
        bias: optional bias with OC elements, e.g. of shape (1, OC, 1, 1).
        stride: step of the window, an int or (sh, sw).
        padding: zeros added at both ends, an int or (ph, pw).
        dilation: gap between kernel taps, an int or (dh, dw).
        groups: channel groups, >= 1; IC and OC must be divisible by it.
        conv_mode: only ``"cross_correlation"``, as in MegEngine.
        compute_mode: accepted for MegEngine compatibility; NeoMeg accumulates in double.

    Returns:
        a Tensor of shape (N, OC, OH, OW) with OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1,
        likewise OW.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(9, dtype="float32").reshape(1, 1, 3, 3)
        >>> w = np.ones((1, 1, 1, 3, 3), "float32")
        >>> rin = np.array([[[0, 0, 1], [0, 0, 1], [1, 1, 1]]], "int32")
        >>> rout = np.array([[[0, 1, 1], [0, 0, 1], [1, 1, 1]]], "int32")
        >>> F.nn.region_restricted_conv(x, w, rin, rout, padding=1).numpy()[0, 0]
        array([[ 8.,  7.,  7.],
               [ 8.,  8., 22.],
               [13., 26., 20.]], dtype=float32)
    """
    fname = "region_restricted_conv"
    _cross_correlation_only(conv_mode, fname)
    if int(groups) < 1:
        raise MegEngineError(f"{fname}: groups must be >= 1, got {groups}")
    x = _float_input(inp, fname)
    w = _float_input(weight, fname, "weight")
    if x.ndim != 4:
        raise MegEngineError(f"{fname}: inp must have 4 dims (N, C, H, W), got {x.shape}")
    w = _conv_filter(w, 2, int(groups), fname, x.shape)
    if w._dtype_name != x._dtype_name:
        w = w.astype(x.dtype)
    r_in, r_out = as_tensor(rin), as_tensor(rout)
    for name, r in (("rin", r_in), ("rout", r_out)):
        if r._dtype_name not in ("int32", "uint8"):
            raise MegEngineTypeError(
                f"{fname}: {name} must be int32 or uint8, got dtype {r._dtype_name}"
            )
    if r_in._dtype_name != r_out._dtype_name:
        raise MegEngineTypeError(
            f"{fname}: rin and rout must have one dtype, got {r_in._dtype_name} and "
            f"{r_out._dtype_name}"
        )
    stride, padding, dilation = _geometry(fname, stride, padding, dilation)
    op = cached_op(
        builtin.RegionRestrictedConvolutionForward,
        stride=stride,
        padding=padding,
        dilation=dilation,
        group=int(groups),
    )
    return _add_bias(_rt.apply(op, x, w, r_in, r_out)[0], bias, fname)
