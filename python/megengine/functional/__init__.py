"""``megengine.functional`` (``F``): every function builds generated ops
(``megengine.core.ops.builtin``) and runs them with ``apply``."""

from . import elemwise, loss, math, metric, nn, tensor, utils, vision  # noqa: F401

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


def __getattr__(name):
    # F.distributed loads on first use: it brings in megengine.distributed (sockets, Gloo).
    if name == "distributed":
        import importlib

        return importlib.import_module(".distributed", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
