"""Batch normalisation: BatchNorm1d and BatchNorm2d."""

import numpy as np

from .. import functional as F
from ..tensor import Parameter, Tensor
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d"]


class _BatchNorm(Module):
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
        self._check_input_ndim(inp)
        origin_shape = tuple(inp.shape)
        if inp.ndim != 4:
            inp = inp.reshape(origin_shape + (1,) * (4 - inp.ndim))
        # Batch statistics when training or when there are no running ones to use.
        use_batch = (self.training and not self.freeze) or not self.track_running_stats
        update = self.track_running_stats and self.training and not self.freeze
        out = F.batch_norm(
            inp,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
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
        freeze: keep the running statistics fixed and normalise with them even when training.
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
        freeze: keep the running statistics fixed and normalise with them even when training.
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
