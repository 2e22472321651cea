"""``Embedding``: a lookup table of vectors."""

import numpy as np

from .. import functional as F
from ..tensor import Parameter, Tensor
from . import init
from .module import Module

__all__ = ["Embedding"]


class Embedding(Module):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim``, looked up by integer
    index; the weight starts from N(0, 1), as MegEngine's.

    Args:
        num_embeddings: number of rows of the table.
        embedding_dim: size of each vector.
        padding_idx: not supported, as in MegEngine; must be None.
        max_norm: not supported, as in MegEngine; must be None.
        norm_type: not supported, as in MegEngine; must be None.
        initial_weight: a (num_embeddings, embedding_dim) Parameter to use as the table.
        freeze: keep the table fixed: lookups are detached, so it gets no gradient.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> table = mge.Parameter(np.array([[0.0, 1.0], [2.0, 3.0]], dtype=np.float32))
        >>> m = M.Embedding(2, 2, initial_weight=table)
        >>> m(mge.Tensor([[1, 0]], dtype="int32")).numpy().tolist()
        [[[2.0, 3.0], [0.0, 1.0]]]
    """

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        padding_idx=None,
        max_norm=None,
        norm_type=None,
        initial_weight=None,
        freeze=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if padding_idx is not None:
            raise ValueError("Embedding: padding_idx is not supported")
        if max_norm is not None or norm_type is not None:
            raise ValueError("Embedding: max_norm and norm_type are not supported")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.freeze = freeze
        if initial_weight is None:
            self.weight = Parameter(np.zeros((num_embeddings, embedding_dim), dtype=np.float32))
            self.reset_parameters()
        else:
            if tuple(initial_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(
                    f"Embedding: initial_weight has shape {tuple(initial_weight.shape)}, "
                    f"expected {(num_embeddings, embedding_dim)}"
                )
            if not isinstance(initial_weight, Parameter):
                initial_weight = Parameter(np.asarray(initial_weight))
            self.weight = initial_weight

    def reset_parameters(self):
        """Redraws the table from N(0, 1)."""
        init.normal_(self.weight)

    def forward(self, inputs):
        weight = self.weight.detach() if self.freeze else self.weight
        return F.embedding(inputs, weight)

    @classmethod
    def from_pretrained(
        cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=None
    ):
        """An Embedding whose table is ``embeddings``.

        Args:
            embeddings: a 2-D Parameter, Tensor or array (num_embeddings, embedding_dim).
            freeze: as the constructor's.
            padding_idx: must be None.
            max_norm: must be None.
            norm_type: must be None.

        Returns:
            the Embedding.
        """
        arr = embeddings.numpy() if isinstance(embeddings, Tensor) else np.asarray(embeddings)
        if arr.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: expects a 2-D table, got {arr.shape}")
        weight = embeddings if isinstance(embeddings, Parameter) else Parameter(arr)
        return cls(
            arr.shape[0],
            arr.shape[1],
            padding_idx=padding_idx,
            max_norm=max_norm,
            norm_type=norm_type,
            initial_weight=weight,
            freeze=freeze,
        )

    def _module_info_string(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"
