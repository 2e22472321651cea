"""Reductions, sorting, products and linear algebra (``F.sum``, ``F.sort``, ``F.matmul``,
``F.matinv``, ``F.svd``, ``F.norm``, ...): Reduce, Argmax/Argmin, Argsort, TopK, Dot,
MatrixMul/BatchedMatrixMul, MatrixInverse and SVD of the kernel library, and compositions of them
with Elemwise and the view ops.
"""

import builtins as _builtins
import math as _math
import numbers as _numbers

from ..core import _imperative_rt as _rt
from ..core._imperative_rt import MegEngineError, MegEngineTypeError
from ..core.ops import builtin
from ..core.tensor import amp as _amp
from ..core.tensor import array_method as _array_method
from ..core.tensor.array_method import (
    Tensor,
    _promote,
    as_tensor,
    cached_op,
    elemwise,
    reduce,
    reshape,
)
from .elemwise import isinf, isnan, sign
from .tensor import _stack

__all__ = [
    "argmax",
    "argmin",
    "argsort",
    "cross",
    "dot",
    "isinf",
    "isnan",
    "matinv",
    "matmul",
    "max",
    "mean",
    "min",
    "norm",
    "normalize",
    "prod",
    "sign",
    "sort",
    "std",
    "sum",
    "svd",
    "topk",
    "var",
]


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
    x = inp if isinstance(inp, Tensor) else as_tensor(inp)
    if x._dtype_name == "bool":  # MegEngine takes masks (first True / first False); the kernel
        x = x.astype("int8")  # has no bool path, and int8 orders them alike
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    if isinstance(axis, (list, tuple)):
        # MegEngine's rule for several axes: one arg-reduction per axis, the highest first,
        # each on the indices the previous one returned.
        axes = {a + x.ndim if a < 0 else a for a in axis}
        if len(axes) != len(axis):
            raise AssertionError(f"axis {axis} contains duplicated indices")
        for a in sorted(axes, reverse=True):
            x = _arg_reduce(op_cls, x, a, keepdims)
        return x
    out = _rt.apply(cached_op(op_cls, axis), x)[0]
    if not keepdims:
        ax = axis + x.ndim if axis < 0 else axis
        out = _rt.apply(cached_op(builtin.RemoveAxis, (ax,)), out)[0]
    return out


def argmax(inp, axis=None, keepdims=False):
    """Index of the maximum along ``axis`` (of the flattened input when None).

    Args:
        inp: input tensor.
        axis: an int, None, or a sequence of ints: then one argmax per axis, the highest
            axis first, each over the indices the previous one gave (MegEngine's rule).
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
        axis: an int, None, or a sequence of ints (as for :func:`argmax`).
        keepdims: keep the reduced axis with size 1.

    Returns:
        an int32 Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.argmin([[1.0, 5.0], [7.0, 4.0]]).numpy().tolist()
        0
    """
    return _arg_reduce(builtin.Argmin, inp, axis, keepdims)


_MATMUL_COMPUTE_MODES = {"default": "DEFAULT", "float32": "FLOAT32"}
# (ndim, transpose_a, transpose_b, compute_mode, format) as given -> MatrixMul (ndim 2) or
# BatchedMatrixMul (ndim 3): matmul's fast path finds its op with one lookup.
_matmul_ops = {}


def _matmul_op(ndim, transpose_a, transpose_b, compute_mode, format):
    key = (ndim, transpose_a, transpose_b, compute_mode, format)
    op = _matmul_ops.get(key)
    if op is None:
        if format != "default":
            raise MegEngineError(f"matmul: format must be 'default', got {format!r}")
        mode = None
        if isinstance(compute_mode, str):
            mode = _MATMUL_COMPUTE_MODES.get(compute_mode.lower())
        if mode is None:
            raise MegEngineError(
                f"matmul: compute_mode must be 'default' or 'float32', got {compute_mode!r}"
            )
        cls = builtin.MatrixMul if ndim == 2 else builtin.BatchedMatrixMul
        op = cls(transposeA=bool(transpose_a), transposeB=bool(transpose_b), compute_mode=mode)
        _matmul_ops[key] = op
    return op


_MATMUL_2D = _matmul_op(2, False, False, "default", "default")


def matmul(
    inp1, inp2, transpose_a=False, transpose_b=False, compute_mode="default", *, format="default"
):
    """Matrix product of two tensors, with numpy.matmul's rules for vectors and batches.

    * Both 1-D: the inner product (a 0-d Tensor), as :func:`dot`.
    * Both 2-D: the matrix product.
    * A 1-D operand is a matrix with one row (first operand) or one column (second operand),
      and that added axis is removed from the result.
    * More than 2-D: batches of matrices in the last two axes; the batch axes broadcast against
      each other (an operand with fewer axes is repeated over the missing leading ones), e.g.
      ``(n, k, m) @ (m, p) -> (n, k, p)`` and ``(j, 1, k, m) @ (n, m, p) -> (j, n, k, p)``.

    Args:
        inp1: first operand (at least 1-D).
        inp2: second operand (at least 1-D).
        transpose_a: use the transpose of the matrices of inp1 (no effect on a 1-D inp1).
        transpose_b: use the transpose of the matrices of inp2 (no effect on a 1-D inp2).
        compute_mode: ``"default"``, or ``"float32"`` to ask float16/bfloat16 products to
            accumulate in float32 (the reference kernels always do).
        format: the matrix layout; only ``"default"`` is supported.

    Returns:
        the product Tensor.

    Raises:
        ValueError: the shapes do not multiply (the message names both), or a bad
            ``compute_mode``/``format``.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> F.matmul([[1.0, 2.0], [3.0, 4.0]], [[1.0], [1.0]]).numpy().tolist()
        [[3.0], [7.0]]
        >>> F.matmul([1.0, 2.0], [[1.0, 2.0], [3.0, 4.0]]).numpy().tolist()
        [7.0, 10.0]
        >>> F.matmul(np.ones((5, 2, 3, 4), "float32"), np.ones((2, 4, 6), "float32")).shape
        (5, 2, 3, 6)
    """
    # Tensors pass without a call: at 8x8 matmul's Python frame costs as much as its kernel.
    a = inp1 if isinstance(inp1, Tensor) else as_tensor(inp1)
    b = inp2 if isinstance(inp2, Tensor) else as_tensor(inp2)
    if _amp._enabled:
        a, b = _amp.cast_tensors(a, b)
        compute_mode = "float32"
    nd = a.ndim
    # Two matrices, or two batches of equal size: one kernel call (the eager hot path).
    if nd == b.ndim and (nd == 2 or (nd == 3 and a.shape[0] == b.shape[0])):
        if nd == 2 and not (transpose_a or transpose_b) and compute_mode == "default" == format:
            op = _MATMUL_2D
        else:
            op = _matmul_ops.get((nd, transpose_a, transpose_b, compute_mode, format))
            if op is None:
                op = _matmul_op(nd, transpose_a, transpose_b, compute_mode, format)
        try:
            return _rt.apply(op, a, b)[0]
        except ValueError as e:
            raise MegEngineError(
                f"matmul: shapes {a.shape} and {b.shape} do not multiply: {e}"
            ) from None
    return _matmul_general(a, b, bool(transpose_a), bool(transpose_b), compute_mode, format)


_array_method.set_matmul(matmul)


def _matmul_general(a, b, ta, tb, compute_mode, format):
    """matmul for vectors and broadcast batches, from Dot, MatrixMul, BatchedMatrixMul and the
    Reshape/Broadcast views (all differentiable)."""
    sa, sb = a.shape, b.shape

    def fail(why):
        return MegEngineError(f"matmul: {why}, got shapes {sa} and {sb}")

    _matmul_op(2, ta, tb, compute_mode, format)  # validates compute_mode and format
    if a.ndim == 0 or b.ndim == 0:
        raise fail("inputs must be at least 1-D")
    if a.ndim == 1 and b.ndim == 1:
        if sa != sb:
            raise fail("vector lengths differ")
        return _rt.apply(cached_op(builtin.Dot), a, b)[0]
    # A vector is a one-row (left) or one-column (right) matrix; it has no transpose.
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if a_vec:
        a, ta = reshape(a, (1, sa[0])), False
    if b_vec:
        b, tb = reshape(b, (sb[0], 1)), False
    m, k = a.shape[-2:][::-1] if ta else a.shape[-2:]
    k2, n = b.shape[-2:][::-1] if tb else b.shape[-2:]
    if k != k2:
        raise fail(f"inner dims differ ({k} and {k2})")
    batch = _broadcast_batch(a.shape[:-2], b.shape[:-2])
    if batch is None:
        raise fail("batch dims do not broadcast")
    out_shape = batch + ((m,) if not a_vec else ()) + ((n,) if not b_vec else ())
    if not batch:
        c = _rt.apply(_matmul_op(2, ta, tb, compute_mode, format), a, b)[0]
    elif b.ndim == 2 and not ta:
        # (..., M, K) @ (K, N) is one (... * M, K) @ (K, N) product.
        rows = _math.prod(a.shape[:-1])
        op = _matmul_op(2, False, tb, compute_mode, format)
        c = _rt.apply(op, reshape(a, (rows, a.shape[-1])), b)[0]
    else:
        nb = _math.prod(batch)
        a3 = reshape(_broadcast(a, batch + a.shape[-2:]), (nb,) + a.shape[-2:])
        b3 = reshape(_broadcast(b, batch + b.shape[-2:]), (nb,) + b.shape[-2:])
        c = _rt.apply(_matmul_op(3, ta, tb, compute_mode, format), a3, b3)[0]
    return c if c.shape == out_shape else reshape(c, out_shape)


def _broadcast_batch(x, y):
    """numpy's broadcast of two batch shapes, or None when they do not broadcast."""
    if len(x) < len(y):
        x, y = y, x
    y = (1,) * (len(x) - len(y)) + y
    out = []
    for p, q in zip(x, y):
        if p != q and p != 1 and q != 1:
            return None
        out.append(q if p == 1 else p)
    return tuple(out)


def _broadcast(x, shape):
    return x if x.shape == shape else _rt.apply(cached_op(builtin.Broadcast, shape=shape), x)[0]


def matinv(inp):
    """Inverse of a square matrix, or of each matrix of a batch ``(..., n, n)``.

    Computed by Gauss-Jordan elimination with partial pivoting (in double precision). An exactly
    singular matrix (a zero pivot) raises ValueError; a nearly singular one gives large,
    inaccurate values, as ``numpy.linalg.inv`` does; NaN in a matrix gives NaN. Differentiable:
    the gradient of ``Y = inv(X)`` is ``-Y^T @ dY @ Y^T``.

    Args:
        inp: a float tensor ``(..., n, n)`` (integers are converted to float32).

    Returns:
        the Tensor of inverses, with inp's shape and dtype.

    Raises:
        ValueError: inp is not a (batch of) square matrices, or a matrix is singular.

    Examples:
        >>> import megengine.functional as F
        >>> F.matinv([[1.0, 0.0], [1.0, 1.0]]).numpy().tolist()
        [[1.0, 0.0], [-1.0, 1.0]]
        >>> F.matinv([[[2.0]], [[4.0]]]).numpy().tolist()
        [[[0.5]], [[0.25]]]
    """
    return _rt.apply(cached_op(builtin.MatrixInverse), _float(as_tensor(inp)))[0]


def svd(inp, full_matrices=False, compute_uv=True):
    """Singular value decomposition ``inp = U @ diag(S) @ Vh`` of a matrix, or of each matrix of
    a batch ``(..., M, N)``.

    ``S`` holds the ``K = min(M, N)`` singular values in descending order; the columns of ``U``
    and the rows of ``Vh`` are orthonormal (the sign of each pair of singular vectors is
    unspecified, as in numpy). Computed in double precision by Eigen's Jacobi SVD.

    All three factors are differentiable (the real case of Townsend's formulas). As in every
    framework, the gradient through ``U`` and ``Vh`` is infinite where singular values repeat
    (the singular vectors are not unique there), and a backward pass through the completed
    factors of ``full_matrices=True`` on a non-square matrix raises NotImplementedError.

    Args:
        inp: a float tensor ``(..., M, N)`` (integers are converted to float32).
        full_matrices: give ``U`` as ``(..., M, M)`` and ``Vh`` as ``(..., N, N)`` instead of
            ``(..., M, K)`` and ``(..., K, N)``.
        compute_uv: compute ``U`` and ``Vh``; when False only ``S`` is returned.

    Returns:
        the tuple ``(U, S, Vh)`` when ``compute_uv``, else ``S`` (shape ``(..., K)``).

    Examples:
        >>> import megengine.functional as F
        >>> x = F.reshape(F.arange(6, dtype="float32"), (2, 3))
        >>> U, S, Vh = F.svd(x)
        >>> U.shape, S.shape, Vh.shape
        ((2, 2), (2,), (2, 3))
        >>> [round(float(v), 3) for v in S.numpy()]
        [7.348, 1.0]
        >>> bool(abs(F.matmul(U * S, Vh) - x).max() < 1e-5)
        True
        >>> S = F.svd([[3.0, 0.0], [4.0, 5.0]], compute_uv=False)
        >>> [round(float(v), 4) for v in S.numpy()]
        [6.7082, 2.2361]
    """
    op = cached_op(builtin.SVD, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    outs = _rt.apply(op, _float(as_tensor(inp)))
    return tuple(outs) if compute_uv else outs[0]


def _float(x):
    return x if x._dtype_name.startswith(("float", "bfloat")) else x.astype("float32")


def var(inp, axis=None, keepdims=False):
    """Variance (the mean of squared deviations from the mean) over ``axis``.

    Args:
        inp: input tensor (integer inputs give float32).
        axis: an int, a sequence of ints, or None for all axes.
        keepdims: keep reduced axes with size 1.

    Returns:
        the reduced Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.var([[1.0, 3.0], [2.0, 6.0]], axis=1).numpy().tolist()
        [1.0, 4.0]
    """
    if isinstance(inp, Tensor) and inp._dtype_name == "float32" and not _rt._is_tracing():
        out = _var_float32(inp, axis, keepdims)
        if out is not None:
            return out
    x = _float(as_tensor(inp))
    d = x - reduce(x, "mean", axis, keepdims=True)
    return reduce(d * d, "mean", axis, keepdims)


def _var_float32(x, axis, keepdims):
    """var of a float32 Tensor over one axis or every axis: the general path's values from its
    ops applied directly, and for every axis of two or more dims the input flattened once
    (six ops, where reducing every axis twice with reduce() is eight). None for other axes."""
    ndim = x.ndim
    if type(axis) is int and ndim:
        a = axis + ndim if axis < 0 else axis
        if not 0 <= a < ndim:
            return None  # the general path raises
        mean = cached_op(builtin.Reduce, "MEAN", a)
        d = x - _rt.apply(mean, x)[0]
        out = _rt.apply(mean, d * d)[0]
        return out if keepdims else _rt.apply(cached_op(builtin.RemoveAxis, (a,)), out)[0]
    if axis is None and ndim > 1 and getattr(x, "format", "default") == "default":
        # The general path's two means of every axis each reshape to (size,) and back; the
        # deviations of the flat elements are the same values.
        mean = cached_op(builtin.Reduce, "MEAN", 0)
        flat = _rt.apply(cached_op(builtin.Reshape, (x.size,)), x)[0]
        d = flat - _rt.apply(mean, flat)[0]
        out = _rt.apply(mean, d * d)[0]
        return _rt.apply(cached_op(builtin.Reshape, (1,) * ndim if keepdims else ()), out)[0]
    return None


def std(inp, axis=None, keepdims=False):
    """Standard deviation (the square root of :func:`var`) over ``axis``.

    Args:
        inp: input tensor (integer inputs give float32).
        axis: an int, a sequence of ints, or None for all axes.
        keepdims: keep reduced axes with size 1.

    Returns:
        the reduced Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.std([1.0, 3.0, 1.0, 3.0]).numpy().tolist()
        1.0
    """
    return _rt.elemwise(_SQRT, var(inp, axis, keepdims))


_SQRT = _array_method.elemwise_op("SQRT")


def norm(inp, ord=None, axis=None, keepdims=False):
    """Vector p-norm ``sum(abs(x) ** ord) ** (1 / ord)`` over ``axis``.

    Args:
        inp: input tensor.
        ord: the order p; 2 when None; 0 counts the nonzero elements (an int32 result),
            ``inf``/``-inf`` give the largest/smallest absolute value.
        axis: the axis holding the vectors; the flattened input is one vector when None.
        keepdims: keep the reduced axis with size 1.

    Returns:
        the reduced Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.norm([3.0, -4.0]).numpy().tolist()
        5.0
        >>> F.norm([[3.0, -4.0], [1.0, 1.0]], ord=1, axis=1).numpy().tolist()
        [7.0, 2.0]
    """
    x = _float(as_tensor(inp))
    if axis is None:
        shape = x.shape
        x = reshape(x, (-1,))
        out = norm(x, ord, 0, keepdims)
        return reshape(out, (1,) * len(shape)) if keepdims else out
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"norm: axis must be an int or None, got {axis!r}")
    if ord is None:
        ord = 2
    if isinstance(ord, bool) or not isinstance(ord, _numbers.Real):
        raise TypeError(f"norm: ord must be a number, got {ord!r}")
    ord = float(ord)
    if ord == 0:  # a count: int32, as MegEngine 1.13 gives it (sum(x != 0))
        return reduce(elemwise("NE", x, 0).astype("int32"), "sum", axis, keepdims)
    if ord == 2:  # one pass: the squares' sum in the kernel's double accumulator
        return elemwise("SQRT", reduce(x, "sum_sqr", axis, keepdims))
    a = elemwise("ABS", x)
    if ord == _math.inf:
        return reduce(a, "max", axis, keepdims)
    if ord == -_math.inf:
        return reduce(a, "min", axis, keepdims)
    if ord == 1:
        return reduce(a, "sum", axis, keepdims)
    return reduce(a**ord, "sum", axis, keepdims) ** (1.0 / ord)


def normalize(inp, ord=None, axis=None, eps=1e-12):
    """``inp`` divided by its :func:`norm` over ``axis`` (at least ``eps``).

    Args:
        inp: input tensor.
        ord: the order of the norm; 2 when None.
        axis: the axis holding the vectors; the whole tensor is one vector when None.
        eps: the smallest divisor, which keeps zero vectors finite.

    Returns:
        a Tensor of ``inp``'s shape.

    Examples:
        >>> import megengine.functional as F
        >>> F.normalize([[3.0, 4.0], [0.0, 0.0]], axis=1).numpy().tolist()
        [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    x = _float(as_tensor(inp))
    n = norm(x, ord, axis, keepdims=True)
    return x / elemwise("MAX", n, eps)


def _sort_input(fn, inp):
    x = as_tensor(inp)
    if x.ndim == 0:
        raise MegEngineError(f"{fn}: input must have at least one dim, got shape {x.shape}")
    if x._dtype_name == "bool":
        raise MegEngineTypeError(f"{fn}: cannot sort a bool tensor")
    return x


def sort(inp, descending=False):
    """Sorts along the last axis; NaN sorts as the largest, -0 equal to +0. Ascending is stable
    (equal elements keep their order); descending is its exact reverse, so equal elements come
    in reverse order (MegEngine 1.13's order).

    Args:
        inp: input tensor of at least one dim.
        descending: sort from largest to smallest.

    Returns:
        a tuple (sorted values, int32 indices into ``inp`` along the last axis).

    Examples:
        >>> import megengine.functional as F
        >>> v, i = F.sort([3.0, 1.0, 2.0])
        >>> v.numpy().tolist(), i.numpy().tolist()
        ([1.0, 2.0, 3.0], [1, 2, 0])
    """
    return _sort("sort", inp, descending)


def _sort(fn, inp, descending):
    x = _sort_input(fn, inp)
    order = "DESCENDING" if descending else "ASCENDING"
    values, indices = _rt.apply(cached_op(builtin.Argsort, order=order), x)
    return values, indices


def argsort(inp, descending=False):
    """The indices that sort ``inp`` along the last axis, ordered as by :func:`sort`: equal
    elements in their order ascending, in reverse order descending (MegEngine 1.13's order).

    Args:
        inp: input tensor of at least one dim.
        descending: sort from largest to smallest.

    Returns:
        an int32 Tensor of ``inp``'s shape.

    Examples:
        >>> import megengine.functional as F
        >>> F.argsort([[3.0, 1.0, 2.0]], descending=True).numpy().tolist()
        [[0, 2, 1]]
        >>> F.argsort([1.0, 2.0, 1.0]).numpy().tolist()
        [0, 2, 1]
        >>> F.argsort([1.0, 2.0, 1.0], descending=True).numpy().tolist()
        [1, 2, 0]
    """
    return _sort("argsort", inp, descending)[1]


def topk(inp, k, descending=True, kth_only=False, no_sort=False):
    """The ``k`` largest (or smallest, with ``descending=False``) elements along the last axis.

    Equal elements are ranked as by :func:`argsort`: with ``descending`` the later one first.

    Args:
        inp: input tensor of at least one dim.
        k: how many elements, at least 1; a k above ``inp.shape[-1]`` takes the whole axis
            (MegEngine 1.13 clamps it so; with ``kth_only``, the last element in order).
        descending: select the largest (the default, as MegEngine's); False selects the
            smallest.
        kth_only: return only the k-th value and its index (the last axis dropped).
        no_sort: the selected elements may come in any order.

    Returns:
        a tuple (values, int32 indices into ``inp`` along the last axis).

    Examples:
        >>> import megengine.functional as F
        >>> v, i = F.topk([4.0, 1.0, 3.0, 2.0], 2)
        >>> v.numpy().tolist(), i.numpy().tolist()
        ([4.0, 3.0], [0, 2])
        >>> v, i = F.topk([[4.0, 1.0, 3.0]], 2, descending=False, kth_only=True)
        >>> v.numpy().tolist(), i.numpy().tolist()
        ([3.0], [2])
    """
    x = _sort_input("topk", inp)
    k = int(k)
    n = x.shape[-1]
    if k < 1 or n == 0:
        raise MegEngineError(f"topk: k={k} is out of range [1, {n}] for input of shape {x.shape}")
    k = _builtins.min(k, n)
    signed_k = -k if descending else k
    if kth_only:
        (kth,) = _rt.apply(cached_op(builtin.TopK, mode="KTH_ONLY", k=signed_k), x)
        # The k-th value's index: the last of the sorted top k (ties ranked as by Argsort).
        op = cached_op(builtin.TopK, mode="VALUE_IDX_SORTED", k=signed_k)
        indices = _rt.apply(op, x)[1]
        return kth, _take(indices, indices.ndim - 1, k - 1)
    mode = "VALUE_IDX_NOSORT" if no_sort else "VALUE_IDX_SORTED"
    values, indices = _rt.apply(cached_op(builtin.TopK, mode=mode, k=signed_k), x)
    return values, indices


def dot(inp1, inp2):
    """Inner product of two vectors (a 0-d input is broadcast to the other's length).

    Args:
        inp1: a 1-D or 0-d tensor.
        inp2: a 1-D or 0-d tensor.

    Returns:
        a 0-d Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.dot([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]).numpy().tolist()
        32.0
    """
    a, b = _promote([inp1, inp2])
    if a.ndim > 1 or b.ndim > 1:
        raise MegEngineError(f"dot: inputs must be 1-D or 0-d, got shapes {a.shape} and {b.shape}")
    n = a.shape[0] if a.ndim else (b.shape[0] if b.ndim else 1)
    if (a.ndim and a.shape[0] != n) or (b.ndim and b.shape[0] != n):
        raise MegEngineError(f"dot: lengths differ, got shapes {a.shape} and {b.shape}")
    if a.ndim == 0:
        a = _rt.apply(cached_op(builtin.Broadcast, shape=(n,)), a)[0]
    if b.ndim == 0:
        b = _rt.apply(cached_op(builtin.Broadcast, shape=(n,)), b)[0]
    return _rt.apply(cached_op(builtin.Dot), a, b)[0]


def _take(x, axis, i):
    op = cached_op(builtin.IndexingMultiAxisVec, axes=(axis,))
    return _rt.apply(op, x, as_tensor(i, dtype="int32", device=x.device))[0]


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of (batches of) 3-D vectors, as ``numpy.cross``; 2-D vectors get a zero
    third component, and two 2-D vectors give only the z component.

    Args:
        a: first vectors.
        b: second vectors (the batch dims broadcast with ``a``'s).
        axisa: the axis of ``a`` holding the vectors.
        axisb: the axis of ``b`` holding the vectors.
        axisc: the axis of the result holding the vectors.
        axis: if given, overrides ``axisa``, ``axisb`` and ``axisc``.

    Returns:
        the cross product Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.cross([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]).numpy().tolist()
        [0.0, 0.0, 1.0]
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = _promote([a, b])
    comps = []
    for name, t, ax in (("a", x, axisa), ("b", y, axisb)):
        if t.ndim == 0 or not -t.ndim <= ax < t.ndim:
            raise MegEngineError(f"cross: axis {ax} is out of range for {name} of shape {t.shape}")
        ax = ax + t.ndim if ax < 0 else ax
        if t.shape[ax] not in (2, 3):
            raise MegEngineError(
                f"cross: vectors must have 2 or 3 components, got shapes {x.shape} and {y.shape}"
            )
        comps.append([_take(t, ax, i) for i in range(t.shape[ax])])
    (a0, a1, *a2), (b0, b1, *b2) = comps
    if not a2 and not b2:
        return a0 * b1 - a1 * b0
    a2 = a2[0] if a2 else None
    b2 = b2[0] if b2 else None
    cx = (a1 * b2 if b2 is not None else 0 * a1) - (a2 * b1 if a2 is not None else 0 * b1)
    cy = (a2 * b0 if a2 is not None else 0 * b0) - (a0 * b2 if b2 is not None else 0 * a0)
    cz = a0 * b1 - a1 * b0
    nd = cz.ndim + 1  # cx, cy and cz all have the broadcast batch shape
    if not -nd <= axisc < nd:
        raise MegEngineError(f"cross: axisc {axisc} is out of range for a result of {nd} dims")
    return _stack([cx, cy, cz], axis=axisc)


def _check_non_finite(inps, scale=1.0):
    """Whether any of ``inps`` holds an inf or NaN (the CheckNonFinite op), and each tensor of
    ``inps`` multiplied by ``scale`` in place (``Tensor._reset``), as MegEngine's does for
    GradScaler's unscaling.

    Args:
        inps: a Tensor or a list of Tensors (float).
        scale: the factor each tensor is multiplied by.

    Returns:
        an int32 Tensor of shape (1,): 1 if some element is not finite, else 0.

    Examples:
        >>> import megengine as mge
        >>> from megengine.functional.math import _check_non_finite
        >>> g = [mge.Tensor([2.0, 4.0]), mge.Tensor([float("inf")])]
        >>> _check_non_finite(g, 0.5).numpy().tolist(), g[0].numpy().tolist()
        ([1], [1.0, 2.0])
    """
    if isinstance(inps, _array_method.Tensor):
        inps = [inps]
    if not inps:
        raise MegEngineError("_check_non_finite: no tensors to check")
    flag = _rt.apply(cached_op(builtin.CheckNonFinite), *inps)[0]
    if scale != 1.0:
        for t in inps:
            t._reset(t * scale)
    return flag
