"""QAT LinearBn1d and LinearBnRelu1d: Linear + BatchNorm1d (+ ReLU) with the BatchNorm folded
into the fake-quantized weight."""

from ...functional import relu
from .. import linear_bn as Float
from ._bn_fold import _BnFoldQAT

__all__ = ["LinearBn1d", "LinearBnRelu1d"]


class _LinearBnActivation1d(Float._LinearBnActivation1d, _BnFoldQAT):
    _inner_name = "linear"
    _stat_shape = (-1,)
    _out_shape = (1, -1)

    def _weight_scale_shape(self):
        return (-1, 1)

    def _inner_calc(self, inp, weight, bias):
        return self.linear.calc_linear(inp, weight, bias)

    def _inner_bias_shape(self):
        return (self.bn.num_features,)

    def calc_linear_bn_qat(self, inp, approx=True):
        """The linear map with the folded, fake-quantized weight (and, in eval, bias); in
        training it ends with the real BatchNorm.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.module.qat import LinearBn1d
            >>> LinearBn1d(3, 2).calc_linear_bn_qat(mge.Tensor(np.ones((4, 3), np.float32))).shape
            (4, 2)
        """
        return self._calc_bn_qat(inp, approx)

    @classmethod
    def from_float_module(cls, float_module):
        """The QAT version of a float LinearBn1d/LinearBnRelu1d, sharing its Linear's
        parameters and its BatchNorm.

        Examples:
            >>> import megengine.module as M
            >>> from megengine.module.qat import LinearBn1d
            >>> f = M.LinearBn1d(3, 2)
            >>> q = LinearBn1d.from_float_module(f)
            >>> q.linear.weight is f.linear.weight, q.bn is f.bn
            (True, True)
        """
        linear, bn = float_module.linear, float_module.bn
        return cls._of_float(
            float_module,
            in_features=linear.in_features,
            out_features=linear.out_features,
            bias=linear.bias is not None,
            compute_mode=linear.compute_mode,
            eps=bn.eps,
            momentum=bn.momentum,
            affine=bn.affine,
            track_running_stats=bn.track_running_stats,
        )


class LinearBn1d(_LinearBnActivation1d):
    """The QAT version of :class:`~.module.LinearBn1d`.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: whether to learn an additive bias.
        compute_mode: accepted for MegEngine compatibility.
        eps: the BatchNorm's eps.
        momentum: the BatchNorm's momentum.
        affine: whether the BatchNorm learns a weight and bias.
        track_running_stats: whether the BatchNorm keeps running statistics.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.module.qat import LinearBn1d
        >>> LinearBn1d(3, 2)(mge.Tensor(np.ones((4, 3), np.float32))).shape
        (4, 2)
    """

    def forward(self, inp):
        return self.apply_quant_activation(self.calc_linear_bn_qat(inp))


class LinearBnRelu1d(_LinearBnActivation1d):
    """The QAT version of :class:`~.module.LinearBnRelu1d`.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: whether to learn an additive bias.
        compute_mode: accepted for MegEngine compatibility.
        eps: the BatchNorm's eps.
        momentum: the BatchNorm's momentum.
        affine: whether the BatchNorm learns a weight and bias.
        track_running_stats: whether the BatchNorm keeps running statistics.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.module.qat import LinearBnRelu1d
        >>> y = LinearBnRelu1d(3, 2)(mge.Tensor(np.ones((4, 3), np.float32)))
        >>> float(y.min()) >= 0
        True
    """

    def forward(self, inp):
        return self.apply_quant_activation(relu(self.calc_linear_bn_qat(inp)))
