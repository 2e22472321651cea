"""Every operator as a class, generated from NeoMeg's operator definitions
(``dnn/ops/defs`` and ``src/ops/defs``) into the C++ extension.

``builtin.Elemwise(mode="add")`` builds an op; ``megengine.core._imperative_rt.apply(op, *tensors)``
runs it. Each class takes its params as keyword arguments with the definitions' defaults and
exposes them as attributes; enum params accept a member (``Elemwise.Mode.ADD``) or its name.
"""

from ..._imperative_rt import ops as _ops

__all__ = [name for name in dir(_ops) if not name.startswith("_")]
globals().update({name: getattr(_ops, name) for name in __all__})
