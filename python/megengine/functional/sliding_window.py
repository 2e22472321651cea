"""``F.sliding_window`` and ``F.sliding_window_transpose``: MegEngine's im2col and its adjoint
(col2im), built from padding, strided slices and stacks, so both are differentiable and exact
(a window copies values; the adjoint only adds them)."""

from ..core import _imperative_rt as _rt
from ..core._imperative_rt import MegEngineError
from ..core.ops import builtin
from ..core.tensor.array_method import as_tensor, cached_op
from .tensor import stack, zeros_like

__all__ = ["sliding_window", "sliding_window_transpose"]


def _pair(value, fname, name, least):
    pair = tuple(value) if isinstance(value, (list, tuple)) else (value, value)
    if len(pair) != 2 or any(int(v) != v or v < least for v in pair):
        raise MegEngineError(
            f"{fname}: {name} must be an int or two ints >= {least}, got {value!r}"
        )
    return tuple(int(v) for v in pair)


def _zero_pad(x, front, back):
    if not any(front) and not any(back):
        return x
    op = cached_op(
        builtin.Padding,
        mode="CONSTANT",
        value=0.0,
        front_offsets=(0, 0) + tuple(front),
        back_offsets=(0, 0) + tuple(back),
    )
    return _rt.apply(op, x)[0]


def _geometry(fname, size, kernel_size, padding, stride, dilation):
    k = _pair(kernel_size, fname, "kernel_size", 1)
    p = _pair(padding, fname, "padding", 0)
    s = _pair(stride, fname, "stride", 1)
    d = _pair(dilation, fname, "dilation", 1)
    out = tuple((size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))
    if min(out) < 1:
        raise MegEngineError(
            f"{fname}: a {size[0]}x{size[1]} input padded by {p} holds no {k} window dilated by {d}"
        )
    return k, p, s, d, out


def sliding_window(inp, kernel_size, padding=0, stride=1, dilation=1):
    """Every sliding window of an (N, C, H, W) input as its own (KH, KW) block:
    ``out[n, c, oh, ow, i, j] = padded[n, c, oh * sh + i * dh, ow * sw + j * dw]``.

    Args:
        inp: input of shape (N, C, H, W).
        kernel_size: window size, an int or (kh, kw).
        padding: zeros added on both sides, an int or (ph, pw).
        stride: step between windows, an int or (sh, sw).
        dilation: spacing of a window's elements, an int or (dh, dw).

    Returns:
        a Tensor of shape (N, C, OH, OW, KH, KW), with
        OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1, likewise OW.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(6, dtype="float32").reshape(1, 1, 2, 3)
        >>> F.sliding_window(x, (2, 2)).numpy()[0, 0].tolist()
        [[[[0.0, 1.0], [3.0, 4.0]], [[1.0, 2.0], [4.0, 5.0]]]]
    """
    fname = "sliding_window"
    x = as_tensor(inp)
    if x.ndim != 4:
        raise MegEngineError(f"{fname}: inp must have 4 dims (N, C, H, W), got {x.shape}")
    n, c = x.shape[:2]
    k, p, s, d, out = _geometry(fname, x.shape[2:], kernel_size, padding, stride, dilation)
    xp = _zero_pad(x, p, p)
    windows = [
        xp[
            :,
            :,
            i * d[0] : i * d[0] + s[0] * (out[0] - 1) + 1 : s[0],
            j * d[1] : j * d[1] + s[1] * (out[1] - 1) + 1 : s[1],
        ]
        for i in range(k[0])
        for j in range(k[1])
    ]
    return stack(windows, axis=4).reshape(n, c, out[0], out[1], k[0], k[1])


def _spread(x, axis, step):
    """x with step - 1 zeros between neighbours along axis (2 or 3)."""
    if step == 1:
        return x
    zero = zeros_like(x)
    woven = stack([x] + [zero] * (step - 1), axis=axis + 1)
    shape = list(x.shape)
    shape[axis] *= step
    woven = woven.reshape(shape)
    keep = (x.shape[axis] - 1) * step + 1
    return woven[:, :, :keep] if axis == 2 else woven[:, :, :, :keep]


def sliding_window_transpose(inp, output_size, kernel_size, padding=0, stride=1, dilation=1):
    """The adjoint of :func:`sliding_window`: each window's values added back where they came
    from, overlaps summed, the padding cut off.

    Args:
        inp: windows of shape (N, C, OH, OW, KH, KW).
        output_size: (H, W) of the result, an int or two.
        kernel_size: window size, an int or (kh, kw), matching inp's last two dims.
        padding: the padding of the matching sliding_window, an int or (ph, pw).
        stride: step between windows, an int or (sh, sw).
        dilation: spacing of a window's elements, an int or (dh, dw).

    Returns:
        a Tensor of shape (N, C, H, W).

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> windows = F.sliding_window(np.ones((1, 1, 2, 3), "float32"), (2, 2))
        >>> F.sliding_window_transpose(windows, (2, 3), (2, 2)).numpy()[0, 0].tolist()
        [[1.0, 2.0, 1.0], [1.0, 2.0, 1.0]]
    """
    fname = "sliding_window_transpose"
    x = as_tensor(inp)
    if x.ndim != 6:
        raise MegEngineError(f"{fname}: inp must have 6 dims (N, C, OH, OW, KH, KW), got {x.shape}")
    size = _pair(output_size, fname, "output_size", 1)
    k, p, s, d, out = _geometry(fname, size, kernel_size, padding, stride, dilation)
    if tuple(x.shape[2:]) != out + k:
        raise MegEngineError(
            f"{fname}: inp {x.shape} does not hold the {out[0]}x{out[1]} windows of {k} that an "
            f"output of {size} gives"
        )
    full = (size[0] + 2 * p[0], size[1] + 2 * p[1])
    total = None
    # Kernel positions from the last: an output element then sums its windows in row-major
    # window order (the window row falls as the kernel row rises), the order of MegEngine
    # 1.13's kernel, so float sums round alike.
    for i in reversed(range(k[0])):
        for j in reversed(range(k[1])):
            piece = _spread(_spread(x[:, :, :, :, i, j], 2, s[0]), 3, s[1])
            front = (i * d[0], j * d[1])
            back = tuple(full[a] - front[a] - piece.shape[2 + a] for a in range(2))
            placed = _zero_pad(piece, front, back)
            total = placed if total is None else total + placed
    return total[:, :, p[0] : p[0] + size[0], p[1] : p[1] + size[1]]
