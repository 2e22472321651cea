"""megengine.Tensor against NumPy: construction, operators, promotion, methods, indexing."""

import io
import pickle

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F

rng = np.random.default_rng(0)


def test_constructor_follows_megengine():
    assert mge.Tensor([1.0, 2.0]).dtype == np.float32
    assert mge.Tensor(np.arange(3)).dtype == np.int32
    assert mge.Tensor([1, 2], dtype="float16").dtype == np.float16
    assert mge.tensor is mge.Tensor
    t = mge.Tensor(mge.Tensor([1.0]))
    assert t.numpy().tolist() == [1.0]
    assert repr(mge.Tensor([1.0, 2.5])) == f"Tensor([1.  2.5], device={mge.Tensor(1).device})"
    assert repr(mge.Tensor([1, 2])).startswith("Tensor([1 2], dtype=int32, device=")
    assert repr(mge.Parameter([0.123456])).startswith("Parameter([0.1235], device=")


def test_constructor_from_a_tensor_refuses_another_dtype():
    # MegEngine 1.13: Tensor(t, dtype=...) takes t as it is; another dtype is a RuntimeError
    # (astype converts), the same dtype is fine
    x = mge.Tensor([1.5, 2.0])
    assert mge.Tensor(x, dtype=np.float32).numpy().tolist() == [1.5, 2.0]
    assert mge.Tensor(x.astype("int32"), dtype="int32").dtype == np.int32
    for want in (np.int32, "float16", "bfloat16"):
        with pytest.raises(RuntimeError, match="dtype mismatch"):
            mge.Tensor(x, dtype=want)
    with pytest.raises(RuntimeError, match="dtype mismatch"):
        mge.Tensor(x.astype(np.int32), dtype=np.float32)
    # array data is still converted
    assert mge.Tensor(np.array([1.7]), dtype=np.int32).dtype == np.int32


@pytest.mark.parametrize(
    "op",
    ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lt", "le", "gt", "ge", "eq", "ne"],
)
def test_binary_operators_match_numpy_with_broadcast(op):
    a = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 2, (4,)).astype(np.float32)
    import operator

    f = getattr(operator, op)
    np.testing.assert_allclose(f(mge.Tensor(a), mge.Tensor(b)).numpy(), f(a, b), rtol=1e-5)
    np.testing.assert_allclose(f(mge.Tensor(a), 1.5).numpy(), f(a, np.float32(1.5)), rtol=1e-5)
    np.testing.assert_allclose(f(1.5, mge.Tensor(b)).numpy(), f(np.float32(1.5), b), rtol=1e-5)


def test_type_promotion():
    i = mge.Tensor([1, 2, 3])
    f = mge.Tensor([0.5, 0.5, 0.5])
    h = mge.Tensor([1, 2, 3], dtype="float16")
    assert (i + 1).dtype == np.int32
    assert (i + 0.5).dtype == np.float32
    assert (i + f).dtype == np.float32
    assert (h * 2.0).dtype == np.float16
    assert (h + f).dtype == np.float32
    assert (i / 2).dtype == np.float32
    np.testing.assert_array_equal((i / 2).numpy(), [0.5, 1.0, 1.5])
    b = mge.Tensor([True, False])
    assert (b + 1).dtype == np.float32  # as MegEngine 1.13


def test_unary_and_bitwise_operators():
    x = mge.Tensor([-1.5, 2.0])
    np.testing.assert_array_equal((-x).numpy(), [1.5, -2.0])
    np.testing.assert_array_equal(abs(x).numpy(), [1.5, 2.0])
    m = mge.Tensor([True, False])
    np.testing.assert_array_equal((~m).numpy(), [False, True])
    np.testing.assert_array_equal((m & True).numpy(), [True, False])
    k = mge.Tensor([6, 3])
    np.testing.assert_array_equal((k & 5).numpy(), [4, 1])
    np.testing.assert_array_equal((k << 1).numpy(), [12, 6])


def test_reductions_match_numpy():
    a = rng.normal(size=(2, 3, 4)).astype(np.float32)
    t = mge.Tensor(a)
    for name in ["sum", "mean", "max", "min", "prod"]:
        ref = getattr(np, name)
        for axis in [None, 0, -1, (0, 2)]:
            for keepdims in [False, True]:
                got = getattr(t, name)(axis=axis, keepdims=keepdims).numpy()
                np.testing.assert_allclose(got, ref(a, axis=axis, keepdims=keepdims), rtol=1e-5)
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        t.sum(axis=3)


def test_shape_methods():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = mge.Tensor(a)
    np.testing.assert_array_equal(t.reshape(6, -1).numpy(), a.reshape(6, -1))
    np.testing.assert_array_equal(t.reshape((4, 6)).numpy(), a.reshape(4, 6))
    np.testing.assert_array_equal(t.transpose(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(t.T.numpy(), a.T)
    np.testing.assert_array_equal(t.flatten().numpy(), a.flatten())
    # reshape of a transposed view copies and still gives NumPy's values
    np.testing.assert_array_equal(t.T.reshape(-1).numpy(), a.T.reshape(-1))
    with pytest.raises(ValueError, match=r"cannot reshape \{2,3,4\}"):
        t.reshape(5, 5)


def test_reshape_takes_a_shape_tensor_or_array():
    # Transformer code builds the target shape as a Tensor from x.shape (so that traces follow
    # it) and passes it to the method, as megengine 1.13 allows.
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = mge.Tensor(a)
    shape = mge.Tensor(t.shape)
    heads = F.concat([shape[:-1], mge.Tensor([2, 2])])
    np.testing.assert_array_equal(t.reshape(heads).numpy(), a.reshape(2, 3, 2, 2))
    np.testing.assert_array_equal(t.reshape(mge.Tensor([4, -1])).numpy(), a.reshape(4, 6))
    np.testing.assert_array_equal(t.reshape(np.array([6, 4])).numpy(), a.reshape(6, 4))
    with pytest.raises(ValueError, match="cannot reshape"):
        t.reshape(mge.Tensor([5, 5]))
    with pytest.raises(ValueError, match="invalid target shape"):
        t.reshape(mge.Tensor([-1, -1]))


def test_reshape_by_shape_tensor_follows_the_shape_in_a_trace():
    @mge.jit.trace(symbolic=True)
    def split_last(x):
        return x.reshape(F.concat([mge.Tensor(x.shape)[:-1], mge.Tensor([2, 2])]))

    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for _ in range(2):  # the recording, then the compiled graph
        np.testing.assert_array_equal(split_last(mge.Tensor(a)).numpy(), a.reshape(2, 3, 2, 2))


def test_scalars_lists_and_protocols():
    t = mge.Tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.ndim == 2 and t.size == 4 and len(t) == 2
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert mge.Tensor([2.5]).item() == 2.5
    assert float(mge.Tensor(2.5)) == 2.5
    assert [r.tolist() for r in t] == [[1.0, 2.0], [3.0, 4.0]]
    np.testing.assert_array_equal(np.asarray(t), t.numpy())
    assert t.astype("int32").dtype == np.int32
    with pytest.raises(ValueError, match="ambiguous"):
        bool(t)
    with pytest.raises(TypeError):
        len(mge.Tensor(1.0))


def test_pickle_round_trip():
    t = mge.Tensor([[1, 2]], dtype="int16")
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype == np.int16 and u.tolist() == [[1, 2]] and u.device == t.device
    p = pickle.loads(pickle.dumps(mge.Parameter([1.0])))
    assert type(p) is mge.Parameter and p.tolist() == [1.0]


@pytest.mark.parametrize(
    "index",
    [
        0,
        -1,
        (1, 2),
        slice(1, 3),
        slice(None, None, -1),
        slice(None, None, 2),
        (Ellipsis, 1),
        (None, 0),
        (slice(None), None, 1),
        (0, slice(1, None), -1),
        ([0, 1, 1],),
        (slice(None), [2, 0]),
        (0, [1, 2]),
        ([0, 2], slice(1, 3), [1, 4]),
        (slice(None, None, -1), [0, 1]),
        ([0, 1], None, [1, 2]),
        (None, [0, 2]),
        (1, slice(None), [0, -1]),
        ([[0, 1], [2, 2]], 1),
        np.arange(60).reshape(3, 4, 5) > 30,
        np.array([True, False, True]),
        (slice(None), np.array([True, False, True, True])),
        (np.arange(12).reshape(3, 4) % 3 == 0, [4, 0, 1, 2]),
        np.zeros((3, 4), bool),
        # a bool scalar adds an axis of length 1 (True) or 0 (False); it is not the int 1 or 0
        True,
        False,
        (True, slice(0, 1)),
        (False, slice(0, 1)),
        (slice(None), True, 2),
        (np.True_, 1),
        (1, True, [0, 2]),
    ],
)
def test_getitem_matches_numpy(index):
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    np.testing.assert_array_equal(mge.Tensor(a)[index].numpy(), a[index])


@pytest.mark.parametrize("k", [0, 2, -1, -3])
def test_getitem_int_matches_numpy(k):
    # x[k] has a path of its own (indexing.getitem); both ends from either side.
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    np.testing.assert_array_equal(mge.Tensor(a)[k].numpy(), a[k])
    v = np.arange(3, dtype=np.int32)
    got = mge.Tensor(v)[k]
    assert got.shape == () and got.dtype == np.int32 and got.item() == v[k]


def test_getitem_errors():
    t = mge.Tensor(np.zeros((2, 3)))
    with pytest.raises(IndexError, match="out of bounds"):
        t[5]
    with pytest.raises(IndexError, match="out of bounds"):
        t[2]
    with pytest.raises(IndexError, match="out of bounds"):
        t[-3]
    with pytest.raises(IndexError, match="too many indices"):
        mge.Tensor(1.0)[0]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]


def test_device_and_to():
    t = mge.Tensor([1.0], device="cpu1")
    assert t.device == "cpu1"
    assert t.to("cpu0").device == "cpu0"
    with pytest.raises(ValueError, match="invalid comp node name"):
        t.to("abc")


def test_to_own_device_is_differentiated_and_traced():
    # MegEngine's Tensor.to is a Copy op: w.to(device) passes the gradient (MegEngine 1.13
    # gives [2, 2] for the sum below) and a traced function that calls it computes from each
    # call's input; a raw copy dropped the gradient and replayed the first call's value.
    from megengine.autodiff import GradManager
    from megengine.jit import trace

    w = mge.Parameter([1.0, 2.0])
    gm = GradManager().attach(w)
    with gm:
        y = w.to(w.device)
        gm.backward((y * 2).sum())
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0])
    assert y is not w and type(y) is mge.Tensor and y.device == w.device
    for symbolic in (False, True):
        f = trace(lambda x: x.to("cpu0") * 2, symbolic=symbolic, capture_as_const=True)
        for v in ([1.0, 2.0], [5.0, 7.0], [9.0, 1.0]):
            np.testing.assert_array_equal(f(mge.Tensor(v)).numpy(), np.array(v) * 2)
    # the dumped graph reads its input instead of holding the traced value
    from megengine.utils.comp_graph_tools import GraphInference

    buf = io.BytesIO()
    f.dump(buf, arg_names=["x"], output_names=["y"])
    out = GraphInference(buf.getvalue()).run(np.array([3.0, 4.0], "float32"))["y"]
    np.testing.assert_array_equal(out, [6.0, 8.0])


@pytest.mark.parametrize(
    "index,value",
    [
        (0, 5.0),
        ((slice(None), 1), np.arange(5, dtype=np.float32)),
        ((1, slice(0, 4, 2), -1), 7.0),
        (Ellipsis, 1.0),
        (slice(None, None, -1), np.zeros((4, 5), np.float32)),
        (([0, 2], [3, 1]), -1.0),
        ((Ellipsis, [4, 0]), np.ones((3, 4, 2), np.float32)),
        (1, np.ones((1, 4, 5), np.float32)),
        (np.arange(60).reshape(3, 4, 5) % 7 == 0, -2.0),
        (np.array([False, True, True]), np.ones((2, 4, 5), np.float32)),
        ((0, [1, 3]), np.arange(10, dtype=np.float32).reshape(2, 5)),
        (([0, 2], slice(1, 3), [1, 4]), 9.0),
        ((None, 1), 3.0),
        ((True, 2), 6.0),
        ((False, 0), 8.0),
    ],
)
def test_setitem_matches_numpy(index, value):
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    t = mge.Tensor(a)
    t[index] = value
    b = a.copy()
    b[index] = value
    np.testing.assert_array_equal(t.numpy(), b)


def test_setitem_keeps_dtype_and_rejects_bad_indices():
    t = mge.Tensor([1, 2, 3])
    t[1] = 7.9  # converted to the tensor's dtype, as NumPy does
    assert t.dtype == np.int32 and t.tolist() == [1, 7, 3]
    with pytest.raises(IndexError, match="out of bounds"):
        t[3] = 0
    t[None] = 4  # None adds an axis of size 1, as in NumPy
    assert t.tolist() == [4, 4, 4]
    s = mge.Tensor(2.0)
    s[...] = 5
    assert s.item() == 5.0


def test_mask_and_mixed_indexing_take_tensor_indices():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = mge.Tensor(a)
    np.testing.assert_array_equal(t[t > 4].numpy(), a[a > 4])
    np.testing.assert_array_equal(t[mge.Tensor(1), [0, 3]].numpy(), a[1, [0, 3]])
    t[t > 4] = 0.0
    np.testing.assert_array_equal(t.numpy(), np.where(a > 4, 0, a))
    with pytest.raises(IndexError, match="boolean index did not match"):
        t[np.array([True, False])]
    with pytest.raises(IndexError, match="out of bounds"):
        t[0, [5]]


def test_mask_indexing_gradients():
    from megengine.autodiff import GradManager

    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    mask = a % 3 == 1
    x = mge.Parameter(a)
    gm = GradManager().attach(x)
    with gm:
        gm.backward((x[mask] * mge.Tensor(np.arange(mask.sum(), dtype=np.float32))).sum())
    want = np.zeros_like(a)
    want[mask] = np.arange(mask.sum())
    np.testing.assert_array_equal(x.grad.numpy(), want)

    # An assignment passes the gradient to the value and blocks it for the overwritten elements.
    x, v = mge.Parameter(a), mge.Parameter(np.float32(2.0))
    gm = GradManager().attach([x, v])
    with gm:
        y = x * 1.0
        y[0, [1, 2]] = v
        gm.backward((y * y).sum())
    want = 2 * a
    want[0, [1, 2]] = 0
    np.testing.assert_allclose(x.grad.numpy(), want)
    np.testing.assert_allclose(v.grad.numpy(), 2 * 2 * 2.0)


def test_bool_scalar_index_gradient():
    from megengine.autodiff import GradManager

    # MegEngine 1.13 gives x[True, 0:1] the shape (1, 1, 2) and this gradient; taking True as the
    # index 1 would select (and differentiate) the second row instead.
    x = mge.Parameter(np.arange(6, dtype=np.float32).reshape(3, 2))
    gm = GradManager().attach(x)
    with gm:
        y = x[True, 0:1]
        assert y.shape == (1, 1, 2)
        gm.backward(y.sum())
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1], [0, 0], [0, 0]])
    x.grad = None
    with gm:
        y = x[False, 0:1]
        assert y.shape == (0, 1, 2)
        gm.backward(y.sum())
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 2)))
    with pytest.raises(IndexError):
        x[True, 0, 0, 0]


def test_megengine_constructor_keywords_and_name():
    assert mge.Tensor([1.0], name="a").name == "a"
    assert mge.Parameter([1.0], name="w").name == "w"
    assert mge.Tensor([1.0]).name == "" and (mge.Tensor([1.0]) + 1).name == ""
    t = mge.Tensor([1.0], is_const=True, no_cache=True)
    assert t.tolist() == [1.0]
    # MegEngine refuses NHWC for a tensor that is not 4-D or 5-D
    with pytest.raises(ValueError, match="format"):
        mge.Tensor([1.0], format="nhwc")
    assert mge.Tensor(np.zeros((1, 2, 3, 4)), format="nhwc").format == "nhwc"


def test_round():
    t = mge.Tensor([1.25, -2.5, 0.5])
    assert round(t).tolist() == [1.0, -3.0, 1.0]
    np.testing.assert_allclose(round(t, 1).numpy(), [1.3, -2.5, 0.5])


def test_none_operands():
    t = mge.Tensor([1.0, 2.0])
    assert (t == None) is False
    assert (t != None) is True
    # MegEngine 1.13's message, which its own tests compare in full
    with pytest.raises(TypeError, match=r"^the operand is None and is not supported\.$"):
        t + None
    with pytest.raises(TypeError, match=r"^the operand is None and is not supported\.$"):
        None * t


def test_flatten_method_takes_megengine_axes():
    # Shapes from MegEngine 1.13's Tensor.flatten.
    x = mge.Tensor(np.zeros((2, 3, 4, 5), np.float32))
    assert x.flatten().shape == (120,)
    assert x.flatten(1).shape == (2, 60)
    assert x.flatten(1, 2).shape == (2, 12, 5)
    assert x.flatten(-2).shape == (2, 3, 20)
    assert x.flatten(0, 0).shape == (2, 3, 4, 5)
    assert x.flatten(end_axis=1).shape == (6, 4, 5)
    assert mge.Tensor(1.0).flatten().shape == (1,)
    assert mge.Parameter([[1.0, 2.0]]).flatten(start_axis=0).numpy().tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="flatten: start_axis"):
        x.flatten(2, 1)
