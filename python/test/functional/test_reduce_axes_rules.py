"""MegEngine's rules for reductions over several axes: duplicated axes are an AssertionError,
and argmax/argmin over a tuple reduce one axis at a time, the highest first, each over the
indices the previous step returned."""

import numpy as np
import pytest

import megengine.functional as F
from megengine import Tensor


def _sequential_arg(np_fn, x, axes, keepdims=False):
    out = x
    for a in sorted((a % x.ndim for a in axes), reverse=True):
        out = np_fn(out, axis=a)
        if keepdims:
            out = np.expand_dims(out, a)
    return out


@pytest.mark.parametrize("fn, np_fn", [(F.argmax, np.argmax), (F.argmin, np.argmin)])
@pytest.mark.parametrize("axes", [(0, 1), (-1, -2), (1, 0), (0, 2), (2,)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_arg_reduce_over_axes(fn, np_fn, axes, keepdims):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 5, 6)).astype(np.float32)
    out = fn(Tensor(x), axis=axes, keepdims=keepdims)
    expect = _sequential_arg(np_fn, x, axes, keepdims)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.numpy(), expect)


def test_arg_reduce_known_values():
    # argmax over axis 1 gives [2, 2], whose argmax is 0 (not the flat argmax 5).
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert F.argmax(x, axis=(0, 1)).item() == 0
    assert F.argmin(Tensor([[3.0, 1.0], [0.0, 5.0]]), axis=(1, 0)).item() == 1


@pytest.mark.parametrize("fn", [F.sum, F.mean, F.max, F.argmax])
def test_duplicated_axes_raise(fn):
    x = Tensor(np.ones((2, 3), dtype=np.float32))
    with pytest.raises(AssertionError, match="duplicated"):
        fn(x, axis=(-1, 1))


def test_distinct_negative_axes_reduce():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_allclose(F.sum(Tensor(x), axis=(-1, 0)).numpy(), x.sum(axis=(2, 0)))


@pytest.mark.parametrize(
    "fn, np_fn",
    [(F.sum, np.sum), (F.mean, np.mean), (F.max, np.max), (F.min, np.min), (F.prod, np.prod)],
)
@pytest.mark.parametrize("axes", [None, (0, 1, 2), (2, 0, 1), (1, 2), (0, 1), (0, 2), 1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_over_axes_matches_numpy(fn, np_fn, axes, keepdims):
    # Every axis (F.sum(x): one reshape to x.size elements), runs of adjacent axes (merged into
    # one), axes apart and one axis, the shapes keepdims gives and the bool rule's int32 sums.
    rng = np.random.default_rng(5)
    x = rng.uniform(0.5, 1.5, size=(3, 4, 5)) * rng.choice([-1, 1], size=(3, 4, 5))
    x = x.astype(np.float32)
    out = fn(Tensor(x), axis=axes, keepdims=keepdims)
    expect = np_fn(x.astype(np.float64), axis=axes, keepdims=keepdims)
    assert out.shape == expect.shape
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-5)
    if fn in (F.sum, F.max):
        b = x > 0
        got = fn(Tensor(b), axis=axes, keepdims=keepdims)
        np.testing.assert_array_equal(got.numpy(), np_fn(b, axis=axes, keepdims=keepdims))
