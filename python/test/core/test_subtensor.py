"""Basic indexing (ints and slices) as the Subtensor view op: every index expression against
NumPy, views sharing memory until written (MegEngine 1.13's value semantics: a view taken
before an assignment keeps its elements), gradients through GradManager, and jit.trace with
dump and load."""

import io
import itertools

import numpy as np
import pytest
from megengine.core._imperative_rt import MegEngineIndexError

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager
from megengine.jit import trace
from megengine.utils.comp_graph_tools import GraphInference

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

_BOUNDS = [None, -7, -4, -1, 0, 1, 3, 4, 7]
_STEPS = [None, -3, -2, -1, 1, 2, 5]


def _slices():
    return [slice(b, e, s) for b, e, s in itertools.product(_BOUNDS, _BOUNDS, _STEPS)]


@pytest.mark.parametrize("step", _STEPS)
def test_every_slice_of_an_axis_matches_numpy(step):
    # Every start and stop against axis 1 (4 elements) and axis 2, through the fast path (a lone
    # slice) and the general one (a tuple).
    t = mge.Tensor(A)
    for s in _slices():
        if s.step != step:
            continue
        np.testing.assert_array_equal(t[s].numpy(), A[s], err_msg=str(s))
        np.testing.assert_array_equal(t[:, s].numpy(), A[:, s], err_msg=str(s))
        np.testing.assert_array_equal(t[1, ..., s].numpy(), A[1, ..., s], err_msg=str(s))


@pytest.mark.parametrize(
    "index",
    [
        0,
        -1,
        2,
        -3,
        (1, 2),
        (-1, -1, -1),
        (0, slice(None), 3),
        (Ellipsis, 1),
        (Ellipsis,),
        Ellipsis,
        (slice(None),),
        (None,),
        (None, 0),
        (0, None),
        (slice(None), None, 1),
        (None, slice(None, None, -1), None, 2, None),
        (0, slice(1, None), -1),
        (slice(2, 0, -1), Ellipsis, slice(None, None, -2)),
        (slice(5, 10), 0),
        (slice(0, 0), slice(None), slice(4, 1)),
        (np.int64(1), np.int32(-2)),
        (1, Ellipsis, None),
        (Ellipsis, None),
        (slice(1, None), slice(None, None, 3), slice(-2, None)),
    ],
)
def test_basic_index_matches_numpy(index):
    got = mge.Tensor(A)[index]
    want = A[index]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_zero_d_one_element_and_empty_tensors():
    s = mge.Tensor(np.float32(3))
    assert s[...].shape == () and s[...].item() == 3.0
    assert s[None].shape == (1,) and s[None].numpy().tolist() == [3.0]
    one = mge.Tensor(np.array([7.0], np.float32))
    assert one[0].shape == () and one[0].item() == 7.0
    assert one[-1].item() == 7.0
    assert one[::-1].numpy().tolist() == [7.0] and one[1:].shape == (0,)
    e = mge.Tensor(np.zeros((0, 3), np.float32))
    assert e[::-1].shape == (0, 3) and e[:, 1].shape == (0,) and e[:, ::-2].shape == (0, 2)
    with pytest.raises(IndexError, match="out of bounds"):
        e[0]


def test_non_contiguous_inputs():
    t = mge.Tensor(A).transpose(2, 0, 1)  # a strided view
    a = A.transpose(2, 0, 1)
    for index in [1, (slice(None, None, -1), 2), (slice(1, 4, 2), slice(None), -1), (-1, 0)]:
        np.testing.assert_array_equal(t[index].numpy(), a[index], err_msg=str(index))
    # A view of a view, then arithmetic reading negative strides.
    v = mge.Tensor(A)[::-1][:, ::-2][1]
    np.testing.assert_array_equal(v.numpy(), A[::-1][:, ::-2][1])
    np.testing.assert_array_equal((v * 2 + v).numpy(), 3 * A[::-1][:, ::-2][1])
    np.testing.assert_array_equal(v.sum(axis=0).numpy(), A[::-1][:, ::-2][1].sum(axis=0))


def test_errors():
    t = mge.Tensor(A)
    for bad in [3, -4, (0, 4), (0, 0, 5), (0, 0, -6), 2**40, (slice(None), -(2**40))]:
        with pytest.raises(IndexError, match="out of bounds"):
            t[bad]
    with pytest.raises(MegEngineIndexError):
        t[3]
    with pytest.raises(ValueError, match="step cannot be zero"):
        t[::0]
    with pytest.raises(ValueError, match="step cannot be zero"):
        t[0, 1:2:0]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0, 0]
    with pytest.raises(IndexError, match="too many indices"):
        mge.Tensor(1.0)[0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]


def test_huge_bounds_clamp():
    t = mge.Tensor(A)
    np.testing.assert_array_equal(t[-(2**40) : 2**40].numpy(), A)
    np.testing.assert_array_equal(t[2**40 : -(2**40) : -1].numpy(), A[::-1])
    np.testing.assert_array_equal(t[:, :: 2**40].numpy(), A[:, :: 2**40])


def test_a_view_shares_memory_until_written():
    x = mge.Tensor(A.copy())
    y, z, w, v, e = x[0], x[1:3, ::-1], x[:, 1], x[:], x[...]
    # Views: the source's strides (a copy would be dense), and new tensor objects.
    assert z._layout().startswith("{2(20),4(-5),5(1)}"), z._layout()
    assert w._layout().startswith("{3(20),5(1)}"), w._layout()
    assert v is not x and e is not x
    # MegEngine 1.13 (checked with its wheel): tensors are values; an assignment to x or an
    # in-place operator makes x stand for a new value, and the views keep the old elements.
    x[0] = 5
    x[...] = 7
    x += 1
    np.testing.assert_array_equal(y.numpy(), A[0])
    np.testing.assert_array_equal(z.numpy(), A[1:3, ::-1])
    np.testing.assert_array_equal(w.numpy(), A[:, 1])
    np.testing.assert_array_equal(v.numpy(), A)
    np.testing.assert_array_equal(e.numpy(), A)
    np.testing.assert_array_equal(x.numpy(), np.full_like(A, 8))
    # Writing into a view leaves its source alone.
    x = mge.Tensor(A.copy())
    y = x[1]
    y[0] = 100
    y += 1
    y[::-1] = y
    np.testing.assert_array_equal(x.numpy(), A)
    want = A[1].copy()
    want[0] = 100
    want += 1
    np.testing.assert_array_equal(y.numpy(), want[::-1])


@pytest.mark.parametrize(
    "index",
    [0, -1, (slice(None), 2), (slice(None, None, -1), slice(1, 4, 2), -2), (None, 1, ..., 3), ()],
)
def test_gradients_through_grad_manager(index):
    x = mge.Parameter(A)
    gm = GradManager().attach(x)
    w = None
    with gm:
        y = x[index]
        w = mge.Tensor(np.arange(y.size, dtype=np.float32).reshape(y.shape) + 1)
        gm.backward((y * w).sum())
    want = np.zeros_like(A)
    want[index] = w.numpy()
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_gradient_of_an_empty_slice_is_zeros():
    x = mge.Parameter(A)
    gm = GradManager().attach(x)
    with gm:
        gm.backward(x[2:1].sum() + x[0, 0, 0])
    want = np.zeros_like(A)
    want[0, 0, 0] = 1
    np.testing.assert_array_equal(x.grad.numpy(), want)


@pytest.mark.parametrize("symbolic", [False, True])
def test_trace_dump_and_load_of_a_sliced_model(symbolic):
    def f(t):
        return t[1:, ::-2] * 2 + t[0, 1::2, None, 1] + t[-1][::2].sum()

    fn = trace(f, symbolic=symbolic, capture_as_const=True)
    rng = np.random.default_rng(0)
    for _ in range(3):
        a = rng.standard_normal((3, 4, 5)).astype("float32")
        np.testing.assert_allclose(
            fn(mge.Tensor(a)).numpy(), f(mge.Tensor(a)).numpy(), rtol=1e-5, atol=1e-6
        )
    buf = io.BytesIO()
    fn.dump(buf, arg_names=["x"], output_names=["y"], optimize_for_inference=False)
    a = rng.standard_normal((3, 4, 5)).astype("float32")
    want = a[1:, ::-2] * 2 + a[0, 1::2, None, 1] + a[-1][::2].sum()
    np.testing.assert_allclose(
        GraphInference(buf.getvalue()).run(a)["y"], want, rtol=1e-5, atol=1e-6
    )


def test_traced_training_step_through_a_slice():
    x = mge.Parameter(A.copy())
    gm = GradManager().attach(x)

    @trace(symbolic=True)
    def step():
        with gm:
            loss = (x[1:, ::-1, 2] ** 2).sum()
            gm.backward(loss)
        g = x.grad
        x.grad = None
        return g

    want = np.zeros_like(A)
    want[1:, ::-1, 2] = 2 * A[1:, ::-1, 2]
    for _ in range(2):
        np.testing.assert_array_equal(step().numpy(), want)


_KERNEL_CASES = {
    "relu": lambda t: F.relu(t),
    "add_row": lambda t: t + t[0],
    "exp": lambda t: F.exp(t),
    "pow": lambda t: t**2,
    "clip": lambda t: F.clip(t, -0.5, 0.5),
    "where": lambda t: F.where(t > 0, t, -t),
    "astype": lambda t: t.astype("float16").astype("float32"),
    "sum": lambda t: t.sum(axis=2),
    "max": lambda t: t.max(axis=-1),
    "mean": lambda t: t.mean(),
    "softmax": lambda t: F.softmax(t, axis=1),
    "logsumexp": lambda t: F.logsumexp(t, axis=3),
    "layer_norm": lambda t: F.nn.layer_norm(t, (10,), affine=False),
    "batch_norm": lambda t: F.batch_norm(t, training=True),
    "matmul": lambda t: F.matmul(t, mge.Tensor(np.linspace(-1, 1, 70, dtype="float32").reshape(10, 7))),
    "conv2d": lambda t: F.conv2d(t, mge.Tensor(np.linspace(-1, 1, 270, dtype="float32").reshape(5, 6, 3, 3)), padding=1),
    "max_pool": lambda t: F.max_pool2d(t, 2),
    "avg_pool": lambda t: F.avg_pool2d(t, 2),
    "concat": lambda t: F.concat([t, t], axis=1),
    "transpose": lambda t: t.transpose(3, 2, 1, 0) * 1,
    "reshape": lambda t: t.reshape(4, -1),
    "cumsum": lambda t: F.cumsum(t, axis=2),
    "topk": lambda t: F.topk(t.reshape(-1, 40), 3)[0],
    "argsort": lambda t: F.argsort(t.reshape(-1, 40)),
    "gather": lambda t: F.gather(t, 1, mge.Tensor(np.ones((4, 2, 4, 5), "int32"))),
    "advanced_index": lambda t: t[[0, 2], :, [1, 3]],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(_KERNEL_CASES))
def test_kernels_read_negative_stride_views(name):
    # A view with negative strides on three axes goes to the kernels as it is: each must give
    # what it gives on a contiguous copy of the same values.
    a = np.random.default_rng(0).standard_normal((4, 6, 8, 10)).astype("float32")
    v = mge.Tensor(a)[::-1, :, ::-2, ::-1]
    assert "(-" in v._layout()
    c = mge.Tensor(v.numpy())
    f = _KERNEL_CASES[name]
    np.testing.assert_allclose(f(v).numpy(), f(c).numpy(), rtol=1e-5, atol=1e-5)
