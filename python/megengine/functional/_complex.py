"""Complex tensors (``F.complex``, ``F.real``, ``F.imag``, ``F.polar``), exported by
``megengine.functional.tensor`` as in MegEngine 1.13.

A complex64 tensor holds NumPy's layout (float32 real and imaginary parts, interleaved). It takes
``+``, ``-``, ``*`` and unary ``-`` with other complex64 tensors, views (reshape, slicing) and
copies; other arithmetic raises a TypeError naming the op. Gradients reach real tensors through
complex ones in PyTorch's convention: the gradient of a complex ``z`` is
``dL/dRe(z) + i * dL/dIm(z)``, and ``*`` multiplies by the conjugate.
"""

from ..core import _imperative_rt as _rt
from ..core.ops import builtin
from ..core.tensor.array_method import as_tensor, cached_op, elemwise

__all__ = ["complex", "imag", "polar", "real"]


def complex(real, imag):
    """The complex64 tensor ``real + i * imag``.

    Args:
        real: the real parts, a float32 tensor (or data that becomes one).
        imag: the imaginary parts, float32, broadcast with ``real`` (NumPy rules).

    Returns:
        a complex64 Tensor of the broadcast shape.

    Examples:
        >>> import megengine.functional as F
        >>> from megengine import Tensor
        >>> F.complex(Tensor([1.0, 2.0]), Tensor([3.0, 4.0]))
        Tensor([1.+3.j 2.+4.j], dtype=complex64, device=...)
    """
    re, im = as_tensor(real), as_tensor(imag)
    return _rt.apply(cached_op(builtin.CreateComplex), re, im)[0]


def _part(z, part):
    return _rt.apply(cached_op(builtin.ComplexPart, part=part), as_tensor(z))[0]


def real(complex):
    """The real parts of a complex64 tensor.

    Args:
        complex: a complex64 tensor.

    Returns:
        a float32 Tensor of ``complex``'s shape.

    Examples:
        >>> import megengine.functional as F
        >>> from megengine import Tensor
        >>> F.real(F.complex(Tensor([1.0, 2.0]), Tensor([3.0, 4.0])))
        Tensor([1. 2.], device=...)
    """
    return _part(complex, "REAL")


def imag(complex):
    """The imaginary parts of a complex64 tensor.

    Args:
        complex: a complex64 tensor.

    Returns:
        a float32 Tensor of ``complex``'s shape.

    Examples:
        >>> import megengine.functional as F
        >>> from megengine import Tensor
        >>> F.imag(F.complex(Tensor([1.0, 2.0]), Tensor([3.0, 4.0])))
        Tensor([3. 4.], device=...)
    """
    return _part(complex, "IMAG")


def polar(abs, angle):
    """The complex64 tensor of magnitude ``abs`` and phase ``angle``:
    ``abs * (cos(angle) + i * sin(angle))``.

    Args:
        abs: the magnitudes, float32.
        angle: the phases in radians, float32, broadcast with ``abs``.

    Returns:
        a complex64 Tensor of the broadcast shape.

    Examples:
        >>> import math
        >>> import megengine.functional as F
        >>> from megengine import Tensor
        >>> F.polar(Tensor([2.0, 1.0]), Tensor([0.0, math.pi / 3]))
        Tensor([2. +0.j    0.5+0.866j], dtype=complex64, device=...)
    """
    r, theta = as_tensor(abs), as_tensor(angle)
    return complex(
        elemwise("MUL", r, elemwise("COS", theta)), elemwise("MUL", r, elemwise("SIN", theta))
    )
