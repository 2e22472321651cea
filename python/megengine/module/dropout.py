"""``Dropout``."""

from .. import functional as F
from .module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """When training, zeroes each element with probability ``drop_prob`` and scales the rest
    by ``1 / (1 - drop_prob)``; the identity in evaluation mode.

    Args:
        drop_prob: probability of zeroing an element, in [0, 1).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.Dropout(0.5)
        >>> sorted(set(m(mge.Tensor(np.ones(1000, dtype=np.float32))).numpy().tolist()))
        [0.0, 2.0]
        >>> m.eval()
        >>> m(mge.Tensor([1.0, 2.0])).numpy().tolist()
        [1.0, 2.0]
    """

    def __init__(self, drop_prob=0.0, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= drop_prob < 1:
            raise ValueError(f"Dropout: drop_prob must be in [0, 1), got {drop_prob}")
        self.drop_prob = drop_prob

    def forward(self, inputs):
        if self.training and self.drop_prob > 0:
            return F.dropout(inputs, self.drop_prob, training=True)
        return inputs

    def _module_info_string(self):
        return f"drop_prob={self.drop_prob}"
