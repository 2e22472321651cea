"""``optimize``: inference passes on a copy of a TracedModule."""

import copy
import logging

from . import const, elemwise, fold_scale, fuse_conv_bn  # noqa: F401 (register their passes)
from .base import get_registered_pass

logger = logging.getLogger(__name__)

_ORDER = ["FuseConvBn", "FuseAddMul"]


def optimize(module, enabled_pass=["FuseConvBn"]):  # noqa: B006 (MegEngine's signature)
    r"""Runs inference passes on a copy of ``module``: ``"FuseConvBn"`` folds each BatchNorm2d
    into the Conv2d before it (the modules must be in eval mode: the running statistics are
    folded), ``"FuseAddMul"`` folds chains of constant additions and multiplications,
    ``"BackwardFoldScale"`` moves a constant scale after a convolution into its weights
    (with FuseConvBn, which it needs).

    Args:
        module: the TracedModule.
        enabled_pass: the names of the passes to run.

    Returns:
        the optimized copy.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> net = M.Sequential(M.Conv2d(1, 2, 1), M.BatchNorm2d(2))
        >>> net.eval()
        >>> x = mge.Tensor(np.random.rand(1, 1, 2, 2).astype(np.float32))
        >>> fused = tm.optimize(tm.trace_module(net, x))
        >>> [type(e.inputs[0].owner).__name__ for e in fused.graph.get_method_by_type("__call__")]
        ['Conv2d']
        >>> np.allclose(fused(x).numpy(), net(x).numpy(), atol=1e-6)
        True
    """
    if isinstance(enabled_pass, str):
        enabled_pass = [enabled_pass]
    enabled_pass = list(enabled_pass)
    for name in enabled_pass:
        get_registered_pass(name)  # unknown names fail before any work
    order = list(_ORDER)
    if "BackwardFoldScale" in enabled_pass:
        if "FuseConvBn" not in enabled_pass:
            logger.warning("BackwardFoldScale requires FuseConvBn, which is enabled too")
            enabled_pass.append("FuseConvBn")
        order += ["BackwardFoldScale", "FuseAddMul"]
    module = copy.deepcopy(module)
    for name in order:
        if name in enabled_pass:
            module = get_registered_pass(name)()(module)
    return module
