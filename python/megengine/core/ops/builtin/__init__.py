"""Every operator as a class, generated from NeoMeg's operator definitions
(``dnn/ops/defs`` and ``src/ops/defs``) into the C++ extension.

``builtin.Elemwise(mode="add")`` builds an op; ``megengine.core._imperative_rt.apply(op, *tensors)``
runs it. Each class takes its params as keyword arguments with the definitions' defaults and
exposes them as attributes; enum params accept a member (``Elemwise.Mode.ADD``) or its name.
"""

from ..._imperative_rt import OpDef as _OpDef
from ..._imperative_rt import ops as _ops

__all__ = [name for name in dir(_ops) if not name.startswith("_")]
globals().update({name: getattr(_ops, name) for name in __all__})


def _op_fields(cls):
    # the generated classes expose each param as a property
    return [k for k, v in vars(cls).items() if isinstance(v, property) and k != "name"]


def _rebuild_op(name, params):
    return globals()[name](**params)


def _reduce_op(op):
    cls = type(op)
    return _rebuild_op, (cls.__name__, {k: getattr(op, k) for k in _op_fields(cls)})


# an op pickles (and deep-copies) as its class name and params, as MegEngine's ops do: traced
# modules that record raw applies are pickled and flattened
_OpDef.__reduce__ = _reduce_op
