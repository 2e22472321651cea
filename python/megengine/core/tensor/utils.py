"""MegEngine's shape helpers of ``megengine.core.tensor.utils``: ``make_shape_tuple`` and
``astensor1d``, which code written for MegEngine imports from here."""

import numpy as np

from ..ops import builtin
from .array_method import (
    Tensor,
    apply,
    as_tensor,
    cached_op,
    is_symbolic,
    is_tensor,
    reshape,
    symbolic_const,
)

__all__ = ["astensor1d", "make_shape_tuple"]


def make_shape_tuple(shape):
    """A shape as a tuple of ints.

    Args:
        shape: a sequence of ints (or 0-d Tensors), or a 1-D integer Tensor.

    Returns:
        a tuple of ints.

    Examples:
        >>> import megengine as mge
        >>> from megengine.core.tensor.utils import make_shape_tuple
        >>> make_shape_tuple(mge.Tensor([3, 4])), make_shape_tuple([2, mge.Tensor(5)])
        ((3, 4), (2, 5))
    """
    if is_tensor(shape):
        shape = shape.numpy().tolist()
    return tuple(int(s.item() if is_tensor(s) else s) for s in shape)


def _device_of(reference, device):
    if device is not None:
        return device
    for r in reference:
        if isinstance(r, Tensor):
            return r.device
    return None


def astensor1d(x, *reference, dtype=None, device=None):
    """``x`` as a 1-D Tensor, as MegEngine's helper: a Tensor is returned as it is (whatever
    its dtype and device); a NumPy array or a sequence of numbers becomes a Tensor; a sequence
    that holds Tensors (0-d, or 1-D of one element) is their concatenation.

    Args:
        x: a Tensor, a NumPy array, or a sequence of numbers and Tensors.
        reference: tensors whose device the result takes (the first Tensor's).
        dtype: the dtype of a new result (not of a Tensor passed through). Default: what the
            values give (int32 for Python ints).
        device: the device of a new result; overrides ``reference``.

    Returns:
        a 1-D Tensor.

    Examples:
        >>> import megengine as mge
        >>> from megengine.core.tensor.utils import astensor1d
        >>> astensor1d([1, mge.Tensor(2), 3], mge.Tensor(0)).numpy().tolist()
        [1, 2, 3]
        >>> astensor1d((2, 2), dtype="float32").dtype.name
        'float32'
    """
    if is_tensor(x):
        return x
    device = _device_of(reference, device)
    if isinstance(x, np.ndarray) or not any(is_tensor(i) for i in x):
        if any(is_symbolic(r) for r in reference):
            # MegEngine's rule: a value next to a var of a model becomes a constant of it.
            return symbolic_const(np.asarray(x), dtype)
        return Tensor(np.asarray(x), dtype=dtype, device=device)
    parts = [reshape(as_tensor(i, device=device), (-1,)) for i in x]
    names = {p._dtype_name for p in parts}
    target = dtype or (names.pop() if len(names) == 1 else "float32")
    parts = [p if p._dtype_name == target else p.astype(target) for p in parts]
    return apply(cached_op(builtin.Concat, axis=0), *parts)[0]
