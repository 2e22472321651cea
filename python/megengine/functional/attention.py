"""``F.nn.multi_head_attention``: scaled dot-product attention over heads, with the q, k, v
and output projections packed in one ``io_weight_bias`` tensor in MegEngine's layout, computed
from linear maps, batched matrix products and a softmax (MegEngine 1.13 has only a cuDNN
kernel for it; this runs everywhere)."""

import math

import numpy as np

from ..core._imperative_rt import MegEngineError
from ..core.tensor.array_method import Tensor, as_tensor
from .math import matmul
from .tensor import concat, zeros

__all__ = ["multi_head_attention"]


def _unpack(io_weight_bias, embed_dim, k_size, v_size, bias):
    """(weight, bias) of the q, k, v and out projections: the four weights (embed_dim rows,
    each row-major as a Linear weight), then with ``bias`` the four biases."""
    flat, e = io_weight_bias.reshape(-1), embed_dim
    need = (2 * e + k_size + v_size) * e + (4 * e if bias else 0)
    if flat.shape[0] != need:
        raise MegEngineError(
            f"multi_head_attention: io_weight_bias has {flat.shape[0]} values; embed_dim {e}, "
            f"key size {k_size}, value size {v_size} and bias={bias} need {need}"
        )
    out, pos = [], 0
    for n_in in (e, k_size, v_size, e):
        out.append([flat[pos : pos + e * n_in].reshape(e, n_in), None])
        pos += e * n_in
    if bias:
        for item in out:
            item[1] = flat[pos : pos + e]
            pos += e
    return out


def _additive(mask, pad, dtype):
    """A bool mask (True = ignore) as 0 / -inf, a float mask as it is; ``pad`` zero columns
    appended on the last axis (for add_zero_attn)."""
    m = mask.numpy() if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype == bool:
        m = np.where(m, -np.inf, 0.0).astype(np.float32)
    if pad:
        m = np.concatenate([m, np.zeros(m.shape[:-1] + (pad,), m.dtype)], axis=-1)
    return Tensor(m.astype(np.float32)).astype(dtype)


def _masked(scores, attn_mask, key_padding_mask, is_causal, heads, n, tgt, src, pad):
    if attn_mask is None and is_causal:
        attn_mask = Tensor(np.triu(np.ones((tgt, src - pad), dtype=bool), k=1))
    if attn_mask is not None:
        mask = _additive(attn_mask, pad, scores.dtype)
        if mask.ndim == 2:
            mask = mask.reshape(1, tgt, src)
        scores = scores + mask
    if key_padding_mask is not None:
        kpm = _additive(key_padding_mask, pad, scores.dtype)
        if tuple(kpm.shape) != (n, src):
            raise MegEngineError(
                f"multi_head_attention: key_padding_mask must be (N, S) = ({n}, {src - pad}), "
                f"got {tuple(kpm.shape[:-1]) + (kpm.shape[-1] - pad,)}"
            )
        scores = scores.reshape(n, heads, tgt, src) + kpm.reshape(n, 1, 1, src)
        scores = scores.reshape(n * heads, tgt, src)
    return scores


def multi_head_attention(
    query,
    key,
    value,
    embed_dim,
    num_heads,
    attn_drop,
    out_drop,
    io_weight_bias,
    qproj_size=None,
    kproj_size=None,
    vproj_size=None,
    oproj_size=None,
    qbias=False,
    kbias=False,
    vbias=False,
    obias=False,
    bias_k=None,
    bias_v=None,
    add_zero_attn=False,
    key_padding_mask=None,
    attn_mask=None,
    need_weights=False,
    average_attn_weights=False,
    is_causal=False,
    maybe_cudnn_style_mask=False,
    reslink=False,
    training=True,
):
    """Multi-head attention of batch-first query (N, L, embed_dim) over key (N, S, kdim) and
    value (N, S, vdim), as :class:`~.module.MultiHeadAttention` computes it.

    Args:
        query: (N, L, embed_dim).
        key: (N, S, kdim).
        value: (N, S, vdim).
        embed_dim: features of the query and of the output; divisible by num_heads.
        num_heads: parallel heads, each of embed_dim // num_heads features.
        attn_drop: dropout probability on the attention weights, when training.
        out_drop: dropout probability on the output, when training.
        io_weight_bias: the packed projections: the q, k, v and out weights ((embed_dim,
            embed_dim), (embed_dim, kdim), (embed_dim, vdim), (embed_dim, embed_dim), each
            row-major), then the four biases of embed_dim values when the biases are on.
        qproj_size: size of the query projection; embed_dim (or None) only.
        kproj_size: size of the key projection; embed_dim (or None) only.
        vproj_size: size of the value projection; embed_dim (or None) only.
        oproj_size: size of the output projection; embed_dim (or None) only.
        qbias: whether the query projection has a bias; the four flags must agree.
        kbias: whether the key projection has a bias.
        vbias: whether the value projection has a bias.
        obias: whether the output projection has a bias.
        bias_k: not supported (MegEngine's kernel refuses it too); must be None.
        bias_v: not supported; must be None.
        add_zero_attn: append a zero step to the projected keys and values.
        key_padding_mask: (N, S); bool True marks keys to ignore, float is added to scores.
        attn_mask: (L, S) or (N * num_heads, L, S); bool True marks pairs to ignore, float is
            added to the scores.
        need_weights: also return the attention weights.
        average_attn_weights: average the returned weights over heads ((N, L, S)).
        is_causal: with no attn_mask, mask every key after the query's position.
        maybe_cudnn_style_mask: cuDNN-style masks are not supported; must be False.
        reslink: add the query to the output.
        training: whether the dropouts drop.

    Returns:
        (output (N, L, embed_dim), the weights or None).

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.ones((2, 3, 4), "float32")
        >>> w = np.full((1, 4 * 4 * 4), 0.1, "float32")
        >>> out, weights = F.nn.multi_head_attention(x, x, x, 4, 2, 0.0, 0.0, w, need_weights=True)
        >>> out.shape, weights.shape
        ((2, 3, 4), (4, 3, 3))
    """
    # nn holds linear, softmax and dropout and re-exports this module: import them late
    from .nn import dropout, linear, softmax

    fname = "multi_head_attention"
    for name, size in (
        ("qproj_size", qproj_size),
        ("kproj_size", kproj_size),
        ("vproj_size", vproj_size),
        ("oproj_size", oproj_size),
    ):
        if size is not None and size != embed_dim:
            raise MegEngineError(
                f"{fname}: {name}={size} is not supported, only embed_dim ({embed_dim})"
            )
    if not qbias == kbias == vbias == obias:
        raise MegEngineError(f"{fname}: the four projection bias flags must agree")
    if bias_k is not None or bias_v is not None:
        raise MegEngineError(f"{fname}: bias_k and bias_v are not supported")
    if maybe_cudnn_style_mask:
        raise MegEngineError(f"{fname}: cudnn-style masks are not supported")
    if num_heads < 1 or embed_dim % num_heads:
        raise MegEngineError(
            f"{fname}: embed_dim={embed_dim} is not divisible by num_heads={num_heads}"
        )
    query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
    n, tgt, src = query.shape[0], query.shape[1], key.shape[1]
    if (
        any(t.ndim != 3 or t.shape[0] != n for t in (query, key, value))
        or query.shape[2] != embed_dim
        or value.shape[1] != src
    ):
        raise MegEngineError(
            f"{fname}: query {tuple(query.shape)}, key {tuple(key.shape)} and value "
            f"{tuple(value.shape)} must be (N, L, {embed_dim}), (N, S, kdim), (N, S, vdim)"
        )
    head_dim = embed_dim // num_heads
    (wq, bq), (wk, bk), (wv, bv), (wo, bo) = _unpack(
        as_tensor(io_weight_bias), embed_dim, key.shape[2], value.shape[2], qbias
    )

    def heads(x):  # (N, T, E) -> (N * heads, T, head_dim)
        t = x.shape[1]
        x = x.reshape(n, t, num_heads, head_dim).transpose(0, 2, 1, 3)
        return x.reshape(n * num_heads, t, head_dim)

    q = heads(linear(query, wq, bq)) * (1.0 / math.sqrt(head_dim))
    k = heads(linear(key, wk, bk))
    v = heads(linear(value, wv, bv))
    pad = 0
    if add_zero_attn:
        zero = zeros((k.shape[0], 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = concat([k, zero], axis=1), concat([v, zero], axis=1)
        src, pad = src + 1, 1
    scores = matmul(q, k, transpose_b=True)  # (N * heads, L, S)
    scores = _masked(scores, attn_mask, key_padding_mask, is_causal, num_heads, n, tgt, src, pad)
    weights = softmax(scores, axis=-1)
    if training and attn_drop > 0:
        weights = dropout(weights, attn_drop, training=True)
    out = matmul(weights, v)  # (N * heads, L, head_dim)
    out = out.reshape(n, num_heads, tgt, head_dim).transpose(0, 2, 1, 3)
    out = linear(out.reshape(n, tgt, embed_dim), wo, bo)
    if training and out_drop > 0:
        out = dropout(out, out_drop, training=True)
    if reslink:
        out = out + query
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = weights.reshape(n, num_heads, tgt, src).mean(axis=1)
    return out, weights
