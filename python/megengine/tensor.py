"""``megengine.Tensor`` and ``megengine.Parameter``.

``Tensor`` is the C++ extension's tensor class (``megengine/core/_imperative_rt``, built from
``python/src/tensor.cpp``) with the array methods of ``core/tensor/array_method.py`` installed on
it: operators and methods build ops from ``megengine.core.ops.builtin`` and run them with
``apply``, which crosses into C++ (``imperative/src/apply.cpp``) once.
"""

from .core import _imperative_rt as _rt
from .core.tensor import array_method as _array_method

Tensor = _rt.Tensor
Tensor.__module__ = "megengine"
Tensor.__doc__ = """A multi-dimensional array on a device.

Args:
    data: array-like values (or another Tensor); float64 becomes float32 and int64 int32.
    dtype: dtype to convert to (a numpy dtype or a name such as ``"float16"``).
    device: where the tensor lives (``"cpu0"``, ``"xpux"``); the default device when None.

Examples:
    >>> import megengine as mge
    >>> x = mge.Tensor([[1, 2], [3, 4]], dtype="float32")
    >>> (x * 2 + 1).numpy().tolist()
    [[3.0, 5.0], [7.0, 9.0]]
"""
_array_method.install(Tensor)

tensor = Tensor


class Parameter(Tensor):
    """A Tensor that a module learns; GradManager attaches Parameters, optimizers update them.

    Args:
        data: initial values, as for :class:`Tensor`.
        dtype: dtype to convert to.
        device: where the parameter lives.

    Examples:
        >>> import megengine as mge
        >>> w = mge.Parameter([1.0, 2.0])
        >>> isinstance(w, mge.Tensor), w.shape
        (True, (2,))
    """

    def __init__(self, data=None, dtype=None, device=None, **kwargs):
        super().__init__(data, dtype=dtype, device=device)


_rt._install_operator_slots(Parameter)  # a subclass inherits the Python methods, not the slots
