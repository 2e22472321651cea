"""``megengine.traced_module``: a module's forward recorded as an editable graph of module
calls, functional calls, Tensor methods, attribute reads and constants (MegEngine 1.13's
TracedModule), for model surgery, BatchNorm fusion before deployment and converters.

Examples:
    >>> import numpy as np
    >>> import megengine as mge
    >>> import megengine.functional as F
    >>> import megengine.module as M
    >>> import megengine.traced_module as tm
    >>> class Net(M.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.conv = M.Conv2d(1, 2, 3)
    ...         self.bn = M.BatchNorm2d(2)
    ...     def forward(self, x):
    ...         return F.relu(self.bn(self.conv(x)))
    >>> net = Net()
    >>> net.eval()
    >>> x = mge.Tensor(np.random.rand(1, 1, 5, 5).astype(np.float32))
    >>> traced = tm.trace_module(net, x)
    >>> fused = tm.optimize(traced, enabled_pass=["FuseConvBn"])
    >>> [type(e.inputs[0].owner).__name__ for e in fused.graph.get_method_by_type("__call__")]
    ['Conv2d']
    >>> np.allclose(fused(x).numpy(), net(x).numpy(), atol=1e-5)
    True
"""

from ._passes import optimize
from .pytree import register_supported_type
from .tm_config import disable_default_checker, enable_expr_checker
from .traced_module import (
    TracedModule,
    _register_all_builtin_module,
    register_as_builtin,
    trace_module,
    wrap,
)

_register_all_builtin_module()

__all__ = [
    "TracedModule",
    "disable_default_checker",
    "enable_expr_checker",
    "optimize",
    "register_as_builtin",
    "register_supported_type",
    "trace_module",
    "wrap",
]
