"""MegEngine's type promotion for binary and ternary ops.

Rules, as MegEngine 1.13 computes them (``python/test/fixtures/make_promotion_fixture.py``
records its table):

- Two tensors: equal dtypes keep it; two of different categories (bool, integer, float) compute
  in float32 (``float16 + int8`` and ``bool + int32`` are float32); within a category the wider
  type wins, float16 with bfloat16 gives float32 and int8 with uint8 int16.
- A Python scalar adopts the tensor's dtype when it fits the tensor's category
  (``int_tensor + 1`` stays int, ``half_tensor * 2.0`` stays float16); a float scalar with an
  integer tensor, and any number with a bool tensor, give float32.
- A NumPy scalar or array keeps its own dtype: of the tensor's category it widens the result
  (``int8_tensor + np.int16(1)`` is int16, ``half + np.float32(1)`` float32); of a lower category
  it adopts the tensor's dtype; of a higher one it gives float32.
- A list or tuple is converted to the tensor's dtype (``int8_tensor + [1.5]`` is int8).
- A bfloat16 tensor with anything but bfloat16 computes in float32.

NeoMeg accepts a few operands MegEngine 1.13 rejects: float64 and int64 NumPy values (taken as
float32 and int32), and uint8 with a signed integer (int16 or int32). complex64 computes only
with complex64 (MegEngine 1.13 has no complex promotion): a real tensor or a scalar beside it is
a TypeError.
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
    if ca != cb or ca == 2:
        return "float32"  # bool, integer and float mixed; float16 with bfloat16
    if {a, b} == {"int8", "uint8"}:
        return "int16"
    return a if _INTS.index(a) > _INTS.index(b) else b


def scalar_dtype_for(tensor_dtype_name, scalar):
    """The dtype a Python or NumPy scalar takes next to a tensor of ``tensor_dtype_name``."""
    if _category(tensor_dtype_name) == 3:  # (_category raises for a quantized dtype)
        raise TypeError(
            f"complex64 computes only with complex64, got a Python {type(scalar).__name__}: "
            "make it a complex tensor with megengine.functional.complex"
        )
    if isinstance(scalar, np.generic):
        return numpy_dtype_for(tensor_dtype_name, scalar.dtype)
    if tensor_dtype_name == "bfloat16":
        return "float32"
    if isinstance(scalar, bool):
        return tensor_dtype_name
    if isinstance(scalar, int):
        return tensor_dtype_name if tensor_dtype_name != "bool" else "float32"
    if isinstance(scalar, float):
        return tensor_dtype_name if _category(tensor_dtype_name) == 2 else "float32"
    raise TypeError(f"unsupported operand type {type(scalar).__name__}")


def operand_dtype_for(tensor_dtype_name, value):
    """The dtype an operand that is not a tensor (a Python or NumPy scalar, a NumPy array, a
    list or tuple) takes next to tensors that promote to ``tensor_dtype_name``."""
    if isinstance(value, np.ndarray):
        return numpy_dtype_for(tensor_dtype_name, value.dtype)
    if isinstance(value, (int, float, bool, np.generic)):
        return scalar_dtype_for(tensor_dtype_name, value)
    if isinstance(value, (list, tuple)) and tensor_dtype_name != "bool":
        return tensor_dtype_name
    return numpy_dtype_for(tensor_dtype_name, np.asarray(value).dtype)


# NumPy dtypes NeoMeg takes in a narrower type (MegEngine 1.13 rejects them as operands).
_NUMPY_NARROWED = {"float64": "float32", "int64": "int32", "uint64": "int32", "uint32": "int32"}


def numpy_dtype_for(tensor_dtype_name, np_dtype):
    """The dtype a NumPy scalar or array of ``np_dtype`` takes next to a tensor of
    ``tensor_dtype_name``."""
    name = np.dtype(np_dtype).name
    name = _NUMPY_NARROWED.get(name, name)
    if name == tensor_dtype_name:
        return name
    if tensor_dtype_name == "bfloat16":
        return "float32"
    ct, cn = _category(tensor_dtype_name), _category(name)
    if 3 in (ct, cn):
        return promote_names(tensor_dtype_name, name)  # raises: complex64 only with itself
    if ct == 0 or cn > ct:
        return "float32"
    if cn < ct:
        return tensor_dtype_name
    return promote_names(tensor_dtype_name, name)
