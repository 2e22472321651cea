"""Quantization parameters as MegEngine 1.13 defines them (a mode, a quantized dtype's
metadata, a scale and a zero point), and fake quantization of a tensor by them."""

import abc
import enum

import numpy as np

from ..core import _imperative_rt as _rt
from ..core.ops import builtin
from ..core.tensor.array_method import Tensor, as_tensor, cached_op
from ..core.tensor.quant_dtype import QuantDtypeMeta, _builtin_quant_dtypes, create_quantized_dtype

# QuantMode is exported too, outside __all__: an Enum's signature is not its documentation
__all__ = ["QParams", "QuantDtypeMeta", "create_qparams", "fake_quant_bias", "fake_quant_tensor"]


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


class LSQParams(QParams):
    """LSQ's quantization parameters: :class:`QParams` with the scale's gradient factor.

    Args:
        mode: a :class:`QuantMode`, or None.
        dtype_meta: a :class:`QuantDtypeMeta`, or None.
        scale: the scale (a Tensor), or None.
        zero_point: the zero point (a Tensor), or None.
        grad_scale: the factor on the scale's gradient (a Tensor).

    Examples:
        >>> from megengine.quantization.utils import LSQParams, QuantMode
        >>> LSQParams(QuantMode.SYMMERTIC, None, None, None, 0.5).grad_scale
        0.5
    """

    __slots__ = "mode", "dtype_meta", "scale", "zero_point", "grad_scale"  # noqa: RUF023

    def __init__(self, mode, dtype_meta, scale, zero_point, grad_scale):
        super().__init__(mode, dtype_meta, scale, zero_point)
        self.grad_scale = grad_scale


class QParamsModuleMixin(abc.ABC):
    """What observers and learnable fake quantizers share: their quantization parameters
    (:meth:`get_qparams`) and the quantized dtype those make."""

    def get_quantized_dtype(self):
        """The quantized NumPy dtype of :meth:`get_qparams` (see
        :func:`~.utils.create_quantized_dtype`).

        Returns:
            the numpy dtype.

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import MinMaxObserver
            >>> ob = MinMaxObserver()
            >>> _ = ob(mge.Tensor([-1.0, 2.54]))
            >>> ob.get_quantized_dtype().metadata["mgb_dtype"]["scale"]  # 2.54 / 127.5
            0.01992156...
        """
        qparams = self.get_qparams()
        scale = float(qparams.scale.numpy()) if qparams.scale is not None else None
        zero_point = int(qparams.zero_point.numpy()) if qparams.zero_point is not None else None
        return create_quantized_dtype(qparams.dtype_meta, scale, zero_point)

    @abc.abstractmethod
    def get_qparams(self):
        pass

    def _check_qparams(self, qparams):
        # What set_qparams accepts, as MegEngine 1.13 checks it: a scale, and this module's
        # dtype (a missing dtype_meta becomes it).
        if qparams.scale is None:
            raise AssertionError("Can not get an initialized scale")
        if qparams.dtype_meta is None:
            qparams.dtype_meta = self.dtype
        else:
            assert qparams.dtype_meta is self.dtype, (
                "input qparams' dtype is not equal to self.dtype.\n"
                f"qparams.dtype_meta={qparams.dtype_meta}\nself.dtype={self.dtype}"
            )


def _f32(value, like):
    if isinstance(value, Tensor):
        return value
    return as_tensor(np.asarray(value, dtype=np.float32), device=like.device)


def _apply(op_cls, qmin, qmax, *inputs):
    op = cached_op(op_cls, qmin=int(qmin), qmax=int(qmax))
    return _rt.apply(op, *inputs)[0]


def tqt_forward(qmin, qmax, inp, scale):
    """TQT fake quantization: ``clip(round(inp / 2**scale), qmin, qmax) * 2**scale``, with the
    gradient of the log2 step ``scale`` (runs the TQT op).

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization.utils import tqt_forward
        >>> tqt_forward(-4, 3, mge.Tensor([0.3, 5.0]), mge.Tensor(-1.0)).numpy().tolist()
        [0.5, 1.5]
    """
    return _apply(builtin.TQT, qmin, qmax, inp, _f32(scale, inp))


def lsq_forward(qmin, qmax, inp, step_size, zero_point=None, scale_grad=None):
    """LSQ fake quantization with a learnable ``step_size`` (runs the LSQ op); ``scale_grad``
    multiplies the step's gradient.

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization.utils import lsq_forward
        >>> lsq_forward(-4, 3, mge.Tensor([0.3, 5.0]), mge.Tensor(0.5)).numpy().tolist()
        [0.5, 1.5]
    """
    zero_point = _f32(0.0 if zero_point is None else zero_point, inp)
    scale_grad = _f32(1.0 if scale_grad is None else scale_grad, inp)
    return _apply(builtin.LSQ, qmin, qmax, inp, _f32(step_size, inp), zero_point, scale_grad)


def fake_quant_tensor(inp, qparams):
    """Fake quantization of ``inp`` by ``qparams``: rounds ``inp / scale`` (half away from zero),
    adds the zero point (asymmetric mode only), clamps to the dtype's ``[qmin, qmax]`` and maps
    back, ``(q - zero_point) * scale``. The gradient passes straight through where the value was
    not clamped, and is zero where it was.

    Args:
        inp: the tensor to fake-quantize.
        qparams: a :class:`QParams` giving the mode, the dtype's range, scale and zero_point.

    Returns:
        a tensor like ``inp``.

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization import create_qparams, fake_quant_tensor
        >>> q = create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.5))
        >>> fake_quant_tensor(mge.Tensor([0.2, 0.3, -1.26, 100.0]), q).numpy().tolist()
        [0.0, 0.5, -1.5, 63.5]
    """
    scale = _f32(qparams.scale, inp)
    if qparams.mode == QuantMode.ASYMMERTIC:
        zero_point = _f32(qparams.zero_point, inp)
    else:
        zero_point = _f32(np.zeros(1, np.float32), inp)
    meta = qparams.dtype_meta
    return _apply(builtin.FakeQuant, meta.qmin, meta.qmax, inp, scale, zero_point)


def fake_quant_bias(bias, inp, w_qat):
    """Fake quantization of a bias to qint32 with scale ``inp``'s scale times ``w_qat``'s, as
    MegEngine does: only when both carry symmetric int8 qparams with a scale; otherwise
    ``bias`` is returned unchanged.

    Args:
        bias: the bias tensor, or None.
        inp: the input tensor, whose ``qparams`` give the activation's scale.
        w_qat: the fake-quantized weight, whose ``qparams`` give the weight's scale.

    Returns:
        the fake-quantized bias (its ``qparams`` set), or ``bias``.

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization import create_qparams, fake_quant_bias
        >>> x, w = mge.Tensor([1.0]), mge.Tensor([1.0])
        >>> x.qparams.update(create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.1)))
        >>> w.qparams.update(create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.2)))
        >>> b = fake_quant_bias(mge.Tensor([0.123]), x, w)
        >>> round(float(b.numpy()[0]), 4), b.qparams.dtype_meta.name
        (0.12, 'qint32')
    """
    b_qat = bias
    if (
        getattr(inp, "qparams", None) is None
        or getattr(w_qat, "qparams", None) is None
        or bias is None
    ):
        return b_qat
    inp_params, w_params = inp.qparams, w_qat.qparams
    if inp_params.scale is None or w_params.scale is None:
        return b_qat
    # only symmetric int8 activations and weights, as MegEngine 1.13
    if inp_params.mode != QuantMode.SYMMERTIC or inp_params.mode != w_params.mode:
        return b_qat
    if inp_params.dtype_meta is None or w_params.dtype_meta is None:
        return b_qat
    if inp_params.dtype_meta.np_dtype_str != "int8":
        return b_qat
    if w_params.dtype_meta.np_dtype_str != "int8":
        return b_qat
    b_param = create_qparams(
        w_params.mode, _builtin_quant_dtypes["qint32"], scale=inp_params.scale * w_params.scale
    )
    b_qat = fake_quant_tensor(bias, b_param)
    b_qat.qparams.update(b_param)
    return b_qat
