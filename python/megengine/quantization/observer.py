"""Observers, as MegEngine 1.13's: modules that pass their input through while recording the
statistics (running min/max, a moving average, a histogram) from which :meth:`get_qparams`
derives a scale and zero point."""

import math
from abc import abstractmethod
from copy import deepcopy

import numpy as np

from .. import functional as F
from ..distributed import WORLD, is_distributed
from ..distributed.functional import all_reduce_max, all_reduce_min
from ..module import Module
from ..tensor import Tensor
from .fake_quant import _drop_narrow_range, _dtype_meta
from .utils import QParamsModuleMixin, QuantMode, create_qparams

__all__ = [
    "ExponentialMovingAverageObserver",
    "HistogramObserver",
    "MinMaxObserver",
    "Observer",
    "PassiveObserver",
    "SyncExponentialMovingAverageObserver",
    "SyncMinMaxObserver",
]


class Observer(Module, QParamsModuleMixin):
    """Base class of observers: records statistics of its input for quantization.

    Args:
        dtype: a built-in dtype's name or a :class:`~.QuantDtypeMeta`, the dtype whose scale and
            zero point to collect.

    Examples:
        >>> from megengine.quantization import MinMaxObserver
        >>> ob = MinMaxObserver(dtype="quint8")
        >>> ob.qmin, ob.qmax, ob.enabled
        (0, 255, True)
    """

    def __init__(self, dtype, **kwargs):
        _drop_narrow_range(kwargs)
        super().__init__()
        self.dtype = _dtype_meta(dtype)
        self.qmin = self.dtype.qmin
        self.qmax = self.dtype.qmax
        self.enabled = True

    def enable(self):
        """Makes :meth:`forward` record statistics.

        Examples:
            >>> from megengine.quantization import MinMaxObserver
            >>> ob = MinMaxObserver()
            >>> ob.disable(); ob.enable()
            >>> ob.enabled
            True
        """
        self.enabled = True

    def disable(self):
        """Makes :meth:`forward` only pass its input through.

        Examples:
            >>> from megengine.quantization import MinMaxObserver
            >>> ob = MinMaxObserver()
            >>> ob.disable()
            >>> ob.enabled
            False
        """
        self.enabled = False

    def train(self, mode=True, recursive=True):
        """Sets training mode, and enables the observer in training and disables it in eval.

        Examples:
            >>> from megengine.quantization import MinMaxObserver
            >>> ob = MinMaxObserver()
            >>> ob.eval()
            >>> ob.enabled
            False
        """
        super().train(mode, recursive)
        if mode:
            self.enable()
        else:
            self.disable()

    @abstractmethod
    def forward(self, x):
        pass


class MinMaxObserver(Observer):
    """Records the running min and max of its input; the scale maps the range (including 0) onto
    the dtype's: ``max(|min|, |max|) / ((qmax - qmin) / 2)`` when symmetric, ``(max - min) / (qmax
    - qmin)`` with zero point ``qmin - round(min / scale)`` when asymmetric, never below ``eps``.

    Args:
        mode: :class:`~.QuantMode` SYMMERTIC or ASYMMERTIC.
        eps: the smallest scale.
        dtype: a built-in dtype's name or a :class:`~.QuantDtypeMeta`.

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization import MinMaxObserver
        >>> ob = MinMaxObserver()
        >>> _ = ob(mge.Tensor([-1.0, 2.55]))
        >>> round(float(ob.get_qparams().scale), 6)  # 2.55 / 127.5
        0.02
    """

    def __init__(self, mode=QuantMode.SYMMERTIC, eps=0.00001, dtype="qint8", **kwargs):
        super().__init__(dtype, **kwargs)
        self.mode = mode
        self.min_val = Tensor(np.finfo(np.float32).max, dtype=np.float32)
        self.max_val = Tensor(np.finfo(np.float32).min, dtype=np.float32)
        self.scale_limit = eps

    def _calculate_qparams(self, inp_min_val, inp_max_val):
        min_val = F.minimum(0.0, inp_min_val)
        max_val = F.maximum(0.0, inp_max_val)
        if self.mode == QuantMode.SYMMERTIC:
            symmetric_max_vals = F.maximum(-min_val, max_val)
            # the floor keeps the scale off zero before anything was observed
            scale = F.maximum(symmetric_max_vals / ((self.qmax - self.qmin) / 2), self.scale_limit)
            zero_point = None
        else:
            scale = F.maximum((max_val - min_val) / (self.qmax - self.qmin), self.scale_limit)
            zero_point = self.qmin - F.round(min_val / scale)
        return create_qparams(self.mode, self.dtype, scale=scale, zero_point=zero_point)

    def get_qparams(self):
        """The qparams of the range seen so far.

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import MinMaxObserver, QuantMode
            >>> ob = MinMaxObserver(mode=QuantMode.ASYMMERTIC, dtype="quint8")
            >>> _ = ob(mge.Tensor([-1.0, 4.1]))
            >>> q = ob.get_qparams()
            >>> round(float(q.scale), 6), float(q.zero_point)  # 5.1 / 255, 0 - round(-50)
            (0.02, 50.0)
        """
        return self._calculate_qparams(self.min_val, self.max_val)

    def forward(self, x_orig):
        if self.enabled:
            x = x_orig.detach()
            self.min_val[...] = F.minimum(self.min_val, x.min())
            self.max_val[...] = F.maximum(self.max_val, x.max())
        return x_orig


def _global_min_max(x):
    if is_distributed():
        return all_reduce_min(x.min(), WORLD), all_reduce_max(x.max(), WORLD)
    return x.min(), x.max()


class SyncMinMaxObserver(MinMaxObserver):
    """A :class:`MinMaxObserver` whose min and max are reduced over all distributed workers.

    Args:
        mode: :class:`~.QuantMode` SYMMERTIC or ASYMMERTIC.
        eps: the smallest scale.
        dtype: a built-in dtype's name or a :class:`~.QuantDtypeMeta`.

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization import SyncMinMaxObserver
        >>> ob = SyncMinMaxObserver()
        >>> _ = ob(mge.Tensor([-1.0, 2.55]))
        >>> float(ob.min_val), float(ob.max_val)
        (-1.0, 2.549999952316284)
    """

    def forward(self, x_orig):
        # MegEngine tests the bound method here, which is always true: disable() does not stop it
        if self.enable:
            min_x, max_x = _global_min_max(x_orig.detach())
            self.min_val[...] = F.minimum(self.min_val, min_x)
            self.max_val[...] = F.maximum(self.max_val, max_x)
        return x_orig


class ExponentialMovingAverageObserver(MinMaxObserver):
    """A :class:`MinMaxObserver` whose min and max are moving averages, ``v = v * momentum + (1 -
    momentum) * new`` (the first batch sets them).

    Args:
        momentum: the moving average's momentum.
        mode: :class:`~.QuantMode` SYMMERTIC or ASYMMERTIC.
        eps: the smallest scale.
        dtype: a built-in dtype's name or a :class:`~.QuantDtypeMeta`.

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization import ExponentialMovingAverageObserver
        >>> ob = ExponentialMovingAverageObserver(momentum=0.5)
        >>> _ = ob(mge.Tensor([-2.0, 2.0]))
        >>> _ = ob(mge.Tensor([-1.0, 4.0]))
        >>> float(ob.min_val), float(ob.max_val)
        (-1.5, 3.0)
    """

    def __init__(
        self, momentum=0.9, mode=QuantMode.SYMMERTIC, eps=0.00001, dtype="qint8", **kwargs
    ):
        super().__init__(mode, eps, dtype, **kwargs)
        self.momentum = Tensor(momentum, dtype="float32")
        # 0 on the first batch, so that no branch is needed (a trace records none)
        self.runtime_momentum = Tensor(0.0)

    def set_momentum(self, momentum):
        """Sets the moving average's momentum.

        Examples:
            >>> from megengine.quantization import ExponentialMovingAverageObserver
            >>> ob = ExponentialMovingAverageObserver()
            >>> ob.set_momentum(0.5)
            >>> float(ob.momentum)
            0.5
        """
        self.momentum = Tensor(momentum, dtype="float32")

    def _update(self, min_x, max_x):
        m = self.runtime_momentum
        self.min_val[...] = self.min_val * m + (1 - m) * min_x
        self.max_val[...] = self.max_val * m + (1 - m) * max_x
        self.runtime_momentum[...] = self.momentum

    def forward(self, x_orig):
        if self.enabled:
            x = x_orig.detach()
            self._update(x.min(), x.max())
        return x_orig


class SyncExponentialMovingAverageObserver(ExponentialMovingAverageObserver):
    """An :class:`ExponentialMovingAverageObserver` whose batch min and max are reduced over all
    distributed workers.

    Args:
        momentum: the moving average's momentum.
        mode: :class:`~.QuantMode` SYMMERTIC or ASYMMERTIC.
        eps: the smallest scale.
        dtype: a built-in dtype's name or a :class:`~.QuantDtypeMeta`.

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization import SyncExponentialMovingAverageObserver
        >>> ob = SyncExponentialMovingAverageObserver()
        >>> _ = ob(mge.Tensor([-2.0, 2.0]))
        >>> float(ob.max_val)
        2.0
    """

    def forward(self, x_orig):
        if self.enabled:
            self._update(*_global_min_max(x_orig.detach()))
        return x_orig


class HistogramObserver(MinMaxObserver):
    """A :class:`MinMaxObserver` that also keeps a running histogram of its input, and picks the
    range that minimises the L2 quantization error over it (for calibration). It reads its
    input on the host.

    Args:
        bins: the histogram's bins.
        upsample_rate: the resolution factor when histograms of different ranges are combined.
        mode: :class:`~.QuantMode` SYMMERTIC or ASYMMERTIC.
        eps: the smallest scale.
        dtype: a built-in dtype's name or a :class:`~.QuantDtypeMeta`.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.quantization import HistogramObserver
        >>> ob = HistogramObserver(bins=64)
        >>> _ = ob(mge.Tensor(np.linspace(-1, 1, 1000, dtype="float32")))
        >>> 0.0065 < float(ob.get_qparams().scale) < 0.008
        True
    """

    def __init__(
        self,
        bins=2048,
        upsample_rate=128,
        mode=QuantMode.SYMMERTIC,
        eps=0.00001,
        dtype="qint8",
        **kwargs,
    ):
        super().__init__(mode, eps, dtype, **kwargs)
        self.bins = bins
        self.upsample_rate = upsample_rate
        self.dst_nbins = self.dtype.qmax - self.dtype.qmin + 1
        self.histogram = Tensor([-1] + [0.0] * (bins - 1), dtype="float32")

    def _non_linear_param_search(self):
        # MegEngine's (after PyTorch's): shrink [start_bin, end_bin] from the side with less
        # mass while the L2 error of quantizing the histogram onto it keeps falling.
        np_min_val = self.min_val.numpy()
        np_max_val = self.max_val.numpy()
        np_histogram = self.histogram.numpy()
        assert len(np_histogram) == self.bins, "bins mistmatch"
        bin_width = (np_max_val - np_min_val) / self.bins

        def _get_norm(delta_begin, delta_end, density):
            # density * integral of x^2 over [begin, end]
            norm = (delta_end**3 - delta_begin**3) / 3
            return density * norm

        def _compute_quantization_error(next_start_bin, next_end_bin):
            norm = 0.0
            dst_bin_width = bin_width * (next_end_bin - next_start_bin + 1) / self.dst_nbins
            if dst_bin_width == 0.0:
                return 0.0
            for src_bin in range(self.bins):
                src_bin_begin = (src_bin - next_start_bin) * bin_width
                src_bin_end = src_bin_begin + bin_width
                dst_bin_of_begin = min(
                    self.dst_nbins - 1, max(0.0, math.floor(src_bin_begin / dst_bin_width))
                )
                dst_bin_of_end = min(
                    self.dst_nbins - 1, max(0.0, math.floor(src_bin_end / dst_bin_width))
                )
                dst_bin_of_begin_center = dst_bin_of_begin * dst_bin_width + dst_bin_width / 2
                density = np_histogram[src_bin] / bin_width
                if dst_bin_of_begin == dst_bin_of_end:
                    delta_begin = src_bin_begin - dst_bin_of_begin_center
                    delta_end = src_bin_end - dst_bin_of_begin_center
                    norm = norm + _get_norm(delta_begin, delta_end, density)
                else:
                    delta_begin = src_bin_begin - dst_bin_of_begin_center
                    delta_end = dst_bin_width / 2
                    norm = norm + _get_norm(delta_begin, delta_end, density)
                    norm = norm + (dst_bin_of_end - dst_bin_of_begin - 1) * _get_norm(
                        -dst_bin_width / 2, dst_bin_width / 2, density
                    )
                    dst_bin_of_end_center = dst_bin_of_end * dst_bin_width + dst_bin_width / 2
                    delta_begin = -dst_bin_width / 2
                    delta_end = src_bin_end - dst_bin_of_end_center
                    norm = norm + _get_norm(delta_begin, delta_end, density)
            return norm

        total = sum(np_histogram)
        c_sum = np.cumsum(np_histogram, axis=0)
        stepsize = 1e-5
        alpha, beta = 0.0, 1.0
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha = alpha + stepsize
            next_beta = beta - stepsize
            left, right = start_bin, end_bin
            while left < end_bin and c_sum[left] < next_alpha * total:
                left = left + 1
            while right > start_bin and c_sum[right] > next_beta * total:
                right = right - 1
            next_start_bin, next_end_bin = start_bin, end_bin
            if (left - start_bin) > (end_bin - right):
                next_start_bin = left
                alpha = next_alpha
            else:
                next_end_bin = right
                beta = next_beta
            if next_start_bin == start_bin and next_end_bin == end_bin:
                continue
            norm = _compute_quantization_error(next_start_bin, next_end_bin)
            if norm > norm_min:
                break
            norm_min = norm
            start_bin, end_bin = next_start_bin, next_end_bin

        new_min = self.min_val + Tensor(bin_width * start_bin, dtype=np.float32)
        new_max = self.min_val + Tensor(bin_width * (end_bin + 1), dtype=np.float32)
        return new_min, new_max

    def get_qparams(self):
        """The qparams of the range the histogram search picks.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.quantization import HistogramObserver
            >>> ob = HistogramObserver(bins=16)
            >>> _ = ob(mge.Tensor(np.linspace(0, 1, 100, dtype="float32")))
            >>> float(ob.get_qparams().scale) <= 1 / 127.5
            True
        """
        new_min, new_max = self._non_linear_param_search()
        return self._calculate_qparams(new_min, new_max)

    def _combine_histograms(
        self, orig_hist, new_hist, upsample_rate, downsample_rate, start_idx, n_bins
    ):
        upsampled_histogram = new_hist.repeat(upsample_rate)
        histogram_with_output_range = np.zeros(n_bins * downsample_rate)
        histogram_with_output_range[start_idx : n_bins * upsample_rate + start_idx] = (
            upsampled_histogram
        )
        # the integral in double, so that no bin overflows
        integral_histogram = np.cumsum(histogram_with_output_range, 0)[
            downsample_rate - 1 :: downsample_rate
        ]
        shifted_integral_histogram = np.zeros(n_bins)
        shifted_integral_histogram[1:n_bins] = integral_histogram[0:-1]
        interpolated_histogram = (integral_histogram - shifted_integral_histogram) / upsample_rate
        return orig_hist + interpolated_histogram

    def _adjust_min_max(self, combined_min, combined_max, upsample_rate):
        # widen the range so that the old histogram's bins fall on a common grid
        np_min_val = self.min_val.numpy()
        np_max_val = self.max_val.numpy()
        hist_bin_width = (np_max_val - np_min_val) / (self.bins * upsample_rate)
        downsample_rate = int(np.ceil((combined_max - combined_min) / (self.bins * hist_bin_width)))
        e = downsample_rate * (self.bins * hist_bin_width) - (combined_max - combined_min)
        combined_max = combined_max + e / 2
        combined_min = combined_min - e / 2
        start_idx = int(np.round((np_min_val - combined_min) / hist_bin_width))
        return combined_min, combined_max, downsample_rate, start_idx

    def sideeffect_forward(self, x_orig):
        """Adds ``x_orig`` to the histogram and the running range (on the host).

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import HistogramObserver
            >>> ob = HistogramObserver(bins=4)
            >>> ob.sideeffect_forward(mge.Tensor([0.0, 1.0, 2.0, 3.0]))
            >>> ob.histogram.numpy().tolist()
            [1.0, 1.0, 1.0, 1.0]
        """
        x = x_orig.numpy()
        min_val = self.min_val.numpy()
        max_val = self.max_val.numpy()
        histogram = self.histogram.numpy()
        new_min = x.min()
        new_max = x.max()
        if histogram[0] == -1:
            new_histogram, _ = np.histogram(x, self.bins, (new_min, new_max))
        else:
            new_min = min(new_min, min_val)
            new_max = max(new_max, max_val)
            new_min, new_max, downsample_rate, start_idx = self._adjust_min_max(
                new_min, new_max, self.upsample_rate
            )
            new_histogram, _ = np.histogram(x, self.bins, (new_min, new_max))
            new_histogram = new_histogram.astype(np.float64)
            if new_min == min_val and new_max == max_val:
                new_histogram += histogram
            else:
                new_histogram = self._combine_histograms(
                    new_histogram,
                    histogram,
                    self.upsample_rate,
                    downsample_rate,
                    start_idx,
                    self.bins,
                )
        self.histogram = Tensor(new_histogram, dtype="float32")
        self.min_val = Tensor(new_min, dtype="float32")
        self.max_val = Tensor(new_max, dtype="float32")

    def forward(self, x_orig):
        self.sideeffect_forward(x_orig)
        return x_orig


class PassiveObserver(Observer):
    """An observer whose qparams are set, not observed (by :func:`~.reset_qconfig` and
    :func:`~.apply_easy_quant`); its ``scale`` can be assigned.

    Args:
        dtype: a built-in dtype's name or a :class:`~.QuantDtypeMeta`.

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization import PassiveObserver, create_qparams
        >>> ob = PassiveObserver("qint8")
        >>> ob.set_qparams(create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.5)))
        >>> ob.scale = 0.25
        >>> float(ob.get_qparams().scale), float(ob.orig_scale)
        (0.25, 0.5)
    """

    def __init__(self, dtype, **kwargs):
        super().__init__(dtype, **kwargs)
        self.qparams = None
        self.orig_scale = None

    @property
    def scale(self):
        return self.qparams.scale

    @scale.setter
    def scale(self, value):
        assert np.all(value > 0)
        self.qparams.scale[...] = Tensor(value)

    def get_qparams(self):
        """The qparams last set.

        Examples:
            >>> from megengine.quantization import PassiveObserver
            >>> PassiveObserver("qint8").get_qparams() is None
            True
        """
        return self.qparams

    def set_qparams(self, qparams):
        """Keeps a copy of ``qparams`` (which needs a scale) and its scale as ``orig_scale``.

        Args:
            qparams: the initial qparams.

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import PassiveObserver, create_qparams
            >>> ob = PassiveObserver("qint8")
            >>> ob.set_qparams(create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.5)))
            >>> float(ob.scale)
            0.5
        """
        self.qparams = deepcopy(qparams)
        self._check_qparams(qparams)
        self.orig_scale = qparams.scale.numpy()

    def forward(self, x):
        """Returns ``x``: the qparams are set, not observed.

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import PassiveObserver
            >>> PassiveObserver("qint8")(mge.Tensor([1.0])).numpy().tolist()
            [1.0]
        """
        return x
