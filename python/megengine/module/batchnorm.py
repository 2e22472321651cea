"""Batch normalisation: BatchNorm1d, BatchNorm2d and SyncBatchNorm."""

import numpy as np

from .. import functional as F
from ..distributed.group import WORLD
from ..functional.nn import _batch_norm_inference
from ..tensor import Parameter, Tensor
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "SyncBatchNorm"]


class _BatchNorm(Module):
    _flat_state = True  # see Module._flat_state
    _ndims = ()

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.9,
        affine=True,
        track_running_stats=True,
        freeze=False,
        *,
        compute_mode="default",
        param_dim="dim_1c11",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if param_dim not in ("dim_1c11", "dim_c"):
            raise ValueError(
                f"{type(self).__name__}: param_dim must be 'dim_1c11' or 'dim_c', got {param_dim!r}"
            )
        self.compute_mode = compute_mode
        self.param_dim = param_dim
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        self.freeze = freeze
        shape = self._param_shape()
        self.weight = Parameter(np.ones(shape, dtype=np.float32)) if affine else None
        self.bias = Parameter(np.zeros(shape, dtype=np.float32)) if affine else None
        if track_running_stats:
            self.running_mean = Tensor(np.zeros(shape, dtype=np.float32))
            self.running_var = Tensor(np.ones(shape, dtype=np.float32))
        else:
            self.running_mean = None
            self.running_var = None

    def _param_shape(self):
        return (
            (1, self.num_features, 1, 1) if self.param_dim == "dim_1c11" else (self.num_features,)
        )

    def reset_running_stats(self):
        """Sets the running mean to zeros and the running variance to ones."""
        if self.track_running_stats:
            shape = self._param_shape()
            self.running_mean._reset(Tensor(np.zeros(shape, dtype=np.float32)))
            self.running_var._reset(Tensor(np.ones(shape, dtype=np.float32)))

    def reset_parameters(self):
        """Resets the running statistics, the weight to ones and the bias to zeros."""
        self.reset_running_stats()
        if self.affine:
            shape = self._param_shape()
            self.weight._reset(Tensor(np.ones(shape, dtype=np.float32)))
            self.bias._reset(Tensor(np.zeros(shape, dtype=np.float32)))

    def _check_running_stats(self):
        # A layer built without running statistics has none to update or to evaluate with:
        # switching track_running_stats on afterwards is refused, as MegEngine 1.13 does
        # (with its AssertionError and message), instead of silently normalising by the batch.
        if self.track_running_stats and (self.running_mean is None or self.running_var is None):
            raise AssertionError(
                "track_running_stats can not be initilized to False and changed to True later"
            )

    def _check_input_ndim(self, inp):
        if inp.ndim not in self._ndims:
            raise ValueError(
                f"{type(self).__name__}: expected a {' or '.join(map(str, self._ndims))}-D "
                f"input, got shape {tuple(inp.shape)}"
            )
        if inp.shape[1] != self.num_features:
            raise ValueError(
                f"{type(self).__name__}: input {tuple(inp.shape)} has {inp.shape[1]} channels, "
                f"expected num_features={self.num_features}"
            )

    def forward(self, inp):
        if (
            not (self.training or self.freeze)
            and self.track_running_stats
            and isinstance(inp, Tensor)
        ):
            # What an inference loop pays per layer and batch: batch_norm's fast path without
            # its argument checks; a None (errors included) goes on to the general path below.
            shape = inp.shape
            nd = len(shape)
            if nd in self._ndims and shape[1] == self.num_features:
                x = inp if nd == 4 else inp.reshape(shape + (1,) * (4 - nd))
                out = _batch_norm_inference(
                    x, self.running_mean, self.running_var, self.weight, self.bias, self.eps
                )
                if out is not None:
                    return out if nd == 4 else out.reshape(shape)
        self._check_input_ndim(inp)
        self._check_running_stats()
        origin_shape = tuple(inp.shape)
        if inp.ndim != 4:
            inp = inp.reshape(origin_shape + (1,) * (4 - inp.ndim))
        weight, bias = self._affine()
        if self.freeze and self.track_running_stats:
            # MegEngine's frozen path, an affine map with its rounding: what the zoo's
            # detectors ("FrozenBN" backbones) train through.
            scale = (self.running_var + self.eps) ** (-0.5)
            if weight is not None:
                scale = scale * weight
            shift = -self.running_mean * scale
            if bias is not None:
                shift = shift + bias
            out = inp * scale.reshape(1, -1, 1, 1) + shift.reshape(1, -1, 1, 1)
            return out.reshape(origin_shape) if len(origin_shape) != 4 else out
        # Batch statistics when training or when there are no running ones to use.
        use_batch = (self.training and not self.freeze) or not self.track_running_stats
        update = self.track_running_stats and self.training and not self.freeze
        out = F.batch_norm(
            inp,
            self.running_mean,
            self.running_var,
            weight,
            bias,
            training=use_batch,
            momentum=self.momentum if update else 1.0,
            eps=self.eps,
            inplace=update,
            compute_mode=self.compute_mode,
            param_dim=self.param_dim,
        )
        if isinstance(out, tuple):  # inplace=False also returns the (unused) new statistics
            out = out[0]
        if len(origin_shape) != 4:
            out = out.reshape(origin_shape)
        return out

    def _affine(self):
        # A frozen layer's weight and bias get no gradient (so optimizers and weight decay leave
        # them alone), as in MegEngine.
        if self.freeze and self.affine:
            return self.weight.detach(), self.bias.detach()
        return self.weight, self.bias

    def _module_info_string(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs per channel.

    Training normalises with the batch statistics and updates the running ones as
    ``running = running * momentum + batch * (1 - momentum)`` (MegEngine's convention; the
    unbiased variance for running_var); evaluation normalises with the running statistics.
    The weight starts at ones and the bias at zeros, all of shape (1, C, 1, 1).

    Args:
        num_features: C, the channels.
        eps: added to the variance before the square root.
        momentum: weight of the old running statistics in the update.
        affine: whether to learn a per-channel weight and bias.
        track_running_stats: keep running statistics (evaluation uses batch statistics
            otherwise).
        freeze: keep the running statistics fixed and normalise with them even when training;
            the weight and bias then get no gradient (an optimizer leaves them as they are).
        compute_mode: accepted for MegEngine compatibility.
        param_dim: ``"dim_1c11"`` (parameters and statistics of shape (1, C, 1, 1)) or
            ``"dim_c"`` (shape (C,)).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> bn = M.BatchNorm1d(2)
        >>> x = mge.Tensor(np.array([[1.0, 10.0], [3.0, 30.0]], dtype=np.float32))
        >>> np.round(bn(x).numpy(), 3).tolist()
        [[-1.0, -1.0], [1.0, 1.0]]
        >>> [round(float(v), 3) for v in bn.running_mean.numpy().ravel()]  # 0.9 * 0 + 0.1 * mean
        [0.2, 2.0]
    """

    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs per channel; see :class:`BatchNorm1d`.

    Args:
        num_features: C, the channels.
        eps: added to the variance before the square root.
        momentum: weight of the old running statistics in the update.
        affine: whether to learn a per-channel weight and bias.
        track_running_stats: keep running statistics.
        freeze: keep the running statistics fixed and normalise with them even when training;
            the weight and bias then get no gradient (an optimizer leaves them as they are).
        compute_mode: accepted for MegEngine compatibility.
        param_dim: ``"dim_1c11"`` (parameters and statistics of shape (1, C, 1, 1)) or
            ``"dim_c"`` (shape (C,)).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> bn = M.BatchNorm2d(3)
        >>> bn.eval()
        >>> x = mge.Tensor(np.full((1, 3, 2, 2), 4.0, dtype=np.float32))
        >>> np.round(bn(x).numpy()[0, :, 0, 0], 3).tolist()  # 4 / sqrt(1 + 1e-5)
        [4.0, 4.0, 4.0]
    """

    _ndims = (4,)


class SyncBatchNorm(_BatchNorm):
    r"""Applies Synchronized Batch Normalization for distributed training: when training in a
    process group, the statistics are those of the whole group's batch (see
    :func:`~.functional.nn.sync_batch_norm`); otherwise it is :class:`BatchNorm2d`.

    Args:
        num_features: usually :math:`C` from an input of shape :math:`(N, C, H, W)` or the
            highest ranked dimension of an input less than 4D.
        eps: a value added to the denominator for numerical stability.
        momentum: the value used for the ``running_mean`` and ``running_var`` computation.
        affine: whether this module has learnable affine parameters.
        track_running_stats: when True, tracks the running mean and variance.
        freeze: when True, keeps the running statistics fixed and normalises with them; the
            weight and bias then get no gradient.
        group: communication group, caculate mean and variance between this group.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> bn = M.SyncBatchNorm(2)
        >>> x = mge.Tensor(np.array([[1.0, 2.0], [3.0, 6.0]], dtype=np.float32))
        >>> np.round(bn(x).numpy(), 3).tolist()  # one process: plain batch normalisation
        [[-1.0, -1.0], [1.0, 1.0]]
    """

    _ndims = (2, 3, 4)

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.9,
        affine=True,
        track_running_stats=True,
        freeze=False,
        group=WORLD,
        **kwargs,
    ):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, freeze, **kwargs)
        self.group = group

    def forward(self, inp):
        """Normalises ``inp`` with the group's batch statistics (training) or the running ones.

        Args:
            inp: input of shape (N, C), (N, C, L) or (N, C, H, W).

        Returns:
            the normalised Tensor.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> import megengine.module as M
            >>> M.SyncBatchNorm(3)(mge.Tensor(np.ones((2, 3), dtype=np.float32))).shape
            (2, 3)
        """
        self._check_input_ndim(inp)
        self._check_running_stats()
        use_batch = (self.training and not self.freeze) or not self.track_running_stats
        update = self.track_running_stats and self.training and not self.freeze
        stats = (self.running_mean, self.running_var) if update or not use_batch else (None, None)
        return F.nn.sync_batch_norm(
            inp,
            *stats,
            *self._affine(),
            training=use_batch,
            momentum=self.momentum,
            eps=self.eps,
            group=self.group,
        )
