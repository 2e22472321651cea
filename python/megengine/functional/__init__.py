"""``megengine.functional`` (``F``): every function builds generated ops
(``megengine.core.ops.builtin``) and runs them with ``apply``."""

from . import elemwise, loss, math, metric, nn, tensor  # noqa: F401

# The function einsum replaces the submodule of the same name in this namespace.
from .einsum import *
from .elemwise import *
from .math import *
from .nn import *
from .tensor import *

# nn re-exports the elementwise activations; keep each name once.
__all__ = list(
    dict.fromkeys(["einsum"] + elemwise.__all__ + math.__all__ + tensor.__all__ + nn.__all__)
)
