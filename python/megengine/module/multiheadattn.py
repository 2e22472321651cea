"""``MultiHeadAttention``: its parameters, and :func:`~.functional.nn.multi_head_attention`."""

import numpy as np

from .. import functional as F
from ..tensor import Parameter, Tensor
from . import init
from .module import Module

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(Module):
    """Multi-head scaled dot-product attention (Attention Is All You Need) over batch-first
    inputs: query (N, L, embed_dim), key (N, S, kdim), value (N, S, vdim).

    The four projections live in one Parameter ``io_weight_bias`` of shape (1, n), as in
    MegEngine: the weights of q, k, v and out ((embed_dim, embed_dim), (embed_dim, kdim),
    (embed_dim, vdim), (embed_dim, embed_dim), each row-major as a Linear weight), then, with
    ``bias``, the four biases of embed_dim elements. It starts from Xavier-uniform values
    (fan_in n, fan_out 1) with zero biases, as MegEngine's.

    Args:
        embed_dim: features of the query and of the output; divisible by num_heads.
        num_heads: parallel attention heads, each of embed_dim // num_heads features.
        attn_dropout: dropout probability on the attention weights, when training.
        out_dropout: dropout probability on the output, when training.
        bias: whether the projections add biases.
        add_bias_kv: not supported (MegEngine does not support it either); must be False.
        add_zero_attn: append a zero step to the projected keys and values.
        kdim: features of the key (embed_dim when None).
        vdim: features of the value (embed_dim when None).
        reslink: add the query to the output (shapes must agree); keyword-only, a NeoMeg
            extension.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.MultiHeadAttention(4, 2)
        >>> x = mge.Tensor(np.ones((2, 3, 4), dtype=np.float32))
        >>> out, weights = m(x, x, x, need_weights=True)
        >>> out.shape, weights.shape
        ((2, 3, 4), (4, 3, 3))
    """

    def __init__(
        self,
        embed_dim,
        num_heads,
        attn_dropout=0.0,
        out_dropout=0.0,
        bias=True,
        add_bias_kv=False,
        add_zero_attn=False,
        kdim=None,
        vdim=None,
        *,
        reslink=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if num_heads < 1 or embed_dim % num_heads != 0:
            raise ValueError(
                f"MultiHeadAttention: embed_dim={embed_dim} is not divisible by "
                f"num_heads={num_heads}"
            )
        if add_bias_kv:
            raise ValueError("MultiHeadAttention: add_bias_kv is not supported")
        for name, p in (("attn_dropout", attn_dropout), ("out_dropout", out_dropout)):
            if not 0 <= p < 1:
                raise ValueError(f"MultiHeadAttention: {name} must be in [0, 1), got {p}")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.attn_dropout = attn_dropout
        self.out_dropout = out_dropout
        self.bias = bias
        self.add_bias_kv = add_bias_kv
        self.add_zero_attn = add_zero_attn
        self.reslink = reslink
        e = embed_dim
        self._weight_len = (e + self.kdim + self.vdim + e) * e
        self.weight_bias_len = self._weight_len + (4 * e if bias else 0)
        self.io_weight_bias = Parameter(np.zeros((1, self.weight_bias_len), dtype=np.float32))
        self.bias_k = None
        self.bias_v = None
        self.reset_parameters()

    def reset_parameters(self):
        """Redraws io_weight_bias Xavier-uniform and zeros its bias part."""
        init.xavier_uniform_(self.io_weight_bias)
        if self.bias:
            values = self.io_weight_bias.numpy().copy()
            values[0, self._weight_len :] = 0
            self.io_weight_bias._reset(Tensor(values))

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        attn_mask=None,
        need_weights=False,
        average_attn_weights=False,
        is_causal=False,
        maybe_cudnn_style_mask=False,
    ):
        """Attention of query over key/value.

        Args:
            query: (N, L, embed_dim).
            key: (N, S, kdim).
            value: (N, S, vdim).
            key_padding_mask: (N, S); bool True marks keys to ignore, float is added to the
                scores.
            attn_mask: (L, S) or (N * num_heads, L, S); bool True marks pairs to ignore, float
                is added to the scores.
            need_weights: also return the attention weights.
            average_attn_weights: average the returned weights over heads ((N, L, S) instead
                of (N * num_heads, L, S)).
            is_causal: with no attn_mask, mask every key after the query's position.
            maybe_cudnn_style_mask: cuDNN-style (2, L)/(2, N) masks are not supported; must
                be False.

        Returns:
            (output (N, L, embed_dim), weights or None).
        """
        dims = ((query, self.embed_dim), (key, self.kdim), (value, self.vdim))
        if any(t.ndim != 3 or t.shape[2] != d for t, d in dims):
            raise ValueError(
                f"MultiHeadAttention: query {tuple(query.shape)}, key {tuple(key.shape)} and "
                f"value {tuple(value.shape)} must be (N, L, {self.embed_dim}), "
                f"(N, S, {self.kdim}), (N, S, {self.vdim})"
            )
        out, weights = F.nn.multi_head_attention(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.attn_dropout,
            self.out_dropout,
            self.io_weight_bias,
            qbias=self.bias,
            kbias=self.bias,
            vbias=self.bias,
            obias=self.bias,
            add_zero_attn=self.add_zero_attn,
            key_padding_mask=key_padding_mask,
            attn_mask=attn_mask,
            need_weights=need_weights,
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
            maybe_cudnn_style_mask=maybe_cudnn_style_mask,
            reslink=self.reslink,
            training=self.training,
        )
        return out, weights

    def _module_info_string(self):
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
            f"attn_dropout={self.attn_dropout}, out_dropout={self.out_dropout}, "
            f"bias={self.bias}, kdim={self.kdim}, vdim={self.vdim}"
        )
