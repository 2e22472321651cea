"""Pooling: MaxPool2d, AvgPool2d, AdaptiveMaxPool2d and AdaptiveAvgPool2d."""

from .. import functional as F
from .module import Module

__all__ = ["AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool2d", "MaxPool2d"]


class _PoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, **kwargs):
        super().__init__(**kwargs)
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def _module_info_string(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_PoolNd):
    """Maximum over each window of (N, C, H, W) inputs.

    Args:
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window (kernel_size when None).
        padding: padding on both sides (never the maximum), an int or (ph, pw).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> x = mge.Tensor(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
        >>> M.MaxPool2d(2)(x).numpy().tolist()
        [[[[5.0, 7.0], [13.0, 15.0]]]]
    """

    def forward(self, inp):
        return F.max_pool2d(inp, self.kernel_size, self.stride, self.padding)


class AvgPool2d(_PoolNd):
    """Mean over each window of (N, C, H, W) inputs.

    Args:
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window (kernel_size when None).
        padding: zero padding on both sides, an int or (ph, pw).
        mode: ``"average_count_exclude_padding"`` (the default: padding is not counted) or
            ``"average"`` (padding counted).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> x = mge.Tensor(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
        >>> M.AvgPool2d(2)(x).numpy().tolist()
        [[[[2.5, 4.5], [10.5, 12.5]]]]
    """

    def __init__(
        self, kernel_size, stride=None, padding=0, mode="average_count_exclude_padding", **kwargs
    ):
        super().__init__(kernel_size, stride, padding, **kwargs)
        self.mode = mode

    def forward(self, inp):
        return F.avg_pool2d(inp, self.kernel_size, self.stride, self.padding, self.mode)

    def _module_info_string(self):
        return super()._module_info_string() + f", mode={self.mode}"


class _AdaptivePoolNd(Module):
    def __init__(self, oshp, **kwargs):
        super().__init__(**kwargs)
        self.oshp = oshp

    def _module_info_string(self):
        return f"oshp={self.oshp}"


class AdaptiveMaxPool2d(_AdaptivePoolNd):
    """Maximum pooling of (N, C, H, W) inputs to a fixed output size, with MegEngine's
    windows: one length ``in - (out - 1) * (in // out)`` at a stride of ``in // out``.

    Args:
        oshp: output size, an int or (oh, ow).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> x = mge.Tensor(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
        >>> M.AdaptiveMaxPool2d((1, 2))(x).numpy().tolist()
        [[[[13.0, 15.0]]]]
    """

    def forward(self, inp):
        return F.adaptive_max_pool2d(inp, self.oshp)


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """Average pooling of (N, C, H, W) inputs to a fixed output size, with MegEngine's
    windows: one length ``in - (out - 1) * (in // out)`` at a stride of ``in // out``.

    Args:
        oshp: output size, an int or (oh, ow).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> x = mge.Tensor(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
        >>> M.AdaptiveAvgPool2d(1)(x).numpy().tolist()
        [[[[7.5]]]]
    """

    def forward(self, inp):
        return F.adaptive_avg_pool2d(inp, self.oshp)
