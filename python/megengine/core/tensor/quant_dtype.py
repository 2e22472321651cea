"""MegEngine 1.13's quantized dtypes: a NumPy storage dtype (int8, uint8, int32) with
``metadata={"mgb_dtype": {"name", "scale"[, "zero_point"]}}``, the runtime's QuantizedS8,
Quantized8Asymm and QuantizedS32. ``megengine.core.tensor.dtype`` re-exports everything here.

A value ``v`` stands for ``scale * (v - zero_point)``. ``Tensor.astype(qint8(s))`` quantizes
(round half away from zero, saturate); ``Tensor.numpy()`` gives the stored integers with the
quantized dtype. The 4-bit and 1-bit dtypes exist as metadata (for QAT and export) only.
"""

import collections
import re

import ml_dtypes
import numpy as np

__all__ = [
    "QuantDtypeMeta",
    "bfloat16",
    "convert_from_qint1",
    "convert_from_qint4",
    "convert_from_qint8",
    "convert_from_qint32",
    "convert_from_quint4",
    "convert_from_quint8",
    "convert_to_qint1",
    "convert_to_qint4",
    "convert_to_qint8",
    "convert_to_qint32",
    "convert_to_quint4",
    "convert_to_quint8",
    "create_quantized_dtype",
    "get_dtype_bit",
    "get_scale",
    "get_zero_point",
    "is_bfloat16",
    "is_differentible_dtype",
    "is_dtype_equal",
    "is_lowbit",
    "is_quantize",
    "qint1",
    "qint4",
    "qint8",
    "qint32",
    "quint4",
    "quint8",
]


class QuantDtypeMeta(
    collections.namedtuple(
        "QuantDtypeMeta", ["name", "cname", "np_dtype_str", "qmin", "qmax", "is_unsigned"]
    )
):
    """Metadata of a quantized dtype: its names, storage dtype and integer range.

    Args:
        name: a unique name, e.g. ``"qint8"``.
        cname: the dtype's name in the runtime (``"QuantizedS8"``), or None.
        np_dtype_str: the NumPy dtype that stores the values (``"int8"``).
        qmin: the smallest quantized value.
        qmax: the largest quantized value.
        is_unsigned: whether the storage is unsigned; by default read from ``np_dtype_str``.

    Examples:
        >>> from megengine.quantization import QuantDtypeMeta
        >>> QuantDtypeMeta("quint8", "Quantized8Asymm", "uint8", 0, 255).is_unsigned
        True
    """

    def __new__(cls, name, cname, np_dtype_str, qmin, qmax, is_unsigned=None):
        if not isinstance(np_dtype_str, str):
            raise TypeError(f"QuantDtypeMeta: np_dtype_str must be a str, got {np_dtype_str!r}")
        if is_unsigned is None:
            is_unsigned = np_dtype_str[0] == "u"
        return super().__new__(cls, name, cname, np_dtype_str, qmin, qmax, is_unsigned)

    # a dtype meta is a singleton: fake quantization compares them by identity
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


# Pickles name a class by its module: MegEngine's lives in megengine.core.tensor.dtype (which
# re-exports this one), so a pickled tensor's qparams load in either library.
QuantDtypeMeta.__module__ = "megengine.core.tensor.dtype"

_builtin_quant_dtypes = {
    "quint8": QuantDtypeMeta("quint8", "Quantized8Asymm", "uint8", 0, 255),
    "qint8": QuantDtypeMeta("qint8", "QuantizedS8", "int8", -128, 127),
    "qint8_narrow": QuantDtypeMeta("qint8_narrow", "QuantizedS8", "int8", -127, 127),
    "quint4": QuantDtypeMeta("quint4", "Quantized4Asymm", "uint8", 0, 15),
    "qint4": QuantDtypeMeta("qint4", "QuantizedS4", "int8", -8, 7),
    "qint1": QuantDtypeMeta("qint1", "QuantizedS1", "int8", 0, 1),
    "qint32": QuantDtypeMeta("qint32", "QuantizedS32", "int32", -(2**31), 2**31 - 1),
    "quint2": QuantDtypeMeta("quint2", None, "uint8", 0, 3),
    "qint2": QuantDtypeMeta("qint2", None, "int8", -2, 1),
}


def create_quantized_dtype(dtype_meta, scale, zp):
    """The NumPy dtype of a quantized tensor, as MegEngine describes one: the storage dtype with
    ``metadata={"mgb_dtype": {"name", "scale"[, "zero_point"]}}``. Unsigned dtypes need an integer
    zero point; signed ones have none.

    Args:
        dtype_meta: a :class:`QuantDtypeMeta` with a ``cname``.
        scale: the scale, a number.
        zp: the zero point, an integer or None.

    Returns:
        the numpy dtype.

    Examples:
        >>> from megengine.core.tensor.dtype import _builtin_quant_dtypes, create_quantized_dtype
        >>> dt = create_quantized_dtype(_builtin_quant_dtypes["qint8"], 0.5, None)
        >>> dt, dt.metadata["mgb_dtype"]
        (dtype('int8'), {'name': 'QuantizedS8', 'scale': 0.5})
    """
    # A float scale and an int zero point are the keys of _made: the arguments as given, so a
    # hit skips the checks below, which the entry passed when it was made.
    key = None
    if type(scale) is float and (zp is None or type(zp) is int):
        key = (dtype_meta, scale, zp)
        made = _made.get(key)
        if made is not None and made[1] == made[2]:
            return made[0]
    if dtype_meta.cname is None:
        raise ValueError(f"dtype {dtype_meta.name} without cname attr is not supported.")
    info = {"name": dtype_meta.cname, "scale": float(scale)}
    if dtype_meta.is_unsigned:
        if zp is None or int(zp) != zp:
            raise ValueError("zero_point should be an integer")
        zp = int(zp)
        if not dtype_meta.qmin <= zp <= dtype_meta.qmax:
            raise ValueError(
                f"zero_point should be within [{dtype_meta.qmin}, {dtype_meta.qmax}] for "
                f"{dtype_meta.name}"
            )
        info["zero_point"] = zp
    dt = np.dtype(dtype_meta.np_dtype_str, metadata={"mgb_dtype": info})
    # -0.0 == 0.0 and nan != nan: only a positive scale is a key that means one dtype
    if key is not None and scale > 0:
        if len(_made) >= _MADE_MAX:  # a program sweeping scales: start over
            _made.clear()
        _made[key] = (dt, info, dict(info))
    return dt


# Quantized dtypes by (QuantDtypeMeta, scale, zero point), made once: building one takes 1 us
# and quantized modules make their bias dtype on every call. numpy dtypes are immutable, but the
# "mgb_dtype" dict in their metadata is not: an entry (dtype, that dict, a copy of it as made) is
# reused while the dict still equals the copy.
_made = {}
_MADE_MAX = 1024


# The classes of the storage dtypes (int8, uint8, int32): a type() test, where isinstance of
# np.dtype takes its metaclass's check, a quarter of get_scale(t.dtype).
_STORAGE_TYPES = frozenset(type(np.dtype(t)) for t in ("int8", "uint8", "int32"))


def _mgb_info(dtype):
    if type(dtype) not in _STORAGE_TYPES:
        if dtype is None:
            return None
        dtype = np.dtype(dtype)
    meta = dtype.metadata
    return None if meta is None else meta.get("mgb_dtype")


def is_quantize(dtype):
    """Whether ``dtype`` is a quantized dtype (a NumPy dtype carrying ``mgb_dtype`` metadata).

    Args:
        dtype: a NumPy dtype, or anything ``np.dtype`` accepts.

    Returns:
        bool.

    Examples:
        >>> import numpy as np
        >>> from megengine.core.tensor.dtype import is_quantize, qint8
        >>> is_quantize(qint8(0.1)), is_quantize(np.int8)
        (True, False)
    """
    try:
        return _mgb_info(dtype) is not None
    except TypeError:
        return False


def _quant_info(dtype, what):
    info = _mgb_info(dtype)
    if info is None:
        raise ValueError(f"{what}: {dtype!r} is not a quantized dtype")
    return info


def get_scale(dtype):
    """The scale of a quantized dtype.

    Args:
        dtype: a quantized NumPy dtype.

    Returns:
        float; ValueError for a dtype that is not quantized.

    Examples:
        >>> from megengine.core.tensor.dtype import get_scale, qint8
        >>> round(get_scale(qint8(0.1)), 6)
        0.1
    """
    info = _mgb_info(dtype)
    if info is None:
        raise ValueError(f"get_scale: {dtype!r} is not a quantized dtype")
    return info["scale"]


def get_zero_point(dtype):
    """The zero point of an asymmetric quantized dtype (quint8, quint4).

    Args:
        dtype: a quantized NumPy dtype with a zero point.

    Returns:
        int; ValueError for a symmetric or non-quantized dtype.

    Examples:
        >>> from megengine.core.tensor.dtype import get_zero_point, quint8
        >>> get_zero_point(quint8(0.1, 128))
        128
    """
    info = _quant_info(dtype, "get_zero_point")
    if "zero_point" not in info:
        raise ValueError(f"get_zero_point: {info['name']} is symmetric and has no zero point")
    return info["zero_point"]


def is_dtype_equal(dt0, dt1):
    """Whether two dtypes are equal, the quantization parameters included (NumPy's ``==``
    ignores metadata) and scales compared in float32, as the runtime keeps them.

    Args:
        dt0: a dtype.
        dt1: a dtype.

    Returns:
        bool.

    Examples:
        >>> from megengine.core.tensor.dtype import is_dtype_equal, qint8
        >>> is_dtype_equal(qint8(0.1), qint8(0.1)), is_dtype_equal(qint8(0.1), qint8(0.2))
        (True, False)
    """
    dt0, dt1 = np.dtype(dt0), np.dtype(dt1)
    a, b = _mgb_info(dt0), _mgb_info(dt1)
    if dt0 != dt1 or (a is None) != (b is None):
        return False
    # the runtime keeps scales in float32: 0.1 and float32(0.1) are one dtype
    return a is None or (
        a["name"] == b["name"]
        and np.float32(a["scale"]) == np.float32(b["scale"])
        and a.get("zero_point") == b.get("zero_point")
    )


def get_dtype_bit(dtype_name):
    """The number of bits of a dtype named ``dtype_name`` (its one number; bool is 1).

    Args:
        dtype_name: a name such as ``"qint8"`` or ``"float16"``.

    Returns:
        int.

    Examples:
        >>> from megengine.core.tensor.dtype import get_dtype_bit
        >>> get_dtype_bit("quint4"), get_dtype_bit("bool")
        (4, 1)
    """
    if dtype_name == "bool":
        return 1
    numbers = re.findall(r"\d+", dtype_name)
    if len(numbers) != 1:
        raise ValueError(f"get_dtype_bit: dtype name {dtype_name!r} must hold exactly one number")
    return int(numbers[0])


def is_lowbit(dtype):
    """Whether ``dtype`` is one of MegEngine's sub-byte intb dtypes, which NeoMeg has none of.

    Args:
        dtype: a dtype.

    Returns:
        bool: always False.

    Examples:
        >>> import numpy as np
        >>> from megengine.core.tensor.dtype import is_lowbit
        >>> is_lowbit(np.int8)
        False
    """
    return False


# MegEngine's bfloat16 is a NumPy dtype of its extension's (``pybfloat16``); NeoMeg's is
# ml_dtypes', which has the same bits, rounds float32 the same way (to nearest, ties to even)
# and pickles. A bfloat16 tensor's ``dtype`` and ``numpy()`` use it.
bfloat16 = np.dtype(ml_dtypes.bfloat16)


def is_bfloat16(dtype):
    """Whether ``dtype`` is bfloat16: :data:`bfloat16` (a NumPy dtype) or the name.

    Args:
        dtype: a dtype or a name.

    Returns:
        bool.

    Examples:
        >>> from megengine.core.tensor.dtype import bfloat16, is_bfloat16
        >>> is_bfloat16(bfloat16), is_bfloat16("bfloat16"), is_bfloat16("float16")
        (True, True, False)
    """
    if isinstance(dtype, str):
        return dtype == "bfloat16"
    try:
        return np.dtype(dtype) == bfloat16
    except TypeError:
        return False


def is_differentible_dtype(dtype):
    """Whether gradients flow through tensors of ``dtype`` (the float dtypes).

    Args:
        dtype: a dtype or a name.

    Returns:
        bool.

    Examples:
        >>> import numpy as np
        >>> from megengine.core.tensor.dtype import is_differentible_dtype
        >>> is_differentible_dtype(np.float32), is_differentible_dtype(np.int32)
        (True, False)
    """
    if is_bfloat16(dtype):
        return True
    return np.dtype(dtype) in (np.float32, np.float16)


def _make(name):
    meta = _builtin_quant_dtypes[name]
    if meta.is_unsigned:

        def make(scale, zero_point):
            return create_quantized_dtype(meta, scale, zero_point)

        make.__doc__ = f"""A {name} dtype: {meta.np_dtype_str} values v in [{meta.qmin}, {meta.qmax}] standing
    for ``scale * (v - zero_point)``.

    Args:
        scale: the scale, a positive number.
        zero_point: the zero point, an integer in [{meta.qmin}, {meta.qmax}].

    Returns:
        the NumPy dtype.

    Examples:
        >>> from megengine.core.tensor.dtype import {name}
        >>> {name}(0.5, 3).metadata["mgb_dtype"]
        {{'name': '{meta.cname}', 'scale': 0.5, 'zero_point': 3}}
    """
    else:

        def make(scale):
            return create_quantized_dtype(meta, scale, None)

        make.__doc__ = f"""A {name} dtype: {meta.np_dtype_str} values v in [{meta.qmin}, {meta.qmax}] standing
    for ``scale * v``.

    Args:
        scale: the scale, a positive number.

    Returns:
        the NumPy dtype.

    Examples:
        >>> from megengine.core.tensor.dtype import {name}
        >>> {name}(0.5).metadata["mgb_dtype"]
        {{'name': '{meta.cname}', 'scale': 0.5}}
    """
    make.__name__ = make.__qualname__ = name
    return make


quint8 = _make("quint8")
qint8 = _make("qint8")
qint32 = _make("qint32")
quint4 = _make("quint4")
qint4 = _make("qint4")
qint1 = _make("qint1")


def _convert_to(name):
    meta = _builtin_quant_dtypes[name]

    def convert(arr, q):
        if not isinstance(arr, np.ndarray):
            raise ValueError("arr parameter should be instance of np.ndarray")  # noqa: TRY004 (MegEngine's)
        info = _mgb_info(q)
        if info is None or info["name"] != meta.cname:
            raise ValueError(f"dtype parameter should be a {name} dtype")
        zp = info.get("zero_point", 0) if meta.is_unsigned else 0
        q_values = np.round(arr / info["scale"]) + zp
        return q_values.clip(meta.qmin, meta.qmax).astype(q)

    convert.__name__ = convert.__qualname__ = f"convert_to_{name}"
    convert.__doc__ = f"""Quantizes a float NumPy array into {name} (NumPy's rounding, half to even).

    Args:
        arr: the float ndarray.
        q: the target {name} dtype.

    Returns:
        the quantized ndarray.

    Examples:
        >>> import numpy as np
        >>> from megengine.core.tensor import dtype as D
        >>> q = D.{name}(0.5{", 1" if meta.is_unsigned else ""})
        >>> D.convert_to_{name}(np.array([1.0, -0.2]), q).dtype == q
        True
    """
    return convert


def _convert_from(name):
    meta = _builtin_quant_dtypes[name]

    def convert(arr):
        if not isinstance(arr, np.ndarray):
            raise ValueError("arr parameter should be instance of np.ndarray")  # noqa: TRY004 (MegEngine's)
        info = _mgb_info(arr.dtype)
        if info is None or info["name"] != meta.cname:
            raise ValueError(f"arr's dtype should be a {name} dtype")
        zp = info.get("zero_point", 0) if meta.is_unsigned else 0
        return (arr.astype(np.float32) - zp) * info["scale"]

    convert.__name__ = convert.__qualname__ = f"convert_from_{name}"
    convert.__doc__ = f"""Dequantizes a {name} NumPy array into float32.

    Args:
        arr: the {name} ndarray.

    Returns:
        the float ndarray.

    Examples:
        >>> import numpy as np
        >>> from megengine.core.tensor import dtype as D
        >>> q = D.{name}(0.5{", 1" if meta.is_unsigned else ""})
        >>> D.convert_from_{name}(np.array([1], dtype=q)).tolist()
        [{0.0 if meta.is_unsigned else 0.5}]
    """
    return convert


convert_to_quint8, convert_from_quint8 = _convert_to("quint8"), _convert_from("quint8")
convert_to_qint8, convert_from_qint8 = _convert_to("qint8"), _convert_from("qint8")
convert_to_qint32, convert_from_qint32 = _convert_to("qint32"), _convert_from("qint32")
convert_to_quint4, convert_from_quint4 = _convert_to("quint4"), _convert_from("quint4")
convert_to_qint4, convert_from_qint4 = _convert_to("qint4"), _convert_from("qint4")
convert_to_qint1, convert_from_qint1 = _convert_to("qint1"), _convert_from("qint1")
