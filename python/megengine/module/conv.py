"""Convolutions: Conv1d, Conv2d, Conv3d, ConvTranspose2d and ConvRelu2d."""

import numpy as np

from .. import functional as F
from ..tensor import Parameter
from . import init
from .module import Module

__all__ = [
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvRelu2d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "ConvTransposeRelu2d",
]


def _ntuple(value, n, cls, name):
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{cls}: {name} needs {n} entries, got {tuple(value)}")
        return tuple(int(v) for v in value)
    return (int(value),) * n


def _conv_info_string(m):
    # MegEngine's wording: the channels and kernel always, the rest only where not the default
    # (stride 1, padding 0, dilation 1, one group, a bias); padding_mode is not shown.
    s = f"{m.in_channels}, {m.out_channels}, kernel_size={m.kernel_size}"
    if any(v != 1 for v in m.stride):
        s += f", stride={m.stride}"
    if any(m.padding):
        s += f", padding={m.padding}"
    if any(d != 1 for d in m.dilation):
        s += f", dilation={m.dilation}"
    if m.groups != 1:
        s += f", groups={m.groups}"
    if m.bias is None:
        s += ", bias=False"
    return s


class _ConvNd(Module):
    _nd = 2
    _transposed = False

    # Conv1d's and Conv2d's signature, which they inherit; the transposed convolutions pass
    # output_padding as a keyword.
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        conv_mode="cross_correlation",
        compute_mode="default",
        padding_mode="zeros",
        **kwargs,
    ):
        output_padding = kwargs.pop("output_padding", 0)
        super().__init__(**kwargs)
        cls, nd = type(self).__name__, self._nd
        if in_channels % groups != 0:
            raise ValueError(
                f"{cls}: in_channels={in_channels} is not divisible by groups={groups}"
            )
        if out_channels % groups != 0:
            raise ValueError(
                f"{cls}: out_channels={out_channels} is not divisible by groups={groups}"
            )
        if padding_mode not in ("zeros", "reflect", "replicate"):
            raise ValueError(
                f"{cls}: padding_mode must be 'zeros', 'reflect' or 'replicate', got "
                f"{padding_mode!r}"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, nd, cls, "kernel_size")
        self.stride = _ntuple(stride, nd, cls, "stride")
        self.padding = _ntuple(padding, nd, cls, "padding")
        self.dilation = _ntuple(dilation, nd, cls, "dilation")
        self.output_padding = _ntuple(output_padding, nd, cls, "output_padding")
        self.groups = groups
        self.conv_mode = conv_mode
        self.compute_mode = compute_mode
        self.padding_mode = padding_mode
        self.weight = Parameter(np.zeros(self._weight_shape(), dtype=np.float32))
        bias_shape = (1, out_channels) + (1,) * nd
        self.bias = Parameter(np.zeros(bias_shape, dtype=np.float32)) if bias else None
        self.reset_parameters()

    def _weight_shape(self):
        g, ic, oc, k = self.groups, self.in_channels, self.out_channels, self.kernel_size
        if self._transposed:
            return (ic, oc) + k if g == 1 else (g, ic // g, oc // g) + k
        return (oc, ic) + k if g == 1 else (g, oc // g, ic // g) + k

    def _infer_bias_shape(self):
        # the bias broadcasts against N, C, spatial...
        return (1, self.out_channels) + (1,) * self._nd

    def _get_fanin(self):
        # MegEngine's: all input channels times the kernel size, groups or not.
        return self.in_channels * int(np.prod(self.kernel_size))

    def _geometry_kwargs(self):
        # The constructor keywords that give another module this one's shape (output_padding
        # for a transposed one, padding_mode otherwise): the float, QAT and quantized versions
        # are made from each other with them.
        kwargs = {
            "in_channels": self.in_channels,
            "out_channels": self.out_channels,
            "kernel_size": self.kernel_size,
            "stride": self.stride,
            "padding": self.padding,
            "dilation": self.dilation,
            "groups": self.groups,
        }
        if self._transposed:
            kwargs["output_padding"] = self.output_padding
        else:
            kwargs["padding_mode"] = self.padding_mode
        return kwargs

    def _float_kwargs(self):
        # _geometry_kwargs and the float module's own choices: bias, conv_mode, compute_mode
        return {
            **self._geometry_kwargs(),
            "bias": self.bias is not None,
            "conv_mode": self.conv_mode,
            "compute_mode": self.compute_mode,
        }

    def reset_parameters(self):
        """Redraws the weight from N(0, 1 / fan_in), fan_in = in_channels * prod(kernel_size),
        and zeros the bias, as MegEngine's."""
        init.normal_(self.weight, 0.0, np.sqrt(1 / max(self._get_fanin(), 1)))
        if self.bias is not None:
            init.zeros_(self.bias)

    def _module_info_string(self):
        return _conv_info_string(self)

    def get_pad_witdth(self):
        """The padding as :func:`~.functional.pad` takes it, one (before, after) pair per dim of
        the input (MegEngine's name, spelling included).

        Examples:
            >>> import megengine.module as M
            >>> M.Conv2d(1, 1, 3, padding=(1, 2)).get_pad_witdth()
            ((0, 0), (0, 0), (1, 1), (2, 2))
        """
        return ((0, 0), (0, 0)) + tuple((p, p) for p in self.padding)

    def _pad_input(self, x):
        """Explicit reflect/replicate padding; returns (input, padding for the conv)."""
        if self.padding_mode == "zeros" or not any(self.padding):
            return x, self.padding
        mode = "reflect" if self.padding_mode == "reflect" else "edge"
        return F.pad(x, self.get_pad_witdth(), mode=mode), (0,) * self._nd

    def calc_conv(self, inp, weight, bias):
        """The convolution of ``inp`` with ``weight`` and ``bias`` under this module's
        geometry."""
        inp, padding = self._pad_input(inp)
        fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[self._nd]
        kwargs = {}
        if self._nd != 3:
            kwargs["compute_mode"] = self.compute_mode
        return fn(
            inp,
            weight,
            bias,
            self.stride,
            padding,
            self.dilation,
            self.groups,
            self.conv_mode,
            **kwargs,
        )

    def forward(self, inp):
        return self.calc_conv(inp, self.weight, self.bias)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, W) inputs; weight (out, in/groups, k), N(0, 1 / fan_in).

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size.
        stride: step of the window.
        padding: zeros added on both sides.
        dilation: spacing between kernel taps.
        groups: channel groups; the weight becomes (groups, out/groups, in/groups, k).
        bias: whether to add a learned bias of shape (1, out_channels, 1).
        conv_mode: ``"cross_correlation"`` (the default) or ``"convolution"``.
        compute_mode: accepted for MegEngine compatibility.
        padding_mode: ``"zeros"``, ``"reflect"`` or ``"replicate"``.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.Conv1d(2, 4, 3, padding=1)
        >>> m.weight.shape, m(mge.Tensor(np.ones((1, 2, 5), dtype=np.float32))).shape
        ((4, 2, 3), (1, 4, 5))
    """

    _nd = 1


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) inputs; weight (out, in/groups, kh, kw) (or
    (groups, out/groups, in/groups, kh, kw) when grouped) from N(0, 1 / fan_in), bias
    (1, out, 1, 1) from zeros, as MegEngine's.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window, an int or (sh, sw).
        padding: zeros added on both sides, an int or (ph, pw).
        dilation: spacing between kernel taps, an int or (dh, dw).
        groups: channel groups.
        bias: whether to add a learned bias.
        conv_mode: ``"cross_correlation"`` (the default) or ``"convolution"``.
        compute_mode: accepted for MegEngine compatibility.
        padding_mode: ``"zeros"``, ``"reflect"`` or ``"replicate"``.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.Conv2d(3, 8, 3, stride=2, padding=1)
        >>> m(mge.Tensor(np.ones((2, 3, 8, 8), dtype=np.float32))).shape
        (2, 8, 4, 4)
    """

    _nd = 2


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W) inputs; weight (out, in/groups, kd, kh, kw) from
    N(0, 1 / fan_in), bias (1, out, 1, 1, 1) from zeros.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kd, kh, kw).
        stride: step of the window.
        padding: zeros added on both sides.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether to add a learned bias.
        conv_mode: ``"cross_correlation"`` (the default) or ``"convolution"``.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.Conv3d(1, 2, 3)
        >>> m(mge.Tensor(np.ones((1, 1, 4, 4, 4), dtype=np.float32))).shape
        (1, 2, 2, 2, 2)
    """

    _nd = 3

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        conv_mode="cross_correlation",
        **kwargs,
    ):
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            conv_mode,
            "default",
            **kwargs,
        )


class ConvTranspose2d(_ConvNd):
    """2-D transposed convolution (the gradient of a Conv2d with respect to its input);
    weight (in, out, kh, kw) (or (groups, in/groups, out/groups, kh, kw)) from
    N(0, 1 / (in * kh * kw)), bias (1, out, 1, 1) from zeros, as MegEngine's.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: stride of the matching Conv2d.
        padding: padding of the matching Conv2d.
        output_padding: extra rows/columns added at the bottom/right of the output.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether to add a learned bias.
        conv_mode: ``"cross_correlation"`` (the default) or ``"convolution"``.
        compute_mode: accepted for MegEngine compatibility.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.ConvTranspose2d(4, 2, 2, stride=2)
        >>> m.weight.shape, m(mge.Tensor(np.ones((1, 4, 3, 3), dtype=np.float32))).shape
        ((4, 2, 2, 2), (1, 2, 6, 6))
    """

    _nd = 2
    _transposed = True

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        dilation=1,
        groups=1,
        bias=True,
        conv_mode="cross_correlation",
        compute_mode="default",
        **kwargs,
    ):
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            conv_mode,
            compute_mode,
            output_padding=output_padding,
            **kwargs,
        )

    def calc_conv_transpose2d(self, inp, weight, bias):
        """The transposed convolution of ``inp`` with ``weight`` and ``bias`` under this
        module's geometry.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> import megengine.module as M
            >>> m = M.ConvTranspose2d(1, 1, 2, bias=False)
            >>> w = mge.Tensor(np.ones((1, 1, 2, 2), dtype=np.float32))
            >>> x = mge.Tensor(np.ones((1, 1, 1, 1), dtype=np.float32))
            >>> m.calc_conv_transpose2d(x, w, None).numpy().tolist()
            [[[[1.0, 1.0], [1.0, 1.0]]]]
        """
        return F.conv_transpose2d(
            inp,
            weight,
            bias,
            self.stride,
            self.padding,
            self.output_padding,
            self.dilation,
            self.groups,
            self.conv_mode,
            self.compute_mode,
        )

    def forward(self, inp):
        return self.calc_conv_transpose2d(inp, self.weight, self.bias)


class ConvTransposeRelu2d(ConvTranspose2d):
    """A ConvTranspose2d followed by ReLU (the fused module quantization-aware training
    converts).

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: stride of the matching Conv2d.
        padding: padding of the matching Conv2d.
        output_padding: extra rows/columns added at the bottom/right of the output.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether to add a learned bias.
        conv_mode: ``"cross_correlation"`` (the default) or ``"convolution"``.
        compute_mode: accepted for MegEngine compatibility.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.ConvTransposeRelu2d(2, 3, 2, stride=2)
        >>> y = m(mge.Tensor(np.random.randn(1, 2, 3, 3).astype(np.float32)))
        >>> y.shape, bool((y.numpy() >= 0).all())
        ((1, 3, 6, 6), True)
    """

    def forward(self, inp):
        return F.relu(self.calc_conv_transpose2d(inp, self.weight, self.bias))


class ConvTranspose3d(_ConvNd):
    """3-D transposed convolution (the gradient of a Conv3d with respect to its input);
    weight (in, out, kd, kh, kw) (or (groups, in/groups, out/groups, kd, kh, kw)) from
    N(0, 1 / (in * kd * kh * kw)), bias (1, out, 1, 1, 1) from zeros, as MegEngine's.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kd, kh, kw).
        stride: stride of the matching Conv3d.
        padding: padding of the matching Conv3d.
        output_padding: extra planes added at the back of each spatial dim of the output.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether to add a learned bias.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.ConvTranspose3d(4, 2, 2, stride=2)
        >>> m.weight.shape, m(mge.Tensor(np.ones((1, 4, 2, 3, 3), dtype=np.float32))).shape
        ((4, 2, 2, 2, 2), (1, 2, 4, 6, 6))
    """

    _nd = 3
    _transposed = True

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        dilation=1,
        groups=1,
        bias=True,
        **kwargs,
    ):
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            "cross_correlation",
            "default",
            output_padding=output_padding,
            **kwargs,
        )

    def forward(self, inp):
        return F.conv_transpose3d(
            inp,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self.output_padding,
            self.dilation,
            self.groups,
        )


class ConvRelu2d(Conv2d):
    """A Conv2d followed by ReLU (the fused module quantization-aware training converts).

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window.
        padding: zeros added on both sides.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether to add a learned bias.
        conv_mode: ``"cross_correlation"`` (the default) or ``"convolution"``.
        compute_mode: accepted for MegEngine compatibility.
        padding_mode: ``"zeros"``, ``"reflect"`` or ``"replicate"``.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.ConvRelu2d(1, 1, 1, bias=False)
        >>> M.init.fill_(m.weight, -1.0)
        >>> m(mge.Tensor(np.array([[[[2.0, -3.0]]]], dtype=np.float32))).numpy().tolist()
        [[[[0.0, 3.0]]]]
    """

    def forward(self, inp):
        return F.relu(self.calc_conv(inp, self.weight, self.bias))
