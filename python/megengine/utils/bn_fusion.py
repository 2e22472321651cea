"""Folding a BatchNorm's statistics and affine parameters into the convolution or linear
layer before it (MegEngine's ``megengine.utils.bn_fusion``), by the QAT modules' folding
rule (``module/qat/_bn_fold.fold_bn``)."""

from ..functional import ones, zeros
from ..module.qat._bn_fold import fold_bn

__all__ = ["fold_weight_bias"]


def fold_weight_bias(weight, bias, gamma, beta, bn_mean, bn_var, eps=1e-5, transpose=False):
    r"""The weight and bias of a convolution (4-D weight, or 5-D grouped) or linear layer (2-D
    weight) followed by a BatchNorm with these parameters, as one layer. None stands for
    zeros (bias, beta, mean) or ones (gamma, var).

    Args:
        weight: the layer's weight.
        bias: its bias, or None.
        gamma: the BatchNorm's weight, or None.
        beta: its bias, or None.
        bn_mean: its running mean, or None.
        bn_var: its running variance, or None.
        eps: its epsilon.
        transpose: whether the weight is a transposed convolution's (in, out, kh, kw).

    Returns:
        ``(weight, bias)``: the bias shaped ``(1, C, 1, 1)`` for a convolution, ``(C,)`` for a
        linear layer.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.utils.bn_fusion import fold_weight_bias
        >>> w = mge.Tensor(np.ones((2, 1, 1, 1), np.float32))
        >>> var = mge.Tensor([3.0, 0.0])
        >>> fw, fb = fold_weight_bias(w, None, None, None, None, var, eps=1.0)
        >>> fw.numpy().ravel().tolist(), fb.shape
        ([0.5, 1.0], (1, 2, 1, 1))
    """
    if weight.ndim == 2:
        channels = weight.shape[0]
        stat, scale_shape = (-1,), (-1, 1)
    else:
        grouped = weight.ndim == 5
        groups = weight.shape[0] if grouped else 1
        per_group = weight.shape[(2 if transpose else 1) if grouped else (1 if transpose else 0)]
        channels = groups * per_group
        stat = (1, -1, 1, 1)
        scale_shape = (1, -1, 1, 1) if transpose else (-1, 1, 1, 1)
        if grouped:
            scale_shape = (groups, *scale_shape)

    def shaped(value, fill):
        if value is None:
            value = fill((channels,), dtype="float32")
        return value.reshape(stat)

    w, b, _ = fold_bn(
        weight,
        scale_shape,
        shaped(bias, zeros),
        shaped(gamma, ones),
        shaped(beta, zeros),
        shaped(bn_mean, zeros),
        shaped(bn_var, ones),
        eps,
    )
    return w, b
