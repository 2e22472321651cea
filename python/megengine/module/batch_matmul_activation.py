"""BatchMatMulActivation: a batch of linear maps, ``activation(weight @ x + bias)``."""

import numpy as np

from .. import functional as F
from ..tensor import Parameter
from . import init
from .module import Module

__all__ = ["BatchMatMulActivation"]


class BatchMatMulActivation(Module):
    """``weight[b] @ x[b]`` for each b of the batch, plus the bias, then the activation;
    weight (batch, out_features, in_features) from N(0, 1 / in_features), bias (out_features,)
    from zeros, as MegEngine's (whose bias is added by broadcasting against the last axis of
    the (batch, out_features, K) product, so K must be 1 or out_features).

    Args:
        batch: the number of maps.
        in_features: rows of each x.
        out_features: rows of each result.
        bias: whether to add a learned bias.
        nonlinear_mode: ``"identity"`` or ``"relu"`` (any case).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.BatchMatMulActivation(3, 4, 5, nonlinear_mode="relu")
        >>> y = m(mge.Tensor(np.random.randn(3, 4, 5).astype("float32")))
        >>> y.shape, bool((y.numpy() >= 0).all())
        ((3, 5, 5), True)
    """

    def __init__(
        self, batch, in_features, out_features, bias=True, nonlinear_mode="identity", **kwargs
    ):
        super().__init__(**kwargs)
        mode = str(nonlinear_mode).lower()
        if mode not in ("identity", "relu"):
            raise ValueError(
                f"BatchMatMulActivation: nonlinear_mode must be 'identity' or 'relu', got "
                f"{nonlinear_mode!r}"
            )
        self.batch = batch
        self.in_features = in_features
        self.out_features = out_features
        self.nonlinear_mode = mode
        self.weight = Parameter(np.zeros((batch, out_features, in_features), dtype=np.float32))
        self.bias = Parameter(np.zeros((out_features,), dtype=np.float32)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """Redraws the weight from N(0, 1 / in_features) and zeros the bias."""
        init.normal_(self.weight, 0.0, np.sqrt(1 / self.in_features))
        if self.bias is not None:
            init.zeros_(self.bias)

    def _calc_linear(self, x, weight, bias):
        # MegEngine's: the bias is added when the module has one (its QAT version passes a
        # fake-quantized one)
        y = F.matmul(weight, x)
        if self.bias is not None:
            y = y + bias
        return F.relu(y) if self.nonlinear_mode == "relu" else y

    def forward(self, x):
        return self._calc_linear(x, self.weight, self.bias)
