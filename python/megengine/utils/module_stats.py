"""``megengine.utils.module_stats``: a model's parameters, operation counts and activation sizes,
measured by running it once with forward hooks (MegEngine 1.13's API, tables and totals).

The operation count of a module is a formula of its kind (``register_flops`` adds kinds): a
convolution counts ``output elements x (in_channels / groups x kernel elements + bias)``, a
linear layer ``output elements x in_features + out_features`` (bias), a normalisation 7 per
input element, a pooling ``output elements x window elements``. These are MegEngine's formulas,
so the figures compare with what MegEngine printed for the same model.
"""

import collections
import contextlib
import functools
import re
from functools import partial

import numpy as np

from .. import functional as F
from .. import module as M
from ..logger import get_logger
from ..tensor import Tensor

__all__ = [
    "dict2table",
    "disable_receptive_field",
    "enable_receptive_field",
    "flops_adaptivePool",
    "flops_batchmatmul",
    "flops_convNd",
    "flops_convNdTranspose",
    "flops_linear",
    "flops_norm",
    "flops_pool",
    "get_activation_stats",
    "get_op_stats",
    "get_param_stats",
    "module_stats",
    "preprocess_receptive_field",
    "print_activations_stats",
    "print_op_stats",
    "print_param_stats",
    "print_summary",
    "register_flops",
    "register_hook_module",
    "register_receptive_field",
    "sizeof_fmt",
    "sum_activations_stats",
    "sum_op_stats",
    "sum_param_stats",
]

_logger = get_logger(__name__)

_flops_rules = {}
_receptive_field_rules = {}
_receptive_field_enabled = False

# id(tensor) -> (receptive field, stride) of the module output that made it, while a run records
# receptive fields (MegEngine keeps them on the producing module, found through the tensor).
_tensor_rf = {}


def _register(rules, modules):
    def callback(impl):
        for module in modules:
            rules[module] = impl
        return impl

    return callback


def register_flops(*modules):
    r"""Decorator: ``impl(module, inputs, outputs)`` counts the operations of the given module
    classes (and their subclasses); the first registered class that matches wins.

    Args:
        modules: module classes.

    Returns:
        The decorator.

    Examples:
        >>> import megengine.module as M
        >>> from megengine.utils.module_stats import register_flops
        >>> class Scale(M.Module):
        ...     def forward(self, x):
        ...         return x * 2
        >>> @register_flops(Scale)
        ... def flops_scale(module, inputs, outputs):
        ...     return int(np.prod(outputs[0].shape))
    """
    return _register(_flops_rules, modules)


def register_receptive_field(*modules):
    r"""Decorator: ``impl(module, inputs, outputs)`` returns ``(receptive_field, stride)``, each
    an (h, w) pair, of the given module classes' outputs while receptive fields are enabled.
    Modules without a rule pass on the largest of their inputs' (see
    :func:`preprocess_receptive_field`).

    Args:
        modules: module classes.

    Returns:
        The decorator.

    Examples:
        >>> import megengine.module as M
        >>> from megengine.utils.module_stats import (
        ...     preprocess_receptive_field, register_receptive_field)
        >>> @register_receptive_field(M.Conv2d)
        ... def rf_conv(module, inputs, outputs):
        ...     (rh, rw), (sh, sw) = preprocess_receptive_field(module, inputs, outputs)
        ...     kh, kw = module.kernel_size
        ...     return (rh + (kh - 1) * sh, rw + (kw - 1) * sw), (sh * module.stride[0],
        ...                                                        sw * module.stride[1])
        >>> _ = _receptive_field_rules.pop(M.Conv2d)  # this example's rule only
    """
    return _register(_receptive_field_rules, modules)


def enable_receptive_field():
    r"""Makes :func:`module_stats` record each module's receptive field and stride (two more
    columns of the operation table).

    Returns:
        None.

    Examples:
        >>> from megengine.utils.module_stats import (
        ...     disable_receptive_field, enable_receptive_field)
        >>> enable_receptive_field(); disable_receptive_field()
    """
    global _receptive_field_enabled
    _receptive_field_enabled = True


def disable_receptive_field():
    r"""Stops recording receptive fields (the default).

    Returns:
        None.

    Examples:
        >>> from megengine.utils.module_stats import disable_receptive_field
        >>> disable_receptive_field()
    """
    global _receptive_field_enabled
    _receptive_field_enabled = False


def _prod(shape):
    return int(np.prod(shape, dtype=np.int64))


def _conv_classes():
    names = ("Conv1d", "Conv2d", "Conv3d", "LocalConv2d", "DeformableConv2d")
    return tuple(getattr(M, n) for n in names if hasattr(M, n))


@register_flops(*_conv_classes())
def flops_convNd(module, inputs, outputs):
    r"""Operations of a convolution: ``output elements x (in_channels / groups x kernel
    elements + bias)``.

    Args:
        module: the convolution.
        inputs: its inputs.
        outputs: its outputs.

    Returns:
        The count (a float).

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> from megengine.utils.module_stats import flops_convNd
        >>> conv = M.Conv2d(4, 8, 3, padding=1)
        >>> x = mge.Tensor(np.zeros((1, 4, 5, 5), "float32"))
        >>> flops_convNd(conv, [x], [conv(x)])  # 200 outputs x (4 x 9 + 1)
        7400.0
    """
    bias = 1 if module.bias is not None else 0
    per_output = float(module.in_channels // module.groups) * _prod(module.kernel_size) + bias
    return _prod(outputs[0].shape) * per_output


def _transposed_classes():
    names = ("ConvTranspose2d", "ConvTranspose3d")
    return tuple(getattr(M, n) for n in names if hasattr(M, n))


@register_flops(*_transposed_classes())
def flops_convNdTranspose(module, inputs, outputs):
    r"""Operations of a transposed convolution: ``input elements x out_channels / groups x
    kernel elements``, plus one per output element for the bias.

    Args:
        module: the transposed convolution.
        inputs: its inputs.
        outputs: its outputs.

    Returns:
        The count.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> from megengine.utils.module_stats import flops_convNdTranspose
        >>> deconv = M.ConvTranspose2d(2, 3, 2, stride=2, bias=False)
        >>> x = mge.Tensor(np.zeros((1, 2, 4, 4), "float32"))
        >>> int(flops_convNdTranspose(deconv, [x], [deconv(x)]))  # 32 inputs x 3 x 4
        384
    """
    bias = 1 if module.bias is not None else 0
    per_input = module.out_channels // module.groups * _prod(module.kernel_size)
    return _prod(inputs[0].shape) * per_input + _prod(outputs[0].shape) * bias


@register_flops(M.batchnorm._BatchNorm, M.SyncBatchNorm, M.GroupNorm, M.LayerNorm, M.InstanceNorm)
def flops_norm(module, inputs, outputs):
    r"""Operations of a normalisation: 7 per input element.

    Args:
        module: the normalisation module.
        inputs: its inputs.
        outputs: its outputs.

    Returns:
        The count.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> from megengine.utils.module_stats import flops_norm
        >>> x = mge.Tensor(np.zeros((2, 3, 4, 4), "float32"))
        >>> int(flops_norm(M.BatchNorm2d(3), [x], [x]))
        672
    """
    return _prod(inputs[0].shape) * 7


@register_flops(M.AvgPool2d, M.MaxPool2d)
def flops_pool(module, inputs, outputs):
    r"""Operations of a pooling: ``output elements x window elements``.

    Args:
        module: the pooling module.
        inputs: its inputs.
        outputs: its outputs.

    Returns:
        The count.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> from megengine.utils.module_stats import flops_pool
        >>> pool = M.MaxPool2d(2)
        >>> x = mge.Tensor(np.zeros((1, 1, 4, 4), "float32"))
        >>> int(flops_pool(pool, [x], [pool(x)]))
        16
    """
    k = module.kernel_size
    window = _prod(k) if isinstance(k, (tuple, list)) else k * k
    return _prod(outputs[0].shape) * window


@register_flops(M.AdaptiveAvgPool2d, M.AdaptiveMaxPool2d)
def flops_adaptivePool(module, inputs, outputs):
    r"""Operations of an adaptive pooling, MegEngine's formula: ``output elements x kh x kw``
    with ``stride = floor(in / (in - 1))`` and ``k = in - (in - 1) x stride`` per axis.

    Args:
        module: the adaptive pooling module.
        inputs: its inputs.
        outputs: its outputs.

    Returns:
        The count (a float).

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> from megengine.utils.module_stats import flops_adaptivePool
        >>> pool = M.AdaptiveAvgPool2d(1)
        >>> x = mge.Tensor(np.zeros((1, 2, 4, 4), "float32"))
        >>> flops_adaptivePool(pool, [x], [pool(x)])
        2.0
    """
    h, w = inputs[0].shape[2], inputs[0].shape[3]
    with np.errstate(divide="ignore", invalid="ignore"):
        stride_h = np.floor(h / (h - 1))
        stride_w = np.floor(w / (w - 1))
    kernel_h = h - (h - 1) * stride_h
    kernel_w = w - (w - 1) * stride_w
    return float(_prod(outputs[0].shape) * kernel_h * kernel_w)


@register_flops(M.Linear)
def flops_linear(module, inputs, outputs):
    r"""Operations of a linear layer: ``output elements x in_features``, plus
    ``out_features`` for the bias.

    Args:
        module: the linear layer.
        inputs: its inputs.
        outputs: its outputs.

    Returns:
        The count.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> from megengine.utils.module_stats import flops_linear
        >>> fc = M.Linear(4, 3)
        >>> x = mge.Tensor(np.zeros((2, 4), "float32"))
        >>> int(flops_linear(fc, [x], [fc(x)]))  # 6 x 4 + 3
        27
    """
    bias = module.out_features if module.bias is not None else 0
    return _prod(outputs[0].shape) * module.in_features + bias


@register_flops(M.BatchMatMulActivation)
def flops_batchmatmul(module, inputs, outputs):
    r"""Operations of :class:`~.module.BatchMatMulActivation`, MegEngine's formula:
    ``batch x n x (p + bias) x m`` for an input (batch, n, p) and m the weight's last axis.

    Args:
        module: the module.
        inputs: its inputs.
        outputs: its outputs.

    Returns:
        The count.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> from megengine.utils.module_stats import flops_batchmatmul
        >>> bmm = M.BatchMatMulActivation(2, 3, 5)  # weight (2, 5, 3)
        >>> x = mge.Tensor(np.zeros((2, 3, 5), "float32"))
        >>> int(flops_batchmatmul(bmm, [x], [bmm(x)]))  # 2 x 3 x (5 + 1) x 3
        108
    """
    bias = 1 if module.bias is not None else 0
    batch, n, p = inputs[0].shape
    m = module.weight.shape[-1]
    return n * (p + bias) * m * batch


# Modules that get a hook; QAT and quantized modules subclass these.
hook_modules = [
    M.conv._ConvNd,
    M.Linear,
    M.BatchMatMulActivation,
    M.batchnorm._BatchNorm,
    M.LayerNorm,
    M.GroupNorm,
    M.InstanceNorm,
    M.pooling._PoolNd,
    M.pooling._AdaptivePoolNd,
] + [c for c in (getattr(M, "LocalConv2d", None), getattr(M, "DeformableConv2d", None)) if c]


def register_hook_module(module):
    r"""Adds module classes (one, or a list or tuple of them) to those :func:`module_stats`
    hooks, e.g. one with a :func:`register_flops` rule.

    Args:
        module: a :class:`~.module.Module` subclass, or a list or tuple of them.

    Returns:
        None.

    Examples:
        >>> import megengine.module as M
        >>> from megengine.utils.module_stats import hook_modules, register_hook_module
        >>> register_hook_module(M.ReLU)
        >>> _ = hook_modules.remove(M.ReLU)  # this example only
    """
    if isinstance(module, (tuple, list)):
        for m in module:
            register_hook_module(m)
    elif isinstance(module, type) and issubclass(module, M.Module):
        hook_modules.append(module)
    else:
        raise TypeError("the param type should in [list,tuple,M.Module]")


def _dtype_bits(dtype):
    name = np.dtype(dtype).name
    if name == "bool":
        return 1
    numbers = re.findall(r"\d+", name)
    if len(numbers) != 1:
        raise ValueError(f"cannot tell the bit width of dtype {name!r}")
    return int(numbers[0])


def _mean_std(x):
    x = x.astype("float32") if isinstance(x, Tensor) else Tensor(x, dtype="float32")
    return F.mean(x).item(), F.std(x).item()


def dict2table(list_of_dict, header):
    r"""The rows of a table: the header, then per dict its values in the header's order (``""``
    where a dict lacks a key).

    Args:
        list_of_dict: the rows as dicts.
        header: the column names.

    Returns:
        A list of rows, the header first.

    Examples:
        >>> from megengine.utils.module_stats import dict2table
        >>> dict2table([{"a": 1}, {"a": 2, "b": 3}], ["a", "b"])
        [['a', 'b'], [1, ''], [2, 3]]
    """
    return [list(header)] + [[d.get(h, "") for h in header] for d in list_of_dict]


def _format_table(rows):
    # Plain columns under a rule of dashes, as tabulate's "simple" format prints them.
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    rule = "  ".join("-" * w for w in widths)
    lines = [rule] + ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(2, rule)
    lines.append(rule)
    return "\n".join(lines)


def sizeof_fmt(num, suffix="B"):
    r"""A number in units of 1024 (bytes, ``suffix="B"``: KiB, MiB, ...) or 1000 (any other
    suffix: K, M, G, ...), with three decimals.

    Args:
        num: the number.
        suffix: the unit: ``"B"`` for binary prefixes, anything else for decimal ones.

    Returns:
        The string.

    Examples:
        >>> from megengine.utils.module_stats import sizeof_fmt
        >>> sizeof_fmt(2048), sizeof_fmt(1.5e9, suffix="OPs")
        ('2.000 KiB', '1.500 GOPs')
    """
    if suffix == "B":
        scale, units = 1024.0, ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"]
    else:
        scale, units = 1000.0, ["", "K", "M", "G", "T", "P", "E", "Z", "Y"]
    for unit in units:
        if abs(num) < scale or unit == units[-1]:
            return f"{num:3.3f} {unit}{suffix}"
        num /= scale
    return None  # not reached: the last unit always returns


def preprocess_receptive_field(module, inputs, outputs):
    r"""The largest receptive field and stride among a module's inputs ((1, 1) each for an
    input no recorded module made): where a module's own receptive field starts.

    Args:
        module: the module.
        inputs: its input tensors.
        outputs: its outputs.

    Returns:
        ``((rf_h, rf_w), (stride_h, stride_w))``.

    Examples:
        >>> import megengine as mge
        >>> from megengine.utils.module_stats import preprocess_receptive_field
        >>> preprocess_receptive_field(None, [mge.Tensor([1.0])], None)
        ((1, 1), (1, 1))
    """
    known = [_tensor_rf.get(id(i), ((1, 1), (1, 1))) for i in inputs]
    rf = (max(k[0][0] for k in known), max(k[0][1] for k in known))
    stride = (max(k[1][0] for k in known), max(k[1][1] for k in known))
    return rf, stride


def _receptive_field(module, inputs, outputs):
    for cls, rule in _receptive_field_rules.items():
        if isinstance(module, cls):
            return rule(module, inputs, outputs)
    if not inputs:
        return (1, 1), (1, 1)
    return preprocess_receptive_field(module, inputs, outputs)


def get_op_stats(module, inputs, outputs):
    r"""One module call's row of the operation table: shapes, ``flops_num`` (by the first
    :func:`register_flops` rule that matches), and with receptive fields enabled
    ``receptive_field`` and ``stride``; None for a module without a rule.

    Args:
        module: the module.
        inputs: its inputs.
        outputs: its output or outputs.

    Returns:
        A dict, or None.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> from megengine.utils.module_stats import get_op_stats
        >>> fc = M.Linear(4, 3)
        >>> x = mge.Tensor(np.zeros((2, 4), "float32"))
        >>> row = get_op_stats(fc, [x], fc(x))
        >>> row["input_shapes"], row["output_shapes"], int(row["flops_num"])
        ([(2, 4)], [(2, 3)], 27)
    """
    if not isinstance(outputs, (tuple, list)):
        outputs = (outputs,)
    row = {
        "input_shapes": [i.shape for i in inputs],
        "output_shapes": [o.shape for o in outputs],
    }
    if _receptive_field_enabled:
        rf, stride = _receptive_field(module, inputs, outputs)
        row["receptive_field"], row["stride"] = rf, stride
        for o in outputs:
            _tensor_rf[id(o)] = (rf, stride)
    for cls, rule in _flops_rules.items():
        if isinstance(module, cls):
            row["flops_num"] = rule(module, inputs, outputs)
            return row
    return None


def _share_and_bar(rows, key, total, bar_length_max, bar_key):
    most = max([d[key] for d in rows] + [0])
    for d in rows:
        d["ratio"] = d[key] / total if total else 0.0
        d["percentage"] = "{:.2f}%".format(d["ratio"] * 100)
        d[bar_key] = "#" * (int(d[key] / most * bar_length_max) if most else 0)


def sum_op_stats(flops, bar_length_max=20):
    r"""Totals the operation rows in place: cumulative counts, shares, bars, formatted counts,
    and a last ``total`` row.

    Args:
        flops: rows of :func:`get_op_stats`.
        bar_length_max: the length of the largest row's bar.

    Returns:
        ``(total operations, rows)``.

    Examples:
        >>> from megengine.utils.module_stats import sum_op_stats
        >>> total, rows = sum_op_stats([{"flops_num": 3, "output_shapes": [(1, 2)]},
        ...                             {"flops_num": 1, "output_shapes": [(1, 4)]}], 4)
        >>> total, rows[0]["bar"], rows[1]["percentage"], rows[-1]["flops"]
        (4, '####', '25.00%', '4.000 OPs')
    """
    total = 0
    for d in flops:
        total += int(d["flops_num"])
        d["flops_cum"] = sizeof_fmt(total, suffix="OPs")
    _share_and_bar(flops, "flops_num", total, bar_length_max, "bar")
    for d in flops:
        d["flops"] = sizeof_fmt(d["flops_num"], suffix="OPs")
    # MegEngine's total row sums the second dimension of every output shape (the channels).
    channels = sum(sum(s[1] if len(s) > 1 else 0 for s in d["output_shapes"]) for d in flops)
    flops.append(
        {"name": "total", "flops": sizeof_fmt(total, suffix="OPs"), "output_shapes": channels}
    )
    return total, flops


def print_op_stats(flops):
    r"""Logs the operation table (INFO).

    Args:
        flops: rows of :func:`sum_op_stats`.

    Returns:
        None.

    Examples:
        >>> from megengine.utils.module_stats import print_op_stats
        >>> print_op_stats([{"name": "fc", "flops": "27.000 OPs"}])
    """
    header = ["name", "class_name", "input_shapes", "output_shapes", "flops", "flops_cum"]
    header += ["percentage", "bar"]
    if _receptive_field_enabled:
        header[4:4] = ["receptive_field", "stride"]
    _logger.info("flops stats: \n%s", _format_table(dict2table(flops, header)))


def get_param_stats(param):
    r"""One parameter's row of the parameter table: dtype, shape, mean, std, element count,
    bits and bytes.

    Args:
        param: the parameter.

    Returns:
        A dict.

    Examples:
        >>> import megengine as mge
        >>> from megengine.utils.module_stats import get_param_stats
        >>> row = get_param_stats(mge.Parameter(np.ones((2, 3), "float32")))
        >>> row["shape"], row["mean"], row["std"], row["param_dim"], row["size"]
        ((2, 3), '1', '0', 6, 24)
    """
    bits = _dtype_bits(param.dtype)
    dim = _prod(param.shape)
    mean, std = _mean_std(param)
    return {
        "dtype": np.dtype(param.dtype),
        "shape": param.shape,
        "mean": f"{mean:.3g}",
        "std": f"{std:.3g}",
        "param_dim": dim,
        "nbits": bits,
        "size": dim * bits // 8,
    }


def _sum_sizes(rows, dim_key, bar_length_max):
    # The parameter and activation tables' totals: elements under dim_key, bytes under "size".
    dims = size = 0
    for d in rows:
        dims += int(d[dim_key])
        size += int(d["size"])
        d["size_cum"] = sizeof_fmt(size)
    _share_and_bar(rows, "size", size, bar_length_max, "size_bar")
    for d in rows:
        d["size"] = sizeof_fmt(d["size"])
    rows.append({"name": "total", dim_key: dims, "size": sizeof_fmt(size)})
    return dims, size, rows


def sum_param_stats(params, bar_length_max=20):
    r"""Totals the parameter rows in place: cumulative sizes, shares, bars, formatted sizes and
    a last ``total`` row.

    Args:
        params: rows of :func:`get_param_stats`.
        bar_length_max: the length of the largest row's bar.

    Returns:
        ``(total elements, total bytes, rows)``.

    Examples:
        >>> from megengine.utils.module_stats import sum_param_stats
        >>> dims, size, rows = sum_param_stats([{"param_dim": 6, "size": 24}], 4)
        >>> dims, size, rows[0]["size"], rows[0]["size_bar"], rows[-1]["name"]
        (6, 24, '24.000 B', '####', 'total')
    """
    return _sum_sizes(params, "param_dim", bar_length_max)


def print_param_stats(params):
    r"""Logs the parameter table (INFO).

    Args:
        params: rows of :func:`sum_param_stats`.

    Returns:
        None.

    Examples:
        >>> from megengine.utils.module_stats import print_param_stats
        >>> print_param_stats([{"name": "fc-w", "size": "24.000 B"}])
    """
    header = ["name", "dtype", "shape", "mean", "std", "param_dim", "nbits", "size"]
    header += ["size_cum", "percentage", "size_bar"]
    _logger.info("param stats: \n%s", _format_table(dict2table(params, header)))


def get_activation_stats(output, has_input=False):
    r"""One module output's row of the activation table: dtype, shape, element count, bits,
    bytes, and with real inputs (``has_input``) the mean and std.

    Args:
        output: the output tensor.
        has_input: whether the model ran on real inputs (not zeros made from shapes).

    Returns:
        A dict.

    Examples:
        >>> import megengine as mge
        >>> from megengine.utils.module_stats import get_activation_stats
        >>> row = get_activation_stats(mge.Tensor(np.ones((2, 2), "float16")))
        >>> row["act_dim"], row["nbits"], row["size"], "mean" in row
        (4, 16, 8, False)
    """
    bits = _dtype_bits(output.dtype)
    dim = _prod(output.shape)
    row = {
        "dtype": np.dtype(output.dtype),
        "shape": output.shape,
        "act_dim": dim,
        "nbits": bits,
        "size": dim * bits // 8,
    }
    if has_input:
        mean, std = _mean_std(output)
        row["mean"], row["std"] = f"{mean:.3g}", f"{std:.3g}"
    return row


def sum_activations_stats(activations, bar_length_max=20):
    r"""Totals the activation rows in place: cumulative sizes, shares, bars, formatted sizes and
    a last ``total`` row.

    Args:
        activations: rows of :func:`get_activation_stats`.
        bar_length_max: the length of the largest row's bar.

    Returns:
        ``(total elements, total bytes, rows)``.

    Examples:
        >>> from megengine.utils.module_stats import sum_activations_stats
        >>> dims, size, rows = sum_activations_stats([{"act_dim": 4, "size": 16},
        ...                                          {"act_dim": 4, "size": 16}], 2)
        >>> dims, size, rows[1]["size_cum"], rows[1]["percentage"]
        (8, 32, '32.000 B', '50.00%')
    """
    return _sum_sizes(activations, "act_dim", bar_length_max)


def print_activations_stats(activations, has_input=False):
    r"""Logs the activation table (INFO); with ``has_input`` it has mean and std columns.

    Args:
        activations: rows of :func:`sum_activations_stats`.
        has_input: whether the rows have mean and std.

    Returns:
        None.

    Examples:
        >>> from megengine.utils.module_stats import print_activations_stats
        >>> print_activations_stats([{"name": "fc", "size": "16.000 B"}])
    """
    header = ["name", "class_name", "dtype", "shape", "nbits", "act_dim", "size", "size_cum"]
    header += ["percentage", "size_bar"]
    if has_input:
        header[4:4] = ["mean", "std"]
    _logger.info("activations stats: \n%s", _format_table(dict2table(activations, header)))


def print_summary(**kwargs):
    r"""Logs a two-column table of the keyword arguments (INFO).

    Args:
        kwargs: the items and their values.

    Returns:
        None.

    Examples:
        >>> from megengine.utils.module_stats import print_summary
        >>> print_summary(total_flops="1.000 KOPs")
    """
    _logger.info("summary\n%s", _format_table([["item", "value"], *kwargs.items()]))


def _as_tensors(x):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return Tensor(x)
    if isinstance(x, collections.abc.Mapping):
        return {k: _as_tensors(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a namedtuple
        return type(x)(*(_as_tensors(v) for v in x))
    if isinstance(x, collections.abc.Sequence):
        return [_as_tensors(v) for v in x]
    return Tensor(x, dtype="float32")


@contextlib.contextmanager
def _eval_mode(model):
    saved = {m: m.training for m in model.modules()}
    for m in saved:
        m.training = False
    try:
        yield
    finally:
        for m, mode in saved.items():
            m.training = mode


_TotalStats = collections.namedtuple(
    "total_stats", ["param_size", "param_dims", "flops", "act_size", "act_dims"]
)
_StatsDetails = collections.namedtuple("module_stats", ["params", "flops", "activations"])


def module_stats(
    model,
    inputs=None,
    input_shapes=None,
    cal_params=True,
    cal_flops=True,
    cal_activations=True,
    logging_to_stdout=True,
    bar_length_max=20,
):
    r"""Runs ``model`` once (in evaluation mode, restored after) and measures the parameters,
    operations and output sizes of its modules of the kinds in ``hook_modules``; logs the
    tables and a summary.

    Parameters count once each, in the order the run first reaches them (a weight shared by
    two modules is counted once). Without ``inputs`` the model runs on float32 zeros of
    ``input_shapes``.

    Args:
        model: the module.
        inputs: the inputs (NumPy arrays, tensors, or nested lists, tuples and dicts of them);
            one input may be given bare.
        input_shapes: instead of ``inputs``, a shape or a list of shapes.
        cal_params: measure parameters.
        cal_flops: count operations.
        cal_activations: measure outputs.
        logging_to_stdout: log the tables (the summary is always logged).
        bar_length_max: the length of the largest bar in the tables.

    Returns:
        ``(total_stats, stats_details)``: ``total_stats`` has ``param_size`` (bytes),
        ``param_dims``, ``flops``, ``act_size`` (bytes) and ``act_dims``; ``stats_details``
        the rows of each table (``params``, ``flops``, ``activations``). None (after logging an
        error) when neither ``inputs`` nor ``input_shapes`` is given.

    Examples:
        >>> import megengine.module as M
        >>> from megengine.utils.module_stats import module_stats
        >>> net = M.Sequential(M.Conv2d(3, 8, 3, padding=1), M.ReLU(), M.Linear(8, 2))
        >>> total, details = module_stats(net, input_shapes=(1, 3, 4, 8),
        ...                               logging_to_stdout=False)
        >>> total.param_dims, int(total.flops)  # 224 + 18 params; 256 x 28 + 64 x 8 + 2
        (242, 7682)
    """
    has_inputs = inputs is not None
    if has_inputs:
        if not isinstance(inputs, (tuple, list)):
            inputs = [inputs]
        inputs = _as_tensors(inputs)
    elif input_shapes:
        if not isinstance(input_shapes[0], (tuple, list)):
            input_shapes = [input_shapes]
        inputs = [F.zeros(tuple(s), dtype="float32") for s in input_shapes]
    else:
        _logger.error("Inputs or input_shapes is required for running model and calculating stats.")
        return None

    params, flops, activations = [], [], []
    recorded = set()

    def record_param(param, name):
        if param is None or id(param) in recorded:
            return
        recorded.add(id(param))
        row = get_param_stats(param)
        row["name"] = name
        params.append(row)

    def hook(module, module_inputs, outputs, name=""):
        class_name = type(module).__name__
        if cal_flops:
            row = get_op_stats(module, module_inputs, outputs)
            if row is not None:
                row["name"], row["class_name"] = name, class_name
                flops.append(row)
        if cal_params:
            record_param(getattr(module, "weight", None), name + "-w")
            record_param(getattr(module, "bias", None), name + "-b")
        if cal_activations:
            output = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
            row = get_activation_stats(output, has_inputs)
            row["name"], row["class_name"] = name, class_name
            activations.append(row)

    hooked = {}
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, tuple(hook_modules)):
            handles.append(module.register_forward_hook(partial(hook, name=name)))
            hooked[id(module)] = name

    # A hooked module's weight or bias read during the run (by a parent that calls the
    # functional op itself, e.g. a fused module) counts at its first read, as in MegEngine.
    own_getattribute = "__getattribute__" in M.Module.__dict__
    original = M.Module.__getattribute__

    @functools.wraps(original)
    def recording_getattribute(module, item):
        member = original(module, item)
        if cal_params and item in ("weight", "bias") and id(module) in hooked:
            suffix = "-w" if item == "weight" else "-b"
            record_param(member, hooked[id(module)] + suffix)
        return member

    _tensor_rf.clear()
    try:
        M.Module.__getattribute__ = recording_getattribute
        with _eval_mode(model):
            model(*inputs)
    finally:
        if own_getattribute:
            M.Module.__getattribute__ = original
        else:
            del M.Module.__getattribute__
        for h in handles:
            h.remove()
        _tensor_rf.clear()

    summary = {"#params": len(params)}
    total_flops = param_dims = param_size = act_dims = act_size = 0
    if cal_params:
        param_dims, param_size, params = sum_param_stats(params, bar_length_max)
        summary["total_param_dims"] = sizeof_fmt(param_dims, suffix="")
        summary["total_param_size"] = sizeof_fmt(param_size)
        if logging_to_stdout:
            print_param_stats(params)
    if cal_flops:
        total_flops, flops = sum_op_stats(flops, bar_length_max)
        summary["total_flops"] = sizeof_fmt(total_flops, suffix="OPs")
        if logging_to_stdout:
            print_op_stats(flops)
    if cal_activations:
        act_dims, act_size, activations = sum_activations_stats(activations, bar_length_max)
        summary["total_act_dims"] = sizeof_fmt(act_dims, suffix="")
        summary["total_act_size"] = sizeof_fmt(act_size)
        if logging_to_stdout:
            print_activations_stats(activations, has_inputs)
    if cal_flops and cal_params and param_size:
        summary["flops/param_size"] = f"{total_flops / param_size:3.3f}"
    print_summary(**summary)
    return (
        _TotalStats(param_size, param_dims, total_flops, act_size, act_dims),
        _StatsDetails(params, flops, activations),
    )
