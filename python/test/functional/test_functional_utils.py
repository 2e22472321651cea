"""megengine.functional.utils: MegEngine 1.13's ``F.utils._assert_equal`` and the old homes of
``topk_accuracy`` and ``copy``."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F


def test_assert_equal_passes_within_maxerr_and_returns_expect():
    x = F.ones((2, 3, 4, 5))
    out = F.utils._assert_equal(x, F.zeros((2, 3, 4, 5)) + 1.00001)
    np.testing.assert_array_equal(out.numpy(), np.ones((2, 3, 4, 5), np.float32))
    # the error is absolute below 1 and relative above: 200 vs 200.01 is 5e-5
    big = mge.Tensor([1.0, 200.0])
    F.utils._assert_equal(big, mge.Tensor([1.0, 200.01]))
    with pytest.raises(RuntimeError):
        F.utils._assert_equal(big, mge.Tensor([1.0, 200.01]), maxerr=1e-5)
    F.utils._assert_equal(mge.Tensor([0.0]), mge.Tensor([0.0]), maxerr=0)


def test_assert_equal_raises_runtime_error_as_megengine():
    x = F.ones((2, 3))
    with pytest.raises(RuntimeError, match="exceeds maxerr"):
        F.utils._assert_equal(x, F.zeros((2, 3)) + 1.1)
    with pytest.raises(RuntimeError, match="exceeds maxerr"):
        F.utils._assert_equal(x, mge.Tensor(np.full((2, 3), np.nan, np.float32)))
    with pytest.raises(RuntimeError, match="shape"):
        F.utils._assert_equal(x, F.ones((3, 2)))
    with pytest.raises(RuntimeError, match="dtype"):
        F.utils._assert_equal(x, F.ones((2, 3), dtype="int32"))


def test_old_names_stay():
    assert F.utils.topk_accuracy is F.topk_accuracy
    assert F.utils.copy is F.copy
    assert F.utils.__all__ == ["topk_accuracy"]
