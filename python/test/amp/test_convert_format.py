"""amp.convert_tensor_format / convert_module_format: MegEngine 1.13's NHWC marking (which
tensors, in place or on a copy); NeoMeg keeps the values and the NCHW shape, so results equal
the unconverted ones."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine import amp
from megengine.autodiff import GradManager


def test_tensor_in_place_and_copy():
    x = mge.Tensor(np.arange(24, dtype="float32").reshape(1, 2, 3, 4))
    y = amp.convert_tensor_format(x, inplace=False)
    assert (y.format, x.format, y.shape) == ("nhwc", "default", (1, 2, 3, 4))
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert amp.convert_tensor_format(x) is x and x.format == "nhwc"
    assert amp.convert_tensor_format(x, inplace=False) is x  # already NHWC
    five = mge.Tensor(np.zeros((1, 2, 3, 4, 5), "float32"))
    assert amp.convert_tensor_format(five).format == "nhwc"


def test_other_ranks_are_left_alone():
    for shape in ((3,), (2, 3), (1, 2, 3)):
        t = mge.Tensor(np.zeros(shape, "float32"))
        assert amp.convert_tensor_format(t, inplace=False) is t and t.format == "default"
    with pytest.raises(TypeError, match="Tensor"):
        amp.convert_tensor_format(np.zeros((1, 2, 3, 4)))


def test_copy_keeps_the_gradient_path():
    x = mge.Parameter(np.ones((1, 1, 2, 2), "float32"))
    gm = GradManager().attach([x])
    with gm:
        y = amp.convert_tensor_format(x, inplace=False)
        gm.backward((y * 3).sum())
    assert x.grad.numpy().tolist() == [[[[3.0, 3.0], [3.0, 3.0]]]]


def test_module_marks_4d_and_5d_tensors_only_and_computes_the_same():
    def net():
        np.random.seed(0)
        return M.Sequential(M.Conv2d(2, 3, 3, padding=1), M.BatchNorm2d(3))

    seq = net()
    copy = amp.convert_module_format(seq, inplace=False)
    assert copy is not seq
    # MegEngine 1.13 marks these, all 4-D: conv weight and bias, BatchNorm's four
    assert {n: t.format for n, t in copy.named_tensors()} == {
        "0.bias": "nhwc",
        "0.weight": "nhwc",
        "1.bias": "nhwc",
        "1.running_mean": "nhwc",
        "1.running_var": "nhwc",
        "1.weight": "nhwc",
    }
    assert all(t.format == "default" for _, t in seq.named_tensors())
    x = mge.Tensor(np.random.default_rng(1).standard_normal((2, 2, 5, 5)).astype("float32"))
    xn = amp.convert_tensor_format(x, inplace=False)
    np.testing.assert_allclose(copy(xn).numpy(), seq(x).numpy(), rtol=1e-5, atol=1e-6)
    assert amp.convert_module_format(seq) is seq and seq[0].weight.format == "nhwc"
    lin = amp.convert_module_format(M.Linear(3, 2))
    assert lin.weight.format == "default"  # 2-D
    with pytest.raises(TypeError, match="Module"):
        amp.convert_module_format(F.relu)
