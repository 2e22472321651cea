"""Conversions from float to QAT to quantized modules and the switches of a QAT network's
observers and fake quantizers, as MegEngine 1.13's ``megengine.quantization.quantize``."""

from copy import deepcopy
from functools import partial

import numpy as np

from .. import module as Float
from ..functional import concat, sqrt
from ..logger import get_logger
from ..module import Module
from ..module import qat as QAT  # read at call time: module.qat imports this package
from .qconfig import ema_fakequant_qconfig

__all__ = [
    "apply_easy_quant",
    "disable_fake_quant",
    "disable_observer",
    "enable_fake_quant",
    "enable_observer",
    "propagate_qconfig",
    "quantize",
    "quantize_qat",
    "reset_qconfig",
]

logger = get_logger(__name__)


def _float2qat_dict():
    # MegEngine maps by the names module.quantized has; they are exactly module.qat's modules
    names = [
        key
        for key in dir(QAT)
        if isinstance(getattr(QAT, key), type)
        and issubclass(getattr(QAT, key), QAT.QATModule)
        and getattr(QAT, key) is not QAT.QATModule
        and hasattr(Float, key)
    ]
    return {getattr(Float, key): getattr(QAT, key) for key in names}


def _set_expand_structure(module, key, value):
    # sets the object at a dotted key of Module._flatten (attributes, list indices, dict keys)
    *path, last = key.split(".")
    parent = module
    for part in path:
        if isinstance(parent, Module):
            parent = getattr(parent, part)
        elif isinstance(parent, dict):
            parent = parent[part]
        else:
            parent = parent[int(part)]
    if isinstance(parent, Module):
        setattr(parent, last, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        parent[int(last)] = value


def _get_quantable_module_names():
    # MegEngine 1.13's private helper (its tests and some user scripts import it): the names of
    # module.quantized's QuantizedModule subclasses, which float, QAT and quantized share.
    from ..module import quantized as Quantized  # imports functional: read at call time

    return [
        key
        for key in dir(Quantized)
        if isinstance(getattr(Quantized, key), type)
        and issubclass(getattr(Quantized, key), Quantized.QuantizedModule)
        and getattr(Quantized, key) is not Quantized.QuantizedModule
    ]


def _qat2quantized_dict():
    # MegEngine's mapping: each QuantizedModule subclass of module.quantized from the QAT
    # module of the same name
    from ..module import quantized as Quantized

    names = [key for key in _get_quantable_module_names() if hasattr(QAT, key)]
    return {getattr(QAT, key): getattr(Quantized, key) for key in names}


def quantize(module, inplace=True, mapping=None):
    """Converts every QAT module under ``module`` to its quantized version
    (``from_qat_module``): weights quantized to the weight dtype the QAT module's observer or
    fake quantizer gives, outputs in its activation dtype. The deployment step after
    :func:`quantize_qat` and training or calibration; the result runs in eval mode only.

    Args:
        module: root module.
        inplace: whether to convert in place (else a deep copy is converted).
        mapping: extra ``{QAT class: quantized class}`` conversions.

    Returns:
        the converted module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> from megengine.quantization import quantize, quantize_qat
        >>> net = quantize_qat(M.Sequential(M.QuantStub(), M.Linear(2, 2), M.DequantStub()))
        >>> _ = net(mge.Tensor(np.ones((1, 2), np.float32)))  # observe one batch
        >>> net = quantize(net)
        >>> net.eval()
        >>> [type(m).__module__.split(".")[-2] for m in net]
        ['quantized', 'quantized', 'quantized']
        >>> net(mge.Tensor(np.ones((1, 2), np.float32))).dtype
        dtype('float32')
    """
    if not inplace:
        module = deepcopy(module)
    convert_dict = _qat2quantized_dict()
    if mapping is not None:
        convert_dict.update(mapping)
    qat_modules = tuple(convert_dict.keys())

    # a list: the replacements must not change the walk
    for key, submodule, _ in list(
        module._flatten(
            with_key=True, with_parent=True, predicate=lambda mod: isinstance(mod, qat_modules)
        )
    ):
        new_mod = convert_dict[type(submodule)].from_qat_module(submodule)
        _set_expand_structure(module, key, new_mod)
    return module


def quantize_qat(module, inplace=True, qconfig=ema_fakequant_qconfig, mapping=None):
    """Replaces every quantable float module (Conv2d, ConvBn2d, Linear, Elemwise, QuantStub,
    ...; the outermost one only, and none whose ``quantize_disabled`` is set) with its
    :class:`~.QATModule` version, sharing the float module's parameters, then sets ``qconfig``
    on all of them.

    Args:
        module: root module.
        inplace: whether to convert in place (else a deep copy is converted).
        qconfig: the :class:`~.QConfig` to set; ``ema_fakequant_qconfig`` by default.
        mapping: extra ``{float class: QAT class}`` conversions.

    Returns:
        the converted module.

    Examples:
        >>> import megengine.module as M
        >>> from megengine.quantization import quantize_qat
        >>> net = M.Sequential(M.QuantStub(), M.Conv2d(1, 2, 3), M.DequantStub())
        >>> net = quantize_qat(net)
        >>> [type(m).__module__.split(".")[-2] for m in net]
        ['qat', 'qat', 'qat']
    """
    if not inplace:
        module = deepcopy(module)
    convert_dict = _float2qat_dict()
    if mapping is not None:
        convert_dict.update(mapping)
    quantable_modules = tuple(convert_dict.keys())

    def is_quantable(mod):
        return isinstance(mod, quantable_modules)

    # a list: the replacements must not change the walk
    for key, submodule, parent in list(
        module._flatten(with_key=True, with_parent=True, predicate=is_quantable)
    ):
        # only the outermost quantable module is converted
        if is_quantable(parent) or submodule.quantize_disabled:
            continue
        new_mod = convert_dict[type(submodule)].from_float_module(submodule)
        _set_expand_structure(module, key, new_mod)

    propagate_qconfig(module, qconfig)
    return module


def reset_qconfig(module, qconfig, inplace=True):
    """Replaces the observers and fake quantizers of every QAT module by ``qconfig``'s, each
    initialised (``set_qparams``) from the qparams the old ones give.

    Args:
        module: root module.
        qconfig: the :class:`~.QConfig` to set.
        inplace: whether to reset in place (else on a deep copy).

    Returns:
        the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> from megengine.quantization import quantize_qat, reset_qconfig, tqt_qconfig
        >>> net = quantize_qat(M.Sequential(M.QuantStub()))
        >>> _ = net(mge.Tensor(np.array([-1.0, 2.54], dtype=np.float32)))
        >>> net = reset_qconfig(net, tqt_qconfig)
        >>> round(2 ** float(net[0].act_fake_quant.scale), 5)  # 2.54 / 127.5
        0.01992
    """
    if not inplace:
        module = deepcopy(module)

    def safe_call(func, qparams):
        inst = func() if func is not None else None
        if inst is not None and getattr(inst, "set_qparams", None) is not None:
            inst.set_qparams(qparams)
        return inst

    for m in list(module._flatten(predicate=lambda mod: isinstance(mod, QAT.QATModule))):
        if m.with_weight:
            weight_params = m.get_weight_qparams()
            m.weight_observer = safe_call(qconfig.weight_observer, weight_params)
            m.weight_fake_quant = safe_call(qconfig.weight_fake_quant, weight_params)
        if m.with_act:
            act_params = m.get_activation_qparams()
            m.act_observer = safe_call(qconfig.act_observer, act_params)
            m.act_fake_quant = safe_call(qconfig.act_fake_quant, act_params)
    return module


def _propagate(module, func_str, *args, **kwargs):
    def fn(mod):
        if isinstance(mod, QAT.QATModule):
            getattr(mod, func_str)(*args, **kwargs)

    module.apply(fn)


def propagate_qconfig(module, qconfig):
    """Sets ``qconfig`` on every QAT module under ``module`` (``set_qconfig``).

    Args:
        module: root module.
        qconfig: the :class:`~.QConfig` to set.

    Returns:
        None

    Examples:
        >>> import megengine.module as M
        >>> from megengine.quantization import propagate_qconfig, quantize_qat, tqt_qconfig
        >>> net = quantize_qat(M.Sequential(M.Linear(2, 2)))
        >>> propagate_qconfig(net, tqt_qconfig)
        >>> type(net[0].weight_fake_quant).__name__, net[0].weight_observer
        ('TQT', None)
    """
    _propagate(module, "set_qconfig", qconfig)


def hook_qat_module(module, func):
    """Registers ``func`` as a forward hook on every QAT module; returns the handles.

    Examples:
        >>> import megengine.module as M
        >>> from megengine.quantization import quantize_qat
        >>> from megengine.quantization.quantize import hook_qat_module
        >>> net = quantize_qat(M.Sequential(M.Linear(2, 2), M.Linear(2, 2)))
        >>> len(hook_qat_module(net, lambda mod, inputs, outputs: None))
        2
    """
    return [
        sub.register_forward_hook(func)
        for sub in list(module._flatten(predicate=lambda m: isinstance(m, QAT.QATModule)))
    ]


def apply_easy_quant(module, data, start=0.8, stop=1.2, num=40):
    """EasyQuant (https://arxiv.org/abs/2006.16669): for each QAT module with passive observers
    (``passive_qconfig``), tries ``num`` scales in ``[start, stop]`` times the initial one, first
    for the weight and then for the activation, and keeps the one whose output is closest in
    cosine similarity to the float output on ``data``.

    Args:
        module: root module (QAT, with PassiveObservers set up by :func:`reset_qconfig`).
        data: an input batch.
        start: the lower bound of the search, relative to the initial scale.
        stop: the upper bound.
        num: the number of scales tried.

    Returns:
        the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> from megengine.quantization import (
        ...     apply_easy_quant, passive_qconfig, quantize_qat, reset_qconfig)
        >>> x = mge.Tensor(np.random.RandomState(0).randn(8, 4).astype(np.float32))
        >>> net = quantize_qat(M.Sequential(M.Linear(4, 3)))
        >>> _ = net(x)
        >>> net = reset_qconfig(net, passive_qconfig)
        >>> net = apply_easy_quant(net, x, num=5)
        >>> float(net[0].weight_observer.scale) > 0
        True
    """
    batch_size = data.shape[0]

    def get_cosine(x, y):
        axis = tuple(range(1, len(x.shape)))
        up = (x * y).sum(axis=axis)
        # MegEngine's norm over several axes
        down = sqrt((x * x).sum(axis=axis)) * sqrt((y * y).sum(axis=axis))
        return (up / down).mean(axis=0)

    def search(mod, inputs, outputs, where):
        mod._forward_hooks.clear()
        normal_in = [_[:batch_size] for _ in inputs]
        fakequant_in = [_[batch_size:] for _ in inputs]

        disable_fake_quant(mod)
        normal_out = mod(*normal_in)
        enable_fake_quant(mod)

        ob = getattr(mod, where)
        if ob is None:
            return None
        orig_scale = ob.orig_scale
        cosine = optimal = 0
        for scale in np.linspace(start * orig_scale, stop * orig_scale, num):
            ob.scale = scale
            fakequant_out = mod(*fakequant_in)
            dis = get_cosine(normal_out, fakequant_out)
            if dis > cosine:
                cosine = dis
                optimal = scale
        if optimal == 0:
            logger.warning("EasyQuant finds no better scale")
        else:
            ob.scale = optimal
        fakequant_out = outputs[batch_size:]
        return concat([normal_out, fakequant_out])

    data = concat([data, data])
    hook_qat_module(module, partial(search, where="weight_observer"))
    module(data)
    hook_qat_module(module, partial(search, where="act_observer"))
    module(data)
    return module


def disable_fake_quant(module):
    """Disables the fake quantizers of every QAT module under ``module``.

    Args:
        module: root module.

    Returns:
        None

    Examples:
        >>> import megengine.module as M
        >>> from megengine.quantization import disable_fake_quant, quantize_qat
        >>> net = quantize_qat(M.Sequential(M.Linear(2, 2)))
        >>> disable_fake_quant(net)
        >>> net[0].act_fake_quant.enabled, net[0].weight_fake_quant.enabled
        (False, False)
    """
    _propagate(module, "set_fake_quant", False)


def disable_observer(module):
    """Disables the observers of every QAT module under ``module``.

    Args:
        module: root module.

    Returns:
        None

    Examples:
        >>> import megengine.module as M
        >>> from megengine.quantization import disable_observer, quantize_qat
        >>> net = quantize_qat(M.Sequential(M.Linear(2, 2)))
        >>> disable_observer(net)
        >>> net[0].act_observer.enabled
        False
    """
    _propagate(module, "set_observer", False)


def enable_fake_quant(module):
    """Enables the fake quantizers of every QAT module under ``module``.

    Args:
        module: root module.

    Returns:
        None

    Examples:
        >>> import megengine.module as M
        >>> from megengine.quantization import disable_fake_quant, enable_fake_quant, quantize_qat
        >>> net = quantize_qat(M.Sequential(M.Linear(2, 2)))
        >>> disable_fake_quant(net); enable_fake_quant(net)
        >>> net[0].act_fake_quant.enabled
        True
    """
    _propagate(module, "set_fake_quant", True)


def enable_observer(module):
    """Enables the observers of every QAT module under ``module``.

    Args:
        module: root module.

    Returns:
        None

    Examples:
        >>> import megengine.module as M
        >>> from megengine.quantization import disable_observer, enable_observer, quantize_qat
        >>> net = quantize_qat(M.Sequential(M.Linear(2, 2)))
        >>> disable_observer(net); enable_observer(net)
        >>> net[0].weight_observer.enabled
        True
    """
    _propagate(module, "set_observer", True)
