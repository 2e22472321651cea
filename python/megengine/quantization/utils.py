"""Quantization parameters as MegEngine 1.13 defines them: a mode, a quantized dtype's
metadata, a scale and a zero point."""

import collections
import enum

# QuantMode is exported too, outside __all__: an Enum's signature is not its documentation
__all__ = ["QParams", "QuantDtypeMeta", "create_qparams"]


class QuantMode(enum.Enum):
    """Quantization mode: symmetric (no zero point) or asymmetric.

    The members keep MegEngine's spelling (``SYMMERTIC``, ``ASYMMERTIC``), which scripts use.

    Args:
        value: 1 for SYMMERTIC, 2 for ASYMMERTIC.

    Examples:
        >>> from megengine.quantization import QuantMode
        >>> QuantMode(1), QuantMode.ASYMMERTIC.value
        (<QuantMode.SYMMERTIC: 1>, 2)
    """

    SYMMERTIC = 1
    ASYMMERTIC = 2


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


class QParams:
    """Quantization parameters of a tensor (or of a fake-quantize or observer module).

    Args:
        mode: a :class:`QuantMode`, or None.
        dtype_meta: a :class:`QuantDtypeMeta`, or None.
        scale: the scale (a Tensor), or None.
        zero_point: the zero point (a Tensor), or None.

    Examples:
        >>> import megengine as mge
        >>> mge.Tensor([1.0]).qparams  # a float tensor's: symmetric, nothing set
        QParams(mode=QuantMode.SYMMERTIC, dtype_meta=None, scale=None, zero_point=None)
    """

    # MegEngine's order, which repr and update follow
    __slots__ = "mode", "dtype_meta", "scale", "zero_point"  # noqa: RUF023

    def __init__(self, mode, dtype_meta, scale, zero_point):
        self.mode = mode
        self.dtype_meta = dtype_meta
        self.scale = scale
        self.zero_point = zero_point

    def update(self, qparams):
        """Copies every field of another QParams into this one.

        Args:
            qparams: the QParams to copy from.

        Returns:
            None

        Examples:
            >>> from megengine.quantization import QParams, QuantMode
            >>> q = QParams(QuantMode.SYMMERTIC, None, None, None)
            >>> q.update(QParams(QuantMode.ASYMMERTIC, None, None, None))
            >>> q.mode
            <QuantMode.ASYMMERTIC: 2>
        """
        for key in self.__slots__:
            setattr(self, key, getattr(qparams, key))

    def __eq__(self, other):
        if len(self.__slots__) != len(getattr(other, "__slots__", ())):
            return False
        return all(
            hasattr(other, key) and _same(getattr(self, key), getattr(other, key))
            for key in self.__slots__
        )

    __hash__ = None  # mutable

    def __repr__(self):
        content = ", ".join(f"{key}={getattr(self, key)}" for key in self.__slots__)
        return f"QParams({content})"


def _same(a, b):
    if a is b:
        return True
    if a is None or b is None:
        return False
    eq = a == b
    # tensors compare elementwise; equal parameters are equal everywhere
    return bool(eq.all()) if hasattr(eq, "all") else bool(eq)


def create_qparams(mode=QuantMode.SYMMERTIC, dtype_meta=None, scale=None, zero_point=None):
    """Makes a :class:`QParams`.

    Args:
        mode: a :class:`QuantMode`, or None.
        dtype_meta: a :class:`QuantDtypeMeta`, the name of a built-in one (``"qint8"``,
            ``"quint8"``, ``"qint8_narrow"``, ``"qint4"``, ``"quint4"``, ``"qint32"``, ...), or
            None.
        scale: the scale (a Tensor), or None.
        zero_point: the zero point (a Tensor), or None.

    Returns:
        the QParams.

    Examples:
        >>> from megengine.quantization import create_qparams
        >>> q = create_qparams(dtype_meta="qint8")
        >>> q.mode, q.dtype_meta.qmin, q.dtype_meta.qmax
        (<QuantMode.SYMMERTIC: 1>, -128, 127)
    """
    if isinstance(dtype_meta, str):
        if dtype_meta not in _builtin_quant_dtypes:
            raise ValueError(
                f"create_qparams: unknown quantized dtype {dtype_meta!r} "
                f"(one of {sorted(_builtin_quant_dtypes)})"
            )
        dtype_meta = _builtin_quant_dtypes[dtype_meta]
    elif dtype_meta is not None and not isinstance(dtype_meta, QuantDtypeMeta):
        raise TypeError(
            f"create_qparams: dtype_meta must be a QuantDtypeMeta, a name or None, got "
            f"{type(dtype_meta).__name__}"
        )
    if mode is not None and not isinstance(mode, QuantMode):
        raise TypeError(f"create_qparams: mode must be a QuantMode or None, got {mode!r}")
    return QParams(mode, dtype_meta, scale, zero_point)
