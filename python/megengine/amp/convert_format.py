"""``amp.convert_tensor_format`` and ``amp.convert_module_format``: MegEngine's NHWC marking.

NeoMeg records the format as the tensor's ``format`` attribute; the tensor keeps its logical
NCHW shape, values and storage, so every op computes exactly what it computes for an NCHW tensor
and returns a ``"default"`` tensor (the x86 convolutions pick channels-last or blocked layouts
inside oneDNN whatever the label says).
"""

from copy import deepcopy

from ..module import Module
from ..tensor import Tensor


def _is_nchw_format(param: Tensor):
    return param.ndim in (4, 5) and param.format != "nhwc"


def convert_tensor_format(x: Tensor, inplace: bool = True):
    """Convert NCHW Tensor to NHWC Tensor.

    A 4-D or 5-D tensor not already NHWC gets the ``"nhwc"`` format; any other tensor is
    returned as it is.

    Args:
        x: the tensor.
        inplace: mark ``x`` itself; otherwise a new tensor with ``x``'s values is marked.

    Returns:
        the NHWC tensor (``x`` itself when ``inplace`` or nothing to convert).

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine import amp
        >>> x = mge.Tensor(np.zeros((1, 2, 3, 4), "float32"))
        >>> y = amp.convert_tensor_format(x, inplace=False)
        >>> y.format, y.shape, x.format
        ('nhwc', (1, 2, 3, 4), 'default')
        >>> amp.convert_tensor_format(mge.Tensor([1.0])).format
        'default'
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"convert_tensor_format: x must be a Tensor, got {type(x).__name__}")
    if not _is_nchw_format(x):
        return x
    if inplace:
        x.format = "nhwc"
        return x
    # A differentiable copy, as MegEngine's Tensor(data, format="nhwc") of the same values.
    out = x + 0 if x._dtype_name != "bool" else x.astype("bool")
    out.format = "nhwc"
    return out


def convert_module_format(module: Module, inplace: bool = True):
    """Convert NCHW Module to NHWC Module.

    Every 4-D and 5-D tensor of the module (parameters and buffers) is marked NHWC.

    Args:
        module: the module.
        inplace: convert ``module`` itself; otherwise a deep copy of it.

    Returns:
        the converted module.

    Examples:
        >>> import megengine.module as M
        >>> from megengine import amp
        >>> conv = amp.convert_module_format(M.Conv2d(2, 3, 3), inplace=False)
        >>> conv.weight.format, conv.bias.format
        ('nhwc', 'nhwc')
    """
    if not isinstance(module, Module):
        raise TypeError(
            f"convert_module_format: module must be a Module, got {type(module).__name__}"
        )
    if not inplace:
        module = deepcopy(module)
    for _, param in module.named_tensors():
        convert_tensor_format(param, inplace=True)
    return module
