"""``F.local_conv2d``: a convolution whose filter differs at every output position (a locally
connected layer), as MegEngine's GroupLocal: each output position's windows from
:func:`~.sliding_window` contracted with that position's filter."""

from ..core._imperative_rt import MegEngineError
from ..core.tensor.array_method import as_tensor
from .einsum import einsum
from .sliding_window import sliding_window

__all__ = ["local_conv2d"]


def local_conv2d(
    inp, weight, bias=None, stride=1, padding=0, dilation=1, conv_mode="cross_correlation"
):
    """Convolution with untied filters: ``out[n, g * OCg + o, y, x] = sum over c, i, j of
    window[n, g * ICg + c, y, x, i, j] * weight[g, y, x, c, i, j, o]``.

    Args:
        inp: input of shape (N, IC, H, W).
        weight: filters of shape (groups, OH, OW, IC // groups, KH, KW, OC // groups), one per
            output position.
        bias: optional bias broadcast against the (N, OC, OH, OW) result.
        stride: step between windows, an int or (sh, sw).
        padding: zeros added on both sides, an int or (ph, pw).
        dilation: spacing of a window's elements, an int or (dh, dw).
        conv_mode: only ``"cross_correlation"``, as in MegEngine.

    Returns:
        a Tensor of shape (N, OC, OH, OW).

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.ones((1, 1, 2, 3), "float32")
        >>> w = np.arange(8, dtype="float32").reshape(1, 1, 2, 1, 2, 2, 1)  # two positions
        >>> F.local_conv2d(x, w).numpy().tolist()
        [[[[6.0, 22.0]]]]
    """
    fname = "local_conv2d"
    mode = getattr(conv_mode, "name", conv_mode)
    if str(mode).lower() != "cross_correlation":
        raise MegEngineError(
            f"{fname}: only conv_mode='cross_correlation' is supported, got {conv_mode!r}"
        )
    x, w = as_tensor(inp), as_tensor(weight)
    if x.ndim != 4:
        raise MegEngineError(f"{fname}: inp must have 4 dims (N, C, H, W), got {x.shape}")
    if w.ndim != 7:
        raise MegEngineError(
            f"{fname}: weight must have 7 dims (groups, OH, OW, IC / groups, KH, KW, "
            f"OC / groups), got {w.shape}"
        )
    groups, oh, ow, icg, kh, kw, ocg = w.shape
    if icg * groups != x.shape[1]:
        raise MegEngineError(
            f"{fname}: inp {x.shape} has {x.shape[1]} channels, weight {w.shape} takes "
            f"{groups} x {icg}"
        )
    windows = sliding_window(x, (kh, kw), padding, stride, dilation)
    if tuple(windows.shape[2:4]) != (oh, ow):
        raise MegEngineError(
            f"{fname}: inp {x.shape} gives {windows.shape[2]}x{windows.shape[3]} output "
            f"positions, weight {w.shape} has filters for {oh}x{ow}"
        )
    n = x.shape[0]
    windows = windows.reshape(n, groups, icg, oh, ow, kh, kw)
    out = einsum("ngcyxij,gyxcijo->ngoyx", windows, w).reshape(n, groups * ocg, oh, ow)
    return out if bias is None else out + bias
