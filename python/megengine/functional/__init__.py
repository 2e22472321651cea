"""``megengine.functional`` (``F``): every function builds generated ops
(``megengine.core.ops.builtin``) and runs them with ``apply``."""

from . import elemwise, loss, math, metric, nn, tensor  # noqa: F401
from .elemwise import *
from .math import *
from .nn import *
from .tensor import *

__all__ = elemwise.__all__ + math.__all__ + tensor.__all__
