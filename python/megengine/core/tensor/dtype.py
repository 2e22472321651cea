"""MegEngine's type promotion for binary and ternary ops.

Rules (as MegEngine's ``dtype_promotion``): float beats integer; bool with any number, integer
or float, tensor or scalar, computes in float32 (MegEngine 1.13: ``bool_tensor * 2`` is
float32); within a category the wider type wins (float16 with bfloat16 gives float32); int8 with
uint8 gives int16. A Python scalar adopts the tensor's dtype when it fits the tensor's category
(``int_tensor + 1`` stays int, ``half_tensor * 2.0`` stays float16); a float scalar with an
integer tensor gives float32. complex64 computes only with complex64 (MegEngine 1.13 has no
complex promotion): a real tensor or a scalar beside it is a TypeError.
"""

import numpy as np

from .quant_dtype import *
from .quant_dtype import _builtin_quant_dtypes  # noqa: F401

_FLOATS = ("float16", "bfloat16", "float32")
_INTS = ("bool", "uint8", "int8", "int16", "int32")


def _category(name):
    if name == "complex64":
        return 3
    if name in _FLOATS:
        return 2
    if name == "bool":
        return 0
    if name not in _INTS:
        # Tensor operators convert operands beside a quantized tensor themselves
        # (array_method._promote_quantized); here a quantized dtype has no promotion rule.
        raise TypeError(
            f"{name} has no type promotion with other dtypes: dequantize with astype('float32') "
            "first (quantized tensors compute RELU, NEGATE, ADD, SUB, MAX and MIN in their own "
            "dtype; the other quantized operators are megengine.module.quantized's)"
        )
    return 1


def promote_names(a, b):
    """The dtype name two tensors of dtypes ``a`` and ``b`` compute in."""
    if a == b:
        return a
    ca, cb = _category(a), _category(b)
    if 3 in (ca, cb):
        raise TypeError(
            f"complex64 computes only with complex64, got {a} and {b}: make the other operand "
            "complex with megengine.functional.complex"
        )
    if 0 in (ca, cb):
        return "float32"  # bool with a number
    if ca != cb:
        return a if ca > cb else b
    if ca == 2:
        if "float32" in (a, b):
            return "float32"
        return "float32"  # float16 with bfloat16
    if {a, b} == {"int8", "uint8"}:
        return "int16"
    return a if _INTS.index(a) > _INTS.index(b) else b


def scalar_dtype_for(tensor_dtype_name, scalar):
    """The dtype a Python scalar takes next to a tensor of ``tensor_dtype_name``."""
    if _category(tensor_dtype_name) == 3:  # (_category raises for a quantized dtype)
        raise TypeError(
            f"complex64 computes only with complex64, got a Python {type(scalar).__name__}: "
            "make it a complex tensor with megengine.functional.complex"
        )
    if isinstance(scalar, (bool, np.bool_)):
        return tensor_dtype_name
    if isinstance(scalar, (int, np.integer)):
        return tensor_dtype_name if tensor_dtype_name != "bool" else "float32"
    if isinstance(scalar, (float, np.floating)):
        return tensor_dtype_name if _category(tensor_dtype_name) == 2 else "float32"
    raise TypeError(f"unsupported operand type {type(scalar).__name__}")
