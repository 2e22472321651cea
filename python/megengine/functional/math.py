"""Reductions and matrix products (``F.sum``, ``F.matmul``, ...): Reduce, Argmax/Argmin and
MatrixMul/BatchedMatrixMul of the kernel library."""

from ..core import _imperative_rt as _rt
from ..core.ops import builtin
from ..core.tensor.array_method import as_tensor, cached_op, reduce, reshape

__all__ = ["argmax", "argmin", "matmul", "max", "mean", "min", "prod", "sum"]


def sum(inp, axis=None, keepdims=False):
    """Sum of the elements over ``axis``.

    Args:
        inp: input tensor.
        axis: an int, a sequence of ints, or None for all axes.
        keepdims: keep reduced axes with size 1.

    Returns:
        the reduced Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.sum([[1.0, 2.0], [3.0, 4.0]], axis=1).numpy().tolist()
        [3.0, 7.0]
    """
    return reduce(inp, "sum", axis, keepdims)


def mean(inp, axis=None, keepdims=False):
    """Mean of the elements over ``axis`` (integer inputs give float32).

    Args:
        inp: input tensor.
        axis: an int, a sequence of ints, or None for all axes.
        keepdims: keep reduced axes with size 1.

    Returns:
        the reduced Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.mean([[1, 2], [3, 4]]).numpy().tolist()
        2.5
    """
    return as_tensor(inp).mean(axis, keepdims)


def max(inp, axis=None, keepdims=False):
    """Maximum over ``axis``.

    Args:
        inp: input tensor.
        axis: an int, a sequence of ints, or None for all axes.
        keepdims: keep reduced axes with size 1.

    Returns:
        the reduced Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.max([[1.0, 5.0], [3.0, 4.0]], axis=0).numpy().tolist()
        [3.0, 5.0]
    """
    return reduce(inp, "max", axis, keepdims)


def min(inp, axis=None, keepdims=False):
    """Minimum over ``axis``.

    Args:
        inp: input tensor.
        axis: an int, a sequence of ints, or None for all axes.
        keepdims: keep reduced axes with size 1.

    Returns:
        the reduced Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.min([[1.0, 5.0], [3.0, 4.0]], axis=0).numpy().tolist()
        [1.0, 4.0]
    """
    return reduce(inp, "min", axis, keepdims)


def prod(inp, axis=None, keepdims=False):
    """Product over ``axis``.

    Args:
        inp: input tensor.
        axis: an int, a sequence of ints, or None for all axes.
        keepdims: keep reduced axes with size 1.

    Returns:
        the reduced Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.prod([1.0, 2.0, 3.0, 4.0]).numpy().tolist()
        24.0
    """
    return reduce(inp, "product", axis, keepdims)


def _arg_reduce(op_cls, inp, axis, keepdims):
    x = as_tensor(inp)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    out = _rt.apply(cached_op(op_cls, axis=axis), x)[0]
    if not keepdims:
        ax = axis + x.ndim if axis < 0 else axis
        out = _rt.apply(cached_op(builtin.RemoveAxis, axis=(ax,)), out)[0]
    return out


def argmax(inp, axis=None, keepdims=False):
    """Index of the maximum along ``axis`` (of the flattened input when None).

    Args:
        inp: input tensor.
        axis: an int, or None.
        keepdims: keep the reduced axis with size 1.

    Returns:
        an int32 Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.argmax([[1.0, 5.0], [7.0, 4.0]], axis=1).numpy().tolist()
        [1, 0]
    """
    return _arg_reduce(builtin.Argmax, inp, axis, keepdims)


def argmin(inp, axis=None, keepdims=False):
    """Index of the minimum along ``axis`` (of the flattened input when None).

    Args:
        inp: input tensor.
        axis: an int, or None.
        keepdims: keep the reduced axis with size 1.

    Returns:
        an int32 Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.argmin([[1.0, 5.0], [7.0, 4.0]]).numpy().tolist()
        0
    """
    return _arg_reduce(builtin.Argmin, inp, axis, keepdims)


def matmul(inp1, inp2, transpose_a=False, transpose_b=False):
    """Matrix product of 2-D tensors, or batched over the leading dim of 3-D tensors.

    Args:
        inp1: first matrix (or batch of matrices).
        inp2: second matrix (or batch of matrices).
        transpose_a: use the transpose of inp1.
        transpose_b: use the transpose of inp2.

    Returns:
        the product Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.matmul([[1.0, 2.0], [3.0, 4.0]], [[1.0], [1.0]]).numpy().tolist()
        [[3.0], [7.0]]
    """
    a, b = as_tensor(inp1), as_tensor(inp2)
    if a.ndim != b.ndim or a.ndim not in (2, 3):
        raise ValueError(
            f"matmul: expects two 2-D or two 3-D tensors, got shapes {a.shape} and {b.shape}"
        )
    cls = builtin.MatrixMul if a.ndim == 2 else builtin.BatchedMatrixMul
    op = cached_op(cls, transposeA=bool(transpose_a), transposeB=bool(transpose_b))
    return _rt.apply(op, a, b)[0]
