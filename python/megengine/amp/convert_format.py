"""``amp.convert_tensor_format`` and ``amp.convert_module_format``: channels-last tensors.

The converted tensors keep their logical NCHW shape and values; their storage becomes
channels-last (``Tensor.format`` is ``"nhwc"``, read from the strides), and the convolutions,
pooling, batch norms and elementwise ops they feed keep it, so a converted model's activations
stay NHWC from one oneDNN kernel to the next (``megengine.core.tensor.memory_format``).
"""

from copy import deepcopy

from ..core.tensor.memory_format import to_channels_last
from ..module import Module
from ..tensor import Tensor


def _is_nchw_format(param: Tensor):
    return param.ndim in (4, 5) and param.format != "nhwc"


def convert_tensor_format(x: Tensor, inplace: bool = True):
    """Convert NCHW Tensor to NHWC Tensor.

    A 4-D or 5-D tensor not already NHWC gets channels-last storage (same shape and values,
    ``format`` ``"nhwc"``); any other tensor is returned as it is.

    Args:
        x: the tensor.
        inplace: give ``x`` itself the new storage (it keeps its identity, as a Parameter must);
            otherwise return a channels-last copy, through which gradients flow to ``x``.

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
    out = to_channels_last(x)
    if out is x:  # channels-last already, by the runtime's choice: now the program's
        x._auto_layout = False
    if inplace and out is not x:
        x._reset(out)
        return x
    return out


def convert_module_format(module: Module, inplace: bool = True):
    """Convert NCHW Module to NHWC Module.

    Every 4-D and 5-D tensor of the module (parameters and buffers: convolution weights become
    OHWI in memory, per-channel (1, C, 1, 1) tensors channels-last) gets channels-last storage in
    place; optimizers keep it across updates.

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
