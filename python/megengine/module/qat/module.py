"""QATModule: the base of the quantization-aware-training versions of float modules."""

from abc import abstractmethod

from ...quantization.utils import fake_quant_bias
from ..module import Module

__all__ = ["QATModule"]


class QATModule(Module):
    """Base class of the QAT modules: holds an observer and a fake quantizer for the weight and
    for the activation (made by :meth:`set_qconfig`) and applies them. Make one from a float
    module with :meth:`from_float_module`, or a whole network with :func:`~.quantize_qat`.

    Args:
        kwargs: ``name`` of the module, and the float module's arguments.

    Examples:
        >>> import megengine.module as M
        >>> from megengine.module.qat import Linear
        >>> from megengine.quantization import ema_fakequant_qconfig
        >>> m = Linear.from_float_module(M.Linear(3, 2))
        >>> m.set_qconfig(ema_fakequant_qconfig)
        >>> type(m.act_observer).__name__, m.weight_fake_quant.dtype.name
        ('ExponentialMovingAverageObserver', 'qint8_narrow')
    """

    with_weight = True
    with_act = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.weight_observer = None
        self.act_observer = None
        self.weight_fake_quant = None
        self.act_fake_quant = None

    def __repr__(self):
        return "QAT." + super().__repr__()

    def set_qconfig(self, qconfig):
        """Makes the observers and fake quantizers ``qconfig`` names (None where it has none).

        Args:
            qconfig: a :class:`~.QConfig`.

        Examples:
            >>> from megengine.module.qat import QuantStub
            >>> from megengine.quantization import min_max_fakequant_qconfig
            >>> m = QuantStub()
            >>> m.set_qconfig(min_max_fakequant_qconfig)
            >>> type(m.act_observer).__name__, m.weight_observer
            ('MinMaxObserver', None)
        """

        def safe_call(func):
            return func() if func is not None else None

        if self.with_act:
            self.act_observer = safe_call(qconfig.act_observer)
            self.act_fake_quant = safe_call(qconfig.act_fake_quant)
        if self.with_weight:
            self.weight_observer = safe_call(qconfig.weight_observer)
            self.weight_fake_quant = safe_call(qconfig.weight_fake_quant)

    def _enable_exec(self, with_module, func, enable):
        if not with_module or not func:
            return
        if enable:
            func.enable()
        else:
            func.disable()

    def set_fake_quant(self, enable):
        """Enables or disables this module's fake quantizers.

        Args:
            enable: True to enable.

        Examples:
            >>> from megengine.module.qat import QuantStub
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> m = QuantStub()
            >>> m.set_qconfig(ema_fakequant_qconfig)
            >>> m.set_fake_quant(False)
            >>> m.act_fake_quant.enabled
            False
        """
        self._enable_exec(self.with_act, self.act_fake_quant, enable)
        self._enable_exec(self.with_weight, self.weight_fake_quant, enable)

    def set_observer(self, enable):
        """Enables or disables this module's observers.

        Args:
            enable: True to enable.

        Examples:
            >>> from megengine.module.qat import QuantStub
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> m = QuantStub()
            >>> m.set_qconfig(ema_fakequant_qconfig)
            >>> m.set_observer(False)
            >>> m.act_observer.enabled
            False
        """
        self._enable_exec(self.with_act, self.act_observer, enable)
        self._enable_exec(self.with_weight, self.weight_observer, enable)

    def _apply_fakequant_with_observer(self, target, fake_quant, observer):
        if observer is None:
            oup = target
            qparams = None
        else:
            oup = observer(target)
            qparams = observer.get_qparams()
        if fake_quant is not None:
            oup = fake_quant(oup, qparams)
            # a learning fake quantizer's own qparams win
            if hasattr(fake_quant, "get_qparams"):
                qparams = fake_quant.get_qparams()
        if qparams is not None:
            oup.qparams.update(qparams)
        return oup

    def apply_quant_weight(self, target):
        """Observes and fake-quantizes a weight with this module's weight observer and fake
        quantizer; the result carries their qparams.

        Args:
            target: the weight.

        Returns:
            the fake-quantized weight.

        Examples:
            >>> import megengine as mge
            >>> from megengine.module.qat import Linear
            >>> from megengine.quantization import min_max_fakequant_qconfig
            >>> m = Linear(1, 1)
            >>> m.set_qconfig(min_max_fakequant_qconfig)
            >>> w = m.apply_quant_weight(mge.Tensor([0.3, -1.27]))
            >>> w.numpy().tolist(), float(w.qparams.scale)  # scale 1.27 / 127
            ([0.29999998211860657, -1.2699999809265137], 0.009999999776482582)
        """
        return self._apply_fakequant_with_observer(
            target, self.weight_fake_quant, self.weight_observer
        )

    def apply_quant_activation(self, target):
        """Observes and fake-quantizes an activation with this module's activation observer and
        fake quantizer; the result carries their qparams.

        Args:
            target: the activation.

        Returns:
            the fake-quantized activation.

        Examples:
            >>> import megengine as mge
            >>> from megengine.module.qat import QuantStub
            >>> from megengine.quantization import min_max_fakequant_qconfig
            >>> m = QuantStub()
            >>> m.set_qconfig(min_max_fakequant_qconfig)
            >>> y = m.apply_quant_activation(mge.Tensor([0.01, -2.55]))  # scale 2.55 / 127.5
            >>> [round(v, 4) for v in y.numpy().tolist()]  # -127.5 steps round to -128
            [0.02, -2.56]
        """
        return self._apply_fakequant_with_observer(target, self.act_fake_quant, self.act_observer)

    def apply_quant_bias(self, target, inp, w_qat):
        """Fake-quantizes a bias (:func:`~.fake_quant_bias`) when both the activation's and the
        weight's fake quantizers are enabled; otherwise returns it unchanged.

        Args:
            target: the bias.
            inp: the module's input (its qparams give the activation scale).
            w_qat: the fake-quantized weight.

        Returns:
            the bias to use.

        Examples:
            >>> import megengine as mge
            >>> from megengine.module.qat import Linear
            >>> m = Linear(1, 1)  # no qconfig: nothing to fake-quantize with
            >>> m.apply_quant_bias(mge.Tensor([0.123]), None, None).numpy().tolist()
            [0.12300000339746475]
        """
        # the bias shares the activation's dtype, so the fake quantizers decide
        if (
            self.act_fake_quant
            and self.act_fake_quant.enabled
            and self.weight_fake_quant
            and self.weight_fake_quant.enabled
        ):
            return fake_quant_bias(target, inp, w_qat)
        return target

    def _get_method_result(self, method, fake_quant, observer):
        if hasattr(fake_quant, method):
            return getattr(fake_quant, method)()
        if hasattr(observer, method):
            return getattr(observer, method)()
        return None

    def get_weight_dtype(self):
        """The weight's quantized NumPy dtype, from the fake quantizer or else the observer.

        Examples:
            >>> from megengine.module.qat import Linear
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> m = Linear(1, 1)
            >>> m.set_qconfig(ema_fakequant_qconfig)
            >>> m.get_weight_dtype().metadata["mgb_dtype"]["name"]
            'QuantizedS8'
        """
        return self._get_method_result(
            "get_quantized_dtype", self.weight_fake_quant, self.weight_observer
        )

    def get_activation_dtype(self):
        """The activation's quantized NumPy dtype, from the fake quantizer or else the observer.

        Examples:
            >>> from megengine.module.qat import QuantStub
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> m = QuantStub()
            >>> m.set_qconfig(ema_fakequant_qconfig)
            >>> m.get_activation_dtype()
            dtype('int8')
        """
        return self._get_method_result(
            "get_quantized_dtype", self.act_fake_quant, self.act_observer
        )

    def get_weight_qparams(self):
        """The weight's qparams, from the fake quantizer or else the observer.

        Examples:
            >>> from megengine.module.qat import Linear
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> m = Linear(1, 1)
            >>> m.set_qconfig(ema_fakequant_qconfig)
            >>> m.get_weight_qparams().dtype_meta.name
            'qint8_narrow'
        """
        return self._get_method_result("get_qparams", self.weight_fake_quant, self.weight_observer)

    def get_activation_qparams(self):
        """The activation's qparams, from the fake quantizer or else the observer.

        Examples:
            >>> from megengine.module.qat import QuantStub
            >>> QuantStub().get_activation_qparams() is None  # no qconfig set
            True
        """
        return self._get_method_result("get_qparams", self.act_fake_quant, self.act_observer)

    @classmethod
    @abstractmethod
    def from_float_module(cls, float_module):
        """Makes the QAT version of ``float_module``, sharing its parameters.

        Args:
            float_module: the float module.

        Examples:
            >>> import megengine.module as M
            >>> from megengine.module.qat import Linear
            >>> f = M.Linear(2, 3)
            >>> Linear.from_float_module(f).weight is f.weight
            True
        """
