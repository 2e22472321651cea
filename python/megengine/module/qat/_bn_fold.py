"""BatchNorm folding shared by the QAT ConvBn2d, ConvTransposeBn2d and LinearBn1d families, as
MegEngine 1.13 computes it: the weight is scaled by gamma / sqrt(var + eps) and fake-quantized;
in training (approx) the conv runs without bias, is rescaled back and goes through the real
BatchNorm (which updates the running statistics); in eval the folded bias is used."""

from abc import ABCMeta, abstractmethod

from ...functional import ones, sqrt, sum, zeros
from .module import QATModule


def fold_bn(weight, weight_scale_shape, bias, gamma, beta, bn_mean, bn_var, eps, with_bias=True):
    """``weight`` and ``bias`` with a BatchNorm folded in: ``weight * s`` (``s = gamma /
    sqrt(var + eps)`` reshaped to ``weight_scale_shape``) and ``beta + (bias - mean) * s``;
    statistics, gamma, beta and bias shaped alike. Returns ``(weight, bias or None, s)``.

    Examples:
        >>> import megengine as mge
        >>> from megengine.module.qat._bn_fold import fold_bn
        >>> one = mge.Tensor([1.0])
        >>> w, b, s = fold_bn(mge.Tensor([2.0]), (1,), one, one * 3, one, one * 0.5, one * 3, 1.0)
        >>> float(w), float(b), float(s)
        (3.0, 1.75, 1.5)
    """
    bn_istd = 1.0 / sqrt(bn_var + eps)
    scale_factor = gamma * bn_istd
    w_fold = weight * scale_factor.reshape(weight_scale_shape)
    b_fold = beta + gamma * (bias - bn_mean) * bn_istd if with_bias else None
    return w_fold, b_fold, scale_factor


class _BnFoldQAT(QATModule, metaclass=ABCMeta):
    # set by each family: the inner layer's attribute name, how the per-channel scale reshapes
    # against its weight (given groups), and the shapes of statistics and outputs
    _inner_name = None
    _stat_shape = None
    _out_shape = None

    def _inner(self):
        return getattr(self, self._inner_name)

    @abstractmethod
    def _weight_scale_shape(self):
        """The shape that gamma / sqrt(var + eps) takes against the inner layer's weight."""

    @abstractmethod
    def _inner_calc(self, inp, weight, bias):
        """The inner layer's computation with the given (folded) weight and bias."""

    @abstractmethod
    def _inner_bias_shape(self):
        """The shape of the folded bias as the inner layer adds it."""

    @classmethod
    def _of_float(cls, float_module, **kwargs):
        # the from_float_module of each family: made with kwargs, sharing the float module's
        # inner layer's weight and bias and its BatchNorm
        float_inner = getattr(float_module, cls._inner_name)
        qat_module = cls(**kwargs, name=float_module.name)
        qat_inner = qat_module._inner()
        qat_inner.weight = float_inner.weight
        qat_inner.bias = float_inner.bias
        qat_module.bn = float_module.bn
        return qat_module

    def get_batch_mean_var(self, inp):
        """The per-channel mean and biased variance of ``inp`` over all axes but 1, as sums.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.module.qat import ConvBn2d
            >>> x = mge.Tensor(np.arange(8, dtype=np.float32).reshape(2, 1, 2, 2))
            >>> mean, var = ConvBn2d(1, 1, 1).get_batch_mean_var(x)
            >>> float(mean), float(var)
            (3.5, 5.25)
        """
        axes = [a for a in range(inp.ndim) if a != 1]
        sum1, sum2 = inp, inp**2
        for a in axes:
            sum1 = sum(sum1, axis=a, keepdims=True)
            sum2 = sum(sum2, axis=a, keepdims=True)
        reduce_size = inp.size / inp.shape[1]
        batch_mean = sum1 / reduce_size
        batch_var = (sum2 - sum1**2 / reduce_size) / reduce_size
        return batch_mean, batch_var

    def _gamma_beta(self):
        bn = self.bn
        gamma = bn.weight
        if gamma is None:
            gamma = ones((bn.num_features,), dtype="float32")
        beta = bn.bias
        if beta is None:
            beta = zeros((bn.num_features,), dtype="float32")
        return gamma.reshape(self._stat_shape), beta.reshape(self._stat_shape)

    def _inner_bias(self):
        bias = self._inner().bias
        if bias is None:
            return zeros(self._inner_bias_shape(), dtype="float32")
        return bias.reshape(self._stat_shape)

    def fold_weight_bias(self, bn_mean, bn_var):
        """The weight (fake-quantized) and bias with the BatchNorm of statistics ``bn_mean`` and
        ``bn_var`` folded in (zeros and ones when None).

        Examples:
            >>> from megengine.module.qat import ConvBn2d
            >>> m = ConvBn2d(1, 2, 3)
            >>> w, b = m.fold_weight_bias(None, None)
            >>> w.shape, b.shape
            ((2, 1, 3, 3), (1, 2, 1, 1))
        """
        gamma, beta = self._gamma_beta()
        if bn_mean is None:
            bn_mean = zeros((self.bn.num_features,), dtype="float32")
        if bn_var is None:
            bn_var = ones((self.bn.num_features,), dtype="float32")
        bn_mean = bn_mean.reshape(self._stat_shape)
        bn_var = bn_var.reshape(self._stat_shape)
        w_fold, b_fold, _ = fold_bn(
            self._inner().weight, self._weight_scale_shape(), self._inner_bias(),
            gamma, beta, bn_mean, bn_var, self.bn.eps,
        )  # fmt: skip
        return self.apply_quant_weight(w_fold), b_fold

    def update_running_mean_and_running_var(self, bn_mean, bn_var, num_elements_per_channel):
        """Moves the BatchNorm's running statistics towards a batch's (unbiased variance), with
        no gradient.

        Examples:
            >>> import megengine as mge
            >>> from megengine.module.qat import ConvBn2d
            >>> m = ConvBn2d(1, 1, 1)
            >>> m.update_running_mean_and_running_var(mge.Tensor(1.0), mge.Tensor(2.0), 2)
            >>> float(m.bn.running_mean), float(m.bn.running_var)  # momentum 0.9
            (0.10000000149011612, 1.2999999523162842)
        """
        bn_mean = bn_mean.detach()
        bn_var = bn_var.detach() * num_elements_per_channel / (num_elements_per_channel - 1)
        exponential_average_factor = 1 - self.bn.momentum
        shape = self.bn.running_mean.shape
        self.bn.running_mean *= self.bn.momentum
        self.bn.running_mean += exponential_average_factor * bn_mean.reshape(shape)
        self.bn.running_var *= self.bn.momentum
        self.bn.running_var += exponential_average_factor * bn_var.reshape(shape)

    def _calc_bn_qat(self, inp, approx=True):
        if self.training and not approx:
            out = self._inner()(inp)
            bn_mean, bn_var = self.get_batch_mean_var(out)
            num_elements_per_channel = out.size / out.shape[1]
            self.update_running_mean_and_running_var(bn_mean, bn_var, num_elements_per_channel)
        else:
            bn_mean, bn_var = self.bn.running_mean, self.bn.running_var
        bn_mean = bn_mean.reshape(self._stat_shape)
        bn_var = bn_var.reshape(self._stat_shape)

        gamma, beta = self._gamma_beta()
        w_fold, b_fold, scale_factor = fold_bn(
            self._inner().weight, self._weight_scale_shape(), self._inner_bias(),
            gamma, beta, bn_mean, bn_var, self.bn.eps,
            with_bias=not (self.training and approx),
        )  # fmt: skip

        w_qat = self.apply_quant_weight(w_fold)
        b_qat = self.apply_quant_bias(b_fold, inp, w_qat)
        out = self._inner_calc(inp, w_qat, b_qat)
        if not (self.training and approx):
            return out
        # undo the scale to get the layer's own output, then the real BatchNorm
        orig = out / scale_factor.reshape(self._out_shape)
        if self._inner().bias is not None:
            orig = orig + self._inner().bias.reshape(self._out_shape)
        return self.bn(orig)
