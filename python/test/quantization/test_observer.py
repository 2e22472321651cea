"""Observers: scales and zero points against hand-computed values (MegEngine 1.13's formulas),
the moving average's first-batch rule, enable/disable and train/eval, the histogram search
against its MinMax range, PassiveObserver, QConfig checks."""

from functools import partial

import numpy as np
import pytest

import megengine as mge
from megengine.quantization import (
    ExponentialMovingAverageObserver,
    HistogramObserver,
    MinMaxObserver,
    PassiveObserver,
    QConfig,
    QuantMode,
    SyncExponentialMovingAverageObserver,
    SyncMinMaxObserver,
    create_qparams,
    ema_fakequant_qconfig,
)


def test_min_max_symmetric_and_asymmetric():
    ob = MinMaxObserver(dtype="qint8")
    ob(mge.Tensor([-0.5, 1.0]))
    ob(mge.Tensor([-3.0, 0.2]))
    assert (float(ob.min_val), float(ob.max_val)) == (-3.0, 1.0)
    q = ob.get_qparams()
    assert q.mode == QuantMode.SYMMERTIC and q.zero_point is None
    np.testing.assert_allclose(float(q.scale), 3.0 / 127.5, rtol=1e-6)

    ob = MinMaxObserver(mode=QuantMode.ASYMMERTIC, dtype="quint8")
    ob(mge.Tensor([0.5, 2.0, 4.0]))  # the range always includes 0
    q = ob.get_qparams()
    np.testing.assert_allclose(float(q.scale), 4.0 / 255, rtol=1e-6)
    assert float(q.zero_point) == 0.0
    ob(mge.Tensor([-1.1]))
    q = ob.get_qparams()
    scale = 5.1 / 255
    np.testing.assert_allclose(float(q.scale), scale, rtol=1e-6)
    assert float(q.zero_point) == 0 - np.round(-1.1 / scale)  # 55
    dt = ob.get_quantized_dtype()
    assert dt.metadata["mgb_dtype"]["zero_point"] == 55


def test_scale_floor_and_unobserved():
    ob = MinMaxObserver(eps=1e-3)
    ob(mge.Tensor([0.0, 1e-5]))
    assert float(ob.get_qparams().scale) == pytest.approx(1e-3)


def test_disable_and_eval_stop_observing():
    ob = MinMaxObserver()
    ob(mge.Tensor([1.0]))
    ob.disable()
    ob(mge.Tensor([10.0]))
    assert float(ob.max_val) == 1.0
    ob.enable()
    ob.eval()
    assert not ob.enabled
    ob(mge.Tensor([10.0]))
    assert float(ob.max_val) == 1.0
    ob.train()
    ob(mge.Tensor([10.0]))
    assert float(ob.max_val) == 10.0


def test_sync_observers_without_distribution_equal_plain():
    x = mge.Tensor([-2.0, 3.0])
    a, b = MinMaxObserver(), SyncMinMaxObserver()
    a(x), b(x)
    assert float(a.get_qparams().scale) == float(b.get_qparams().scale)
    a, b = ExponentialMovingAverageObserver(), SyncExponentialMovingAverageObserver()
    for v in ([-2.0, 3.0], [-1.0, 5.0]):
        a(mge.Tensor(v)), b(mge.Tensor(v))
    assert float(a.max_val) == float(b.max_val)


def test_ema():
    ob = ExponentialMovingAverageObserver(momentum=0.9)
    ob(mge.Tensor([-2.0, 4.0]))  # the first batch sets the range
    assert (float(ob.min_val), float(ob.max_val)) == (-2.0, 4.0)
    ob(mge.Tensor([-1.0, 1.0]))
    np.testing.assert_allclose(float(ob.min_val), -2.0 * 0.9 - 0.1, rtol=1e-6)
    np.testing.assert_allclose(float(ob.max_val), 4.0 * 0.9 + 0.1, rtol=1e-6)
    np.testing.assert_allclose(float(ob.get_qparams().scale), 3.7 / 127.5, rtol=1e-6)
    ob.set_momentum(0.0)
    ob(mge.Tensor([-1.0, 1.0]))  # this batch still uses the old momentum (MegEngine's order)
    np.testing.assert_allclose(float(ob.max_val), 3.7 * 0.9 + 0.1, rtol=1e-6)
    ob(mge.Tensor([-1.0, 1.0]))
    assert float(ob.max_val) == 1.0
    assert sorted(ob.state_dict()) == ["max_val", "min_val", "momentum", "runtime_momentum"]


def test_histogram_observer():
    # the scales MegEngine 1.13 gives for the same data (its L2 search over the histogram)
    rng = np.random.RandomState(0)
    data = rng.randn(4000).astype(np.float32)
    data[0] = 40.0
    ob = HistogramObserver(bins=256)
    ob(mge.Tensor(data[:2000]))
    ob(mge.Tensor(data[2000:] * 1.5))  # a wider second batch merges the histograms
    assert ob.histogram.shape == (256,)
    np.testing.assert_allclose(float(ob.histogram.sum()), 4000, rtol=1e-6)
    np.testing.assert_allclose(float(ob.get_qparams().scale), 0.3114185929298401, rtol=1e-6)
    data = rng.randn(5000).astype(np.float32)
    data[:3] = [30, -25, 28]
    ob = HistogramObserver(bins=256)
    ob(mge.Tensor(data))
    scale = float(ob.get_qparams().scale)
    np.testing.assert_allclose(scale, 0.23360906541347504, rtol=1e-6)
    assert scale < 30 / 127.5  # the search narrowed the range


def test_passive_observer():
    ob = PassiveObserver("qint8")
    with pytest.raises(AssertionError, match="initialized scale"):
        ob.set_qparams(create_qparams(dtype_meta="qint8"))
    ob.set_qparams(create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.5)))
    ob.scale = 0.25
    assert float(ob.get_qparams().scale) == 0.25
    assert float(ob.orig_scale) == 0.5
    with pytest.raises(AssertionError):
        ob.scale = -1.0


def test_qconfig():
    with pytest.raises(ValueError, match="must not receive observer instance"):
        QConfig(MinMaxObserver(), None, None, None)
    assert ema_fakequant_qconfig.act_observer().momentum.item() == pytest.approx(0.9)
    q = QConfig(partial(MinMaxObserver, dtype="qint4"), None, None, None)
    assert q.weight_observer().qmax == 7
    with pytest.raises(ValueError, match="unknown dtype"):
        MinMaxObserver(dtype="int3")
