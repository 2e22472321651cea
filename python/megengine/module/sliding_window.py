"""SlidingWindow and SlidingWindowTranspose: :func:`~.functional.sliding_window` and its
adjoint with fixed settings."""

from .. import functional as F
from .module import Module

__all__ = ["SlidingWindow", "SlidingWindowTranspose"]


class SlidingWindow(Module):
    """Every sliding window of an (N, C, H, W) input as its own block, giving
    (N, C, OH, OW, KH, KW).

    Args:
        kernel_size: window size, an int or (kh, kw).
        padding: zeros added on both sides, an int or (ph, pw).
        stride: step between windows, an int or (sh, sw).
        dilation: spacing of a window's elements, an int or (dh, dw).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.SlidingWindow(3, padding=1)(mge.Tensor(np.ones((2, 4, 5, 5), "float32"))).shape
        (2, 4, 5, 5, 3, 3)
    """

    def __init__(self, kernel_size, padding=0, stride=1, dilation=1, **kwargs):
        super().__init__(**kwargs)
        self.kernel_size = kernel_size
        self.padding = padding
        self.stride = stride
        self.dilation = dilation

    def forward(self, inp):
        return F.sliding_window(inp, self.kernel_size, self.padding, self.stride, self.dilation)


class SlidingWindowTranspose(Module):
    """The adjoint of :class:`SlidingWindow`: windows (N, C, OH, OW, KH, KW) added back into an
    (N, C, H, W) result, overlaps summed.

    Args:
        output_size: (H, W) of the result, an int or two.
        kernel_size: window size, an int or (kh, kw).
        padding: the padding of the matching SlidingWindow, an int or (ph, pw).
        stride: step between windows, an int or (sh, sw).
        dilation: spacing of a window's elements, an int or (dh, dw).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> windows = mge.Tensor(np.ones((1, 1, 2, 2, 2, 2), "float32"))
        >>> M.SlidingWindowTranspose(3, 2)(windows).numpy()[0, 0].tolist()
        [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """

    def __init__(self, output_size, kernel_size, padding=0, stride=1, dilation=1, **kwargs):
        super().__init__(**kwargs)
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.padding = padding
        self.stride = stride
        self.dilation = dilation

    def forward(self, inp):
        return F.sliding_window_transpose(
            inp, self.output_size, self.kernel_size, self.padding, self.stride, self.dilation
        )
