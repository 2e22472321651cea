"""megengine.module.init: fills, distributions, fans and gains."""

import math

import numpy as np
import pytest

import megengine as mge
import megengine.module as M
from megengine.module import init


def _zeros(*shape, dtype=np.float32):
    return mge.Parameter(np.zeros(shape, dtype=dtype))


def test_fills_keep_identity_shape_and_dtype():
    w = _zeros(2, 3)
    ident = id(w)
    init.fill_(w, 2.5)
    assert id(w) == ident and w.shape == (2, 3) and w.dtype == np.float32
    np.testing.assert_array_equal(w.numpy(), np.full((2, 3), 2.5))
    init.ones_(w)
    np.testing.assert_array_equal(w.numpy(), np.ones((2, 3)))
    init.zeros_(w)
    np.testing.assert_array_equal(w.numpy(), np.zeros((2, 3)))
    h = _zeros(4, dtype=np.float16)
    init.fill_(h, 1.5)
    assert h.dtype == np.float16 and h.numpy().tolist() == [1.5] * 4
    bf = mge.Parameter([1.0, 2.0], dtype="bfloat16")
    init.fill_(bf, 3.0)
    assert bf._dtype_name == "bfloat16" and bf.numpy().astype(np.float32).tolist() == [3.0, 3.0]
    init.normal_(bf)
    assert bf._dtype_name == "bfloat16"
    s = mge.Parameter(np.float32(0.0))
    init.ones_(s)
    assert s.shape == () and s.item() == 1.0
    e = _zeros(0, 3)
    init.normal_(e)
    init.uniform_(e)
    assert e.shape == (0, 3)
    with pytest.raises(TypeError, match="fill_ expects a Tensor"):
        init.fill_(np.zeros(3), 1.0)


def test_uniform_and_normal_statistics():
    w = _zeros(200, 200)
    init.uniform_(w, -2.0, 3.0)
    v = w.numpy()
    assert v.min() >= -2.0 and v.max() < 3.0
    assert abs(v.mean() - 0.5) < 0.05 and abs(v.var() - 25 / 12) < 0.1
    init.normal_(w, mean=1.0, std=0.5)
    v = w.numpy()
    assert abs(v.mean() - 1.0) < 0.01 and abs(v.std() - 0.5) < 0.01
    h = _zeros(1000, dtype=np.float16)
    init.normal_(h)
    assert h.dtype == np.float16 and 0.9 < float(h.numpy().astype(np.float32).std()) < 1.1
    with pytest.raises(ValueError, match="needs a <= b"):
        init.uniform_(w, 1, 0)
    with pytest.raises(ValueError, match="std must be >= 0"):
        init.normal_(w, std=-1)


def test_seeding_reproduces_values():
    a, b = _zeros(10), _zeros(10)
    mge.random.seed(5)
    init.normal_(a)
    mge.random.seed(5)
    init.normal_(b)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    init.normal_(b)
    assert not np.array_equal(a.numpy(), b.numpy())
    mge.random.seed(3)
    m1 = M.Linear(4, 3)
    mge.random.seed(3)
    m2 = M.Linear(4, 3)
    np.testing.assert_array_equal(m1.weight.numpy(), m2.weight.numpy())
    init.uniform_(a, 2.0, 2.0)
    assert a.numpy().tolist() == [2.0] * 10


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1
    assert init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01**2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a number"):
        init.calculate_gain("leaky_relu", "a")


@pytest.mark.parametrize(
    "shape,fans",
    [
        ((4, 3), (3, 4)),
        ((8, 2, 3, 3), (18, 72)),
        ((8, 2, 5), (10, 40)),
        ((6, 2, 3, 3, 3), (54, 162)),
        ((2, 4, 3, 1, 1), (12, 6)),  # NCHW reading, also of a grouped weight (as MegEngine)
    ],
)
def test_fans(shape, fans):
    w = _zeros(*shape)
    assert init.calculate_fan_in_and_fan_out(w) == fans
    assert init.calculate_correct_fan(w, "fan_in") == fans[0]
    assert init.calculate_correct_fan(w, "fan_out") == fans[1]
    assert init.calculate_correct_fan(w, "FAN_IN") == fans[0]


def test_fan_errors():
    with pytest.raises(ValueError, match=r"at least 2 dims, got shape \(3,\)"):
        init.calculate_fan_in_and_fan_out(_zeros(3))
    with pytest.raises(ValueError, match="mode must be"):
        init.calculate_correct_fan(_zeros(3, 3), "fan_avg")


def test_xavier_and_msra_scales():
    w = _zeros(300, 200)  # fan_in 200, fan_out 300
    init.xavier_uniform_(w, gain=2.0)
    bound = 2.0 * math.sqrt(6 / 500)
    v = w.numpy()
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.95 * bound
    assert abs(v.std() - bound / math.sqrt(3)) < 0.01 * bound
    init.xavier_normal_(w)
    assert abs(w.numpy().std() - math.sqrt(2 / 500)) < 0.002
    init.msra_uniform_(w, nonlinearity="relu")
    bound = math.sqrt(3) * math.sqrt(2) / math.sqrt(200)
    assert np.abs(w.numpy()).max() <= bound and np.abs(w.numpy()).max() > 0.95 * bound
    init.msra_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / 300)) < 0.002
    init.msra_normal_(w, a=1.0)  # leaky_relu with slope 1: gain 1
    assert abs(w.numpy().std() - math.sqrt(1 / 200)) < 0.002


def test_module_namespace():
    assert M.init is init
