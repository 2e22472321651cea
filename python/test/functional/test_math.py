"""megengine.functional.math (sorting, products, linear algebra, norms, moments) against
NumPy: values on random inputs and edge shapes, gradients against finite differences, and the
errors bad input raises."""

import numpy as np
import pytest
from gradcheck import check_grad

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager
from megengine.core.ops import builtin

rng = np.random.default_rng(1)


def randn(*shape):
    return rng.normal(size=shape).astype(np.float32)


def close(t, ref, rtol=1e-5, atol=1e-5):
    got = t.numpy()
    ref = np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- moments


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_match_numpy(name):
    a = randn(3, 4, 5)
    ref = getattr(np, name)
    f = getattr(F, name)
    for axis in [None, 0, -1, (0, 2)]:
        for keepdims in [False, True]:
            close(f(a, axis, keepdims), ref(a, axis=axis, keepdims=keepdims))
    close(f(mge.Tensor(a).T, 1), ref(a.T, axis=1))
    close(f(mge.Tensor(2.0)), np.float32(0.0))
    i = f(np.arange(4, dtype=np.int32))
    assert i.dtype == np.float32
    close(i, ref(np.arange(4)))
    assert np.isnan(f(np.zeros((0, 3), np.float32), 0).numpy()).all()
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        f(a, 3)


def test_var_std_grad():
    check_grad(lambda x: F.var(x, 1), randn(3, 4))
    check_grad(lambda x: F.std(x, axis=0, keepdims=True), randn(3, 4))
    check_grad(F.std, randn(5))


# ---------------------------------------------------------------- norms


@pytest.mark.parametrize("ord", [None, 1, 2, 3, 0.5, 0, np.inf, -np.inf])
def test_norm_matches_numpy(ord):
    a = randn(3, 4)
    a[0, 1] = 0.0
    for axis in [0, 1, -1]:
        for keepdims in [False, True]:
            ref = np.linalg.norm(a, ord=ord, axis=axis, keepdims=keepdims)
            close(F.norm(a, ord, axis, keepdims), ref)
    close(F.norm(mge.Tensor(a).T, ord, 0), np.linalg.norm(a.T, ord=ord, axis=0))
    flat = np.linalg.norm(a.reshape(-1), ord=ord)
    close(F.norm(a, ord), flat)
    close(F.norm(a, ord, keepdims=True), np.full((1, 1), flat))


def test_norm_edges_and_errors():
    # ord=0 counts, in int32 as MegEngine 1.13 returns it; normalize by it gives float32
    x = np.array([[0.0, 1.5, 2.0], [0.0, 0.0, 3.0]], np.float32)
    for inp in (x, x.astype(np.float16), (x * 2).astype(np.int32)):
        n = F.norm(inp, 0, 1)
        assert n.dtype == np.int32 and n.numpy().tolist() == [2, 1]
    assert F.norm(x, 0, 1, keepdims=True).numpy().tolist() == [[2], [1]]
    assert F.norm(x, 0).dtype == np.int32 and F.norm(x, 0).item() == 3
    r = F.normalize(x, 0, 1)
    assert r.dtype == np.float32
    np.testing.assert_allclose(r.numpy(), [[0.0, 0.75, 1.0], [0.0, 0.0, 3.0]])
    close(F.norm([3, 4]), np.float32(5.0))  # integers are normed as float32
    close(F.norm(mge.Tensor(-2.0)), np.float32(2.0))
    close(F.norm([3.0, 4.0], ord=np.int64(1)), np.float32(7.0))
    close(F.norm(np.zeros((0, 3), np.float32), axis=0), np.zeros(3))
    with pytest.raises(TypeError, match=r"norm: axis must be an int or None, got \(0, 1\)"):
        F.norm(randn(2, 2), axis=(0, 1))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        F.norm(randn(2, 2), axis=2)
    with pytest.raises(TypeError, match="norm: ord must be a number, got 'fro'"):
        F.norm(randn(2, 2), ord="fro", axis=0)


def test_norm_normalize_grad():
    a = randn(3, 4) + np.sign(randn(3, 4)) * 0.3  # keep |x| away from 0 for ord 1 and 3
    check_grad(lambda x: F.norm(x, axis=1), a)
    check_grad(lambda x: F.norm(x, 1, 0), a)
    check_grad(lambda x: F.norm(x, 3, 1), a, rtol=3e-2)
    check_grad(F.norm, a)
    check_grad(lambda x: F.normalize(x, axis=1), a)
    check_grad(F.normalize, a)


def test_normalize():
    a = randn(3, 4)
    for axis in [0, 1]:
        ref = a / np.maximum(np.linalg.norm(a, axis=axis, keepdims=True), 1e-12)
        close(F.normalize(a, axis=axis), ref)
    close(F.normalize(a), a / np.linalg.norm(a))
    close(F.normalize(a, ord=1, axis=1), a / np.abs(a).sum(1, keepdims=True))
    close(F.normalize(mge.Tensor(a).T, axis=0), a.T / np.linalg.norm(a.T, axis=0))
    close(F.normalize(np.zeros((2, 2), np.float32), axis=1), np.zeros((2, 2)))
    close(F.normalize([[3.0, 4.0]], axis=1, eps=10.0), [[0.3, 0.4]])


# ---------------------------------------------------------------- sorting


def sort_order(a, descending):
    """MegEngine 1.13's order: stable ascending; descending is its exact reverse, so equal values
    come last position first (its kernels compare (value, position) pairs)."""
    order = np.argsort(a, axis=-1, kind="stable")
    return order[..., ::-1] if descending else order


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (1,), (0,), (2, 0)])
def test_sort_argsort_match_numpy(shape):
    a = randn(*shape)
    for descending in [False, True]:
        v, i = F.sort(a, descending)
        ref_i = sort_order(a, descending)
        close(v, np.take_along_axis(a, ref_i, -1))
        np.testing.assert_array_equal(i.numpy(), ref_i)
        assert i.dtype == np.int32
        np.testing.assert_array_equal(F.argsort(a, descending).numpy(), ref_i)


def test_sort_ties_nan_ints_and_views():
    a = np.array([[2.0, np.nan, 1.0, 2.0]], np.float32)
    v, i = F.sort(a)
    np.testing.assert_array_equal(i.numpy(), [[2, 0, 3, 1]])  # stable, NaN largest
    assert np.isnan(v.numpy()[0, 3])
    assert F.argsort(a, descending=True).numpy().tolist() == [[1, 3, 0, 2]]  # reversed
    k = F.sort(np.array([3, -1, 2], np.int32))[0]
    assert k.dtype == np.int32 and k.numpy().tolist() == [-1, 2, 3]
    b = randn(4, 3)
    np.testing.assert_array_equal(
        F.argsort(mge.Tensor(b).T).numpy(), np.argsort(b.T, -1, kind="stable")
    )
    with pytest.raises(ValueError, match=r"sort: input must have at least one dim, got shape \(\)"):
        F.sort(mge.Tensor(1.0))
    with pytest.raises(TypeError, match="argsort: cannot sort a bool tensor"):
        F.argsort([True, False])


@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.parametrize("descending", [False, True])
def test_topk_matches_numpy(k, descending):
    a = randn(4, 5)
    order = sort_order(a, descending)[:, :k]
    v, i = F.topk(a, k, descending=descending)
    np.testing.assert_array_equal(i.numpy(), order)
    close(v, np.take_along_axis(a, order, -1))
    kth, kth_i = F.topk(a, k, descending=descending, kth_only=True)
    close(kth, np.take_along_axis(a, order[:, -1:], -1)[:, 0])
    np.testing.assert_array_equal(kth_i.numpy(), order[:, -1])
    assert kth_i.dtype == np.int32
    v, i = F.topk(a, k, descending=descending, no_sort=True)
    np.testing.assert_array_equal(np.sort(i.numpy(), -1), np.sort(order, -1))
    close(v, np.take_along_axis(a, i.numpy(), -1))
    v, i = F.topk(mge.Tensor(a).T, 2, descending)
    ref = sort_order(a.T, descending)[:, :2]
    np.testing.assert_array_equal(i.numpy(), ref)


def test_topk_1d_ties():
    # values and indices from MegEngine 1.13: the largest of tied values come last position first
    a = np.array([2.0, 1.0, 2.0, 0.0], np.float32)
    v, i = F.topk(a, 3, descending=True)
    assert v.numpy().tolist() == [2.0, 2.0, 1.0] and i.numpy().tolist() == [2, 0, 1]
    v, i = F.topk(a, 2, descending=True, kth_only=True)
    assert v.shape == () and v.item() == 2.0 and i.item() == 0
    v, i = F.topk(a, 2, descending=False)
    assert i.numpy().tolist() == [3, 1]


def test_tie_order_matches_megengine():
    # MegEngine 1.13's outputs (FreeAnchor's top-k IoU anchors pick among equal IoUs by this)
    x = mge.tensor([3.0, 3.0, 1.0, 3.0])
    assert F.topk(x, 2, descending=True)[1].numpy().tolist() == [3, 1]
    assert F.topk(x, 2, descending=False)[1].numpy().tolist() == [2, 0]
    assert F.argsort(x, descending=True).numpy().tolist() == [3, 1, 0, 2]
    assert F.argsort(x).numpy().tolist() == [2, 0, 1, 3]
    z = mge.tensor(np.zeros((2, 6), np.float32))
    _, i = F.topk(z, 3, descending=True, no_sort=True)
    assert np.sort(i.numpy(), -1).tolist() == [[3, 4, 5]] * 2
    assert F.sort(z[0], descending=True)[1].numpy().tolist() == [5, 4, 3, 2, 1, 0]


# MegEngine 1.13's outputs (CPU, async_level 0) for ties: (input, descending) -> argsort. NaN is
# left out: MegEngine 1.13's CPU sort puts it wherever its comparisons leave it, NeoMeg last.
MEGENGINE_TIE_ORDERS = [
    (
        [[1, 2, 1, 2, 1, 2], [5, 5, 5, 5, 5, 5]],
        "float32",
        True,
        [[5, 3, 1, 4, 2, 0], [5, 4, 3, 2, 1, 0]],
    ),
    (
        [[1, 2, 1, 2, 1, 2], [5, 5, 5, 5, 5, 5]],
        "float32",
        False,
        [[0, 2, 4, 1, 3, 5], [0, 1, 2, 3, 4, 5]],
    ),
    ([0.0, -0.0, 0.0, -0.0, 1.0], "float32", True, [4, 3, 2, 1, 0]),
    ([0.0, -0.0, 0.0, -0.0, 1.0], "float32", False, [0, 1, 2, 3, 4]),
    ([3, 7, 3, 7, 3], "int32", True, [3, 1, 4, 2, 0]),
    ([2, 1, 2, 1], "float16", True, [2, 0, 3, 1]),
    (
        [i % 3 for i in range(20)],
        "float32",
        True,
        [17, 14, 11, 8, 5, 2, 19, 16, 13, 10, 7, 4, 1, 18, 15, 12, 9, 6, 3, 0],
    ),
    (
        [i % 3 for i in range(20)],
        "float32",
        False,
        [0, 3, 6, 9, 12, 15, 18, 1, 4, 7, 10, 13, 16, 19, 2, 5, 8, 11, 14, 17],
    ),
]


@pytest.mark.parametrize("values,dtype,descending,want", MEGENGINE_TIE_ORDERS)
def test_sort_tie_order_is_megengine_s(values, dtype, descending, want):
    # Descending is ascending's exact reverse, not a stable descending sort: equal elements come
    # last-first (Argsort's definition says so). sort, argsort and topk agree.
    x = mge.tensor(np.array(values, dtype))
    assert F.argsort(x, descending).numpy().tolist() == want
    v, i = F.sort(x, descending)
    assert i.numpy().tolist() == want
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(x.numpy(), np.array(want), -1))
    k = min(3, x.shape[-1])
    _, i = F.topk(x, k, descending=descending)
    assert i.numpy().tolist() == np.array(want)[..., :k].tolist()


def test_topk_default_is_descending():
    # MegEngine's default: F.topk(x, k) is the k largest (values taken from MegEngine 1.13).
    v, i = F.topk([4.0, 1.0, 3.0, 2.0], 2)
    assert v.numpy().tolist() == [4.0, 3.0] and i.numpy().tolist() == [0, 2]
    v, i = F.topk([[4.0, 1.0, 2.0]], 2, kth_only=True)
    assert v.numpy().tolist() == [2.0] and i.numpy().tolist() == [2]
    v, i = F.topk([4.0, 1.0, 3.0, 2.0], 2, False)
    assert v.numpy().tolist() == [1.0, 2.0] and i.numpy().tolist() == [1, 3]


def test_topk_k_above_the_axis_takes_it_whole():
    # MegEngine 1.13 clamps k to the axis length (values from MegEngine 1.13 itself).
    x = [[3.0, 1.0, 2.0, 7.0], [0.0, 5.0, 4.0, -1.0]]
    for k in (5, 6):
        v, i = F.topk(x, k)
        assert v.numpy().tolist() == [[7.0, 3.0, 2.0, 1.0], [5.0, 4.0, 0.0, -1.0]]
        assert i.numpy().tolist() == [[3, 0, 2, 1], [1, 2, 0, 3]]
        v, i = F.topk(x, k, kth_only=True)
        assert (v.numpy().tolist(), i.numpy().tolist()) == ([1.0, -1.0], [1, 3])
        v, i = F.topk(x, k, descending=False)
        assert v.numpy().tolist() == [[1.0, 2.0, 3.0, 7.0], [-1.0, 0.0, 4.0, 5.0]]


def test_topk_errors():
    a = randn(2, 3)
    with pytest.raises(ValueError, match=r"topk: k=0 is out of range \[1, 3\] for input of shape"):
        F.topk(a, 0)
    with pytest.raises(ValueError, match=r"topk: k=1 is out of range \[1, 0\]"):
        F.topk(np.zeros((2, 0), np.float32), 1)
    with pytest.raises(ValueError, match="topk: k=0"):
        F.topk(a, 0)
    with pytest.raises(ValueError, match="topk: input must have at least one dim"):
        F.topk(mge.Tensor(1.0), 1)


def test_sort_topk_grad():
    a = rng.permutation(12).reshape(3, 4).astype(np.float32)  # distinct values: no ties
    check_grad(lambda x: F.sort(x)[0], a)
    check_grad(lambda x: F.sort(x, descending=True)[0], a)
    check_grad(lambda x: F.topk(x, 2, descending=False)[0], a)
    check_grad(lambda x: F.topk(x, 3)[0], a)
    check_grad(lambda x: F.topk(x, 2, kth_only=True)[0], a)


# ---------------------------------------------------------------- products


def test_dot():
    a, b = randn(5), randn(5)
    close(F.dot(a, b), np.dot(a, b))
    close(F.dot(a, 2.0), np.float32(2 * a.sum()))
    close(F.dot(mge.Tensor(3.0), mge.Tensor(2.0)), np.float32(6.0))
    close(F.dot(np.zeros(0, np.float32), np.zeros(0, np.float32)), np.float32(0.0))
    m = randn(5, 2)
    close(F.dot(mge.Tensor(m).T[0], b), np.dot(m.T[0], b))
    i = F.dot(np.array([1, 2], np.int32), np.array([3, 4], np.int32))
    assert i.dtype == np.int32 and i.item() == 11
    assert F.dot([1, 2], [0.5, 0.5]).item() == 1.5  # promoted to float32
    with pytest.raises(ValueError, match=r"dot: lengths differ, got shapes \(5,\) and \(4,\)"):
        F.dot(a, randn(4))
    with pytest.raises(ValueError, match=r"dot: inputs must be 1-D or 0-d, got shapes \(5, 2\)"):
        F.dot(m, a)
    check_grad(F.dot, a, b)
    check_grad(lambda x: F.dot(x, 3.0), a)


MATMUL_SHAPES = [
    ((4,), (4,)),  # 1-D . 1-D: dot
    ((4,), (4, 3)),  # vector @ matrix
    ((2, 4), (4,)),  # matrix @ vector
    ((2, 4), (4, 3)),
    ((5, 2, 4), (5, 4, 3)),  # the direct batched path
    ((5, 2, 4), (4, 3)),  # 3-D @ 2-D: one flattened MatrixMul
    ((2, 4), (5, 4, 3)),  # 2-D @ 3-D: the matrix is broadcast
    ((4,), (2, 5, 4, 3)),
    ((2, 5, 2, 4), (4,)),
    ((2, 5, 2, 4), (5, 4, 3)),  # 4-D @ 3-D: batch broadcast
    ((2, 1, 2, 4), (3, 4, 3)),  # size-1 batch axes broadcast too
    ((1, 2, 4), (6, 4, 3)),
]


def _np_t(x, flag):
    return np.swapaxes(x, -1, -2) if flag and x.ndim >= 2 else x


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_matches_numpy(sa, sb, ta, tb):
    a, b = randn(*sa), randn(*sb)
    # The operands as given, so that transposing them gives sa and sb.
    a_in, b_in = _np_t(a, ta).copy(), _np_t(b, tb).copy()
    want = np.matmul(a, b)
    close(F.matmul(a_in, b_in, transpose_a=ta, transpose_b=tb), want)
    if not (ta or tb):
        close(mge.Tensor(a) @ mge.Tensor(b), want)


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_grad(sa, sb):
    check_grad(F.matmul, randn(*sa), randn(*sb))


def test_matmul_transposed_grad_and_compute_mode():
    a, b = randn(3, 4, 2), randn(5, 4)
    check_grad(lambda x, y: F.matmul(x, y, transpose_a=True, transpose_b=True), a, b)
    check_grad(lambda x, y: F.matmul(x, y, transpose_b=True), randn(2, 1, 3, 4), randn(5, 4))
    check_grad(lambda x, y: F.matmul(x, y, transpose_b=True), randn(3, 4), randn(2, 5, 4))
    want = np.matmul(a.swapaxes(-1, -2), b.T)
    close(F.matmul(a, b, True, True, compute_mode="float32"), want)
    h = F.matmul(
        randn(2, 3).astype("float16"), randn(3, 2).astype("float16"), compute_mode="float32"
    )
    assert h.dtype == np.float16


def test_matmul_edges():
    close(F.matmul(np.zeros((0, 3), "float32"), randn(3, 2)), np.zeros((0, 2), "float32"))
    close(F.matmul(np.zeros((2, 0, 3, 4), "float32"), randn(4, 2)), np.zeros((2, 0, 3, 2)))
    close(F.matmul(randn(0, 3, 4), randn(0, 4, 2)), np.zeros((0, 3, 2), "float32"))
    close(F.matmul(randn(0, 1, 3, 4), randn(5, 4, 2)), np.zeros((0, 5, 3, 2), "float32"))
    out = F.matmul(randn(2, 3, 0), randn(0, 4))
    close(out, np.zeros((2, 3, 4), "float32"))
    i = F.matmul(np.array([[1, 2]], np.int32), np.array([[3], [4]], np.int32))
    assert i.dtype == np.int32 and i.numpy().tolist() == [[11]]
    d = F.matmul([1.0, 2.0], [3.0, 4.0])
    assert d.ndim == 0 and d.item() == 11.0


@pytest.mark.parametrize(
    "sa,sb,why",
    [
        ((2, 3), (4, 5), "do not multiply"),
        ((3,), (4,), "vector lengths differ"),
        ((2, 3), (4,), "inner dims differ"),
        ((5, 2, 3), (4, 3, 2), "batch dims do not broadcast"),
        ((2, 2, 3), (5, 4, 2), "inner dims differ"),
        ((), (3,), "at least 1-D"),
    ],
)
def test_matmul_bad_shapes_name_both(sa, sb, why):
    with pytest.raises(ValueError, match=why) as e:
        F.matmul(np.ones(sa, "float32"), np.ones(sb, "float32"))
    assert str(sa) in str(e.value) and str(sb) in str(e.value)


def test_matmul_bad_arguments():
    a = randn(2, 2)
    with pytest.raises(ValueError, match="compute_mode must be 'default' or 'float32'"):
        F.matmul(a, a, compute_mode="fast")
    with pytest.raises(ValueError, match="format must be 'default'"):
        F.matmul(a, a, format="mk4")
    with pytest.raises(ValueError, match="compute_mode"):
        F.matmul(randn(3), randn(3, 2, 3), compute_mode="fast")


def test_matmul_fast_path_reuses_one_op():
    from megengine.functional import math as fm

    a = randn(2, 2)
    F.matmul(a, a, transpose_a=True)
    F.matmul(a[None], a[None], transpose_b=True)
    n = len(fm._matmul_ops)
    for _ in range(3):
        F.matmul(a, a, transpose_a=True)
        F.matmul(a[None], a[None], transpose_b=True)
    assert len(fm._matmul_ops) == n
    assert isinstance(fm._matmul_ops[(2, True, False, "default", "default")], builtin.MatrixMul)


def test_matmul_of_tensors_and_parameters():
    # Tensor operands take the fast path without conversion; a Parameter is a Tensor too. Its
    # own generator: drawing from the module's would change later tests' inputs.
    own = np.random.default_rng(12)
    a, b = (own.standard_normal(s).astype(np.float32) for s in ((3, 4), (4, 2)))
    ta, pb = mge.Tensor(a), mge.Parameter(b)
    close(F.matmul(ta, pb), a @ b)
    close(F.matmul(pb, ta, transpose_a=True, transpose_b=True), b.T @ a.T)
    close(F.matmul(ta, b), a @ b)
    with pytest.raises(ValueError, match="compute_mode must be 'default' or 'float32'"):
        F.matmul(ta, pb, compute_mode="fast")


def _well_conditioned(*shape):
    """Uniform in [-1, 1) plus 2n on the diagonal: diagonally dominant, pivots >= n."""
    n = shape[-1]
    return (rng.uniform(-1, 1, shape) + 2 * n * np.eye(n)).astype(np.float32)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4), (2, 3, 2, 2), (0, 3, 3), (0, 0)])
def test_matinv_matches_numpy(shape):
    x = _well_conditioned(*shape)
    close(F.matinv(x), np.linalg.inv(x), rtol=1e-4, atol=1e-5)
    if x.size:
        close(F.matmul(F.matinv(x), x), np.broadcast_to(np.eye(shape[-1]), shape), atol=1e-5)


def test_matinv_views_ints_and_grad():
    x = _well_conditioned(4, 4)
    close(F.matinv(mge.Tensor(x).T), np.linalg.inv(x.T), rtol=1e-4, atol=1e-5)
    close(F.matinv([[2, 0], [0, 4]]), np.array([[0.5, 0], [0, 0.25]], np.float32))
    check_grad(F.matinv, _well_conditioned(3, 3))
    check_grad(F.matinv, _well_conditioned(2, 2, 2))
    # Through a product: d/dx of sum(w * (inv(x) @ b)).
    check_grad(lambda x, b: F.matmul(F.matinv(x), b), _well_conditioned(3, 3), randn(3, 2))


def test_matinv_errors():
    with pytest.raises(ValueError, match=r"matrix 1 of the batch \(flattened\) is singular"):
        F.matinv(np.array([np.eye(2), [[1, 2], [2, 4]]], np.float32))
    with pytest.raises(ValueError, match="square"):
        F.matinv(randn(2, 3))
    with pytest.raises(ValueError, match="square"):
        F.matinv(randn(3))
    nan = F.matinv(np.array([[1, np.nan], [0, 1]], np.float32)).numpy()
    assert np.isnan(nan).all()


def _reconstruct(u, s, vh):
    k = s.shape[-1]
    return np.matmul(u[..., :, :k] * s[..., None, :], vh[..., :k, :])


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (2, 3, 4, 2), (1, 1), (2, 0, 3)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_matches_numpy(shape, full_matrices):
    x = randn(*shape)
    u, s, vh = F.svd(x, full_matrices=full_matrices)
    nu, ns, nvh = np.linalg.svd(x, full_matrices=full_matrices)
    assert (u.shape, s.shape, vh.shape) == (nu.shape, ns.shape, nvh.shape)
    close(s, ns, rtol=1e-5, atol=1e-5)
    u, s, vh = u.numpy(), s.numpy(), vh.numpy()
    np.testing.assert_allclose(_reconstruct(u, s, vh), x, rtol=1e-5, atol=1e-5)
    eye_u = np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2)
    eye_v = np.broadcast_to(np.eye(vh.shape[-2]), vh.shape[:-2] + (vh.shape[-2],) * 2)
    np.testing.assert_allclose(np.matmul(u.swapaxes(-1, -2), u), eye_u, atol=1e-5)
    np.testing.assert_allclose(np.matmul(vh, vh.swapaxes(-1, -2)), eye_v, atol=1e-5)
    # Singular vectors agree with numpy's up to the sign of each pair.
    if x.size and not full_matrices:
        k = ns.shape[-1]
        sign = np.sign(np.sum(u * nu, axis=-2))  # (..., K)
        np.testing.assert_allclose(u * sign[..., None, :], nu, atol=1e-4)
        np.testing.assert_allclose(vh * sign[..., :, None], nvh, atol=1e-4)
        assert sign.shape[-1] == k
    only_s = F.svd(x, full_matrices=full_matrices, compute_uv=False)
    assert isinstance(only_s, mge.Tensor)
    close(only_s, ns, rtol=1e-5, atol=1e-5)


def test_svd_values_and_grad():
    close(F.svd([[1, 2], [2, 4]], compute_uv=False), np.array([5, 0], np.float32), atol=1e-6)
    check_grad(lambda x: F.svd(x, compute_uv=False), randn(3, 2))
    check_grad(lambda x: F.svd(x, compute_uv=False), randn(2, 3, 3))
    # The nuclear norm, a common use of the singular values' gradient.
    check_grad(lambda x: F.sum(F.svd(x, compute_uv=False)), randn(4, 3))


def test_svd_errors():
    with pytest.raises(ValueError, match=r"\(\.\.\., M, N\)"):
        F.svd(randn(4))
    x = mge.Parameter(randn(3, 2))
    gm = GradManager().attach([x])
    with pytest.raises(NotImplementedError, match="full_matrices=false"), gm:
        _, s, _ = F.svd(x, full_matrices=True)
        gm.backward(F.sum(s))


def spread_singular_values(shape, seed):
    """A matrix whose singular values are 1, 2, 3, ...: the factors' derivatives grow as
    1 / (s_i - s_j), so a random draw with two close singular values makes central differences
    (eps 1e-2, float32) disagree with the exact gradient. Its own seed keeps the draw independent
    of which tests ran before."""
    g = np.random.default_rng(seed)
    *batch, m, n = shape
    k = min(m, n)
    u, _ = np.linalg.qr(g.normal(size=(*batch, m, k)))
    v, _ = np.linalg.qr(g.normal(size=(*batch, n, k)))
    s = np.arange(k, 0, -1, dtype=np.float64)
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_svd_factors_grad(shape):
    # Sign-free functions of the factors (each singular pair's sign is arbitrary).
    def f(x):
        u, s, vh = F.svd(x)
        return (
            F.sum(u * u * 0.5)
            + F.sum(s)
            + F.sum(vh * vh * 2.0)
            + F.sum(F.matmul(u * F.expand_dims(s, -2), vh))
        )

    check_grad(f, spread_singular_values(shape, 1))
    check_grad(lambda x: F.svd(x)[0] ** 2, spread_singular_values(shape, 2))
    check_grad(lambda x: F.svd(x)[2] ** 2, spread_singular_values(shape, 3))


def np_cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """``numpy.cross`` as NumPy 1.x defines it for 2-component vectors, which NumPy 2.0 deprecated
    and 2.5 rejects: a missing z is 0, and two 2-component vectors give only z."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = np.moveaxis(np.asarray(a), axisa, -1), np.moveaxis(np.asarray(b), axisb, -1)
    both_2d = a.shape[-1] == 2 and b.shape[-1] == 2

    def to_3d(v):
        return np.concatenate([v, np.zeros_like(v[..., :1])], -1) if v.shape[-1] == 2 else v

    c = np.cross(to_3d(a), to_3d(b))
    return c[..., 2] if both_2d else np.moveaxis(c, -1, axisc)


def test_np_cross_reference():
    # The reference itself, on vectors whose products are known.
    x, y = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    assert np_cross(x, y).tolist() == 1.0 and np_cross(y, x).tolist() == -1.0
    assert np_cross(x, np.array([0.0, 1.0, 0.0])).tolist() == [0.0, 0.0, 1.0]
    assert np_cross(np.array([[0.0], [0.0], [1.0]]), x, axisa=0).tolist() == [[0.0, 1.0, 0.0]]


@pytest.mark.parametrize(
    "sa,sb", [((3,), (3,)), ((4, 3), (4, 3)), ((4, 3), (3,)), ((2, 1, 3), (5, 3)), ((4, 2), (4, 3))]
)
def test_cross_matches_numpy(sa, sb):
    a, b = randn(*sa), randn(*sb)
    close(F.cross(a, b), np_cross(a, b))
    close(F.cross(b, a), np_cross(b, a))


def test_cross_axes_2d_and_errors():
    a, b = randn(3, 4), randn(4, 3)
    close(F.cross(a, b, axisa=0), np_cross(a, b, axisa=0))
    close(F.cross(a, b, axisa=0, axisc=0), np_cross(a, b, axisa=0, axisc=0))
    close(F.cross(a, b.T, axis=0), np_cross(a, b.T, axis=0))
    close(F.cross(mge.Tensor(b).T, a, axisa=0, axisb=0), np_cross(b.T, a, axisa=0, axisb=0))
    c, d = randn(5, 2), randn(5, 2)
    close(F.cross(c, d), np_cross(c, d))  # only z: one value per pair
    n = F.cross(np.array([1, 0, 0], np.int32), np.array([0, 1, 0], np.int32))
    assert n.dtype == np.int32 and n.numpy().tolist() == [0, 0, 1]
    with pytest.raises(
        ValueError, match=r"cross: vectors must have 2 or 3 components, got shapes \(4,\)"
    ):
        F.cross(randn(4), randn(3))
    with pytest.raises(ValueError, match="cross: axis 2 is out of range for a of shape"):
        F.cross(a, b, axisa=2)
    with pytest.raises(ValueError, match="cross: axisc 2 is out of range"):
        F.cross(b, b, axisc=2)
    check_grad(F.cross, randn(4, 3), randn(4, 3))
    check_grad(lambda x, y: F.cross(x, y, axisa=0), a, randn(4, 2))


# ---------------------------------------------------------------- classification


def test_isnan_isinf_sign():
    a = np.array([1.0, np.nan, -np.inf, np.inf, 0.0, -2.0], np.float32)
    np.testing.assert_array_equal(F.isnan(a).numpy(), np.isnan(a))
    np.testing.assert_array_equal(F.isinf(a).numpy(), np.isinf(a))
    np.testing.assert_array_equal(F.sign(a).numpy(), np.sign(a))
    np.testing.assert_array_equal(F.math.isnan(np.arange(3, dtype=np.int32)).numpy(), [0, 0, 0])
    b = randn(2, 3)
    np.testing.assert_array_equal(F.sign(mge.Tensor(b).T).numpy(), np.sign(b.T))
    assert F.isinf(mge.Tensor(np.inf)).item() is True
    # Integers and bool are never NaN nor infinite (MegEngine 1.13 gives False, not an error).
    for dtype in (np.bool_, np.uint8, np.int8, np.int16, np.int32):
        x = np.array([1, 0, 1], dtype)
        assert F.isnan(x).numpy().tolist() == [False] * 3, dtype
        assert F.isinf(x).dtype == np.bool_ and not F.isinf(x).numpy().any(), dtype
    assert F.sign(np.array([-3, 0, 4], np.int32)).numpy().tolist() == [-1, 0, 1]


def test_elementwise_keyword_names_are_megengine_s():
    # atan2(y, x) is the angle of the point (x, y): keywords bind as MegEngine's do.
    y, x = np.array([1.0, -1.0], np.float32), np.array([0.0, -1.0], np.float32)
    ref = np.arctan2(y, x)
    np.testing.assert_allclose(F.atan2(y=y, x=x).numpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(F.atan2(x=x, y=y).numpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(F.atan2(y, x).numpy(), ref, rtol=1e-6)
    a = np.array([1.0, np.nan, np.inf], np.float32)
    assert F.isnan(inp=a).numpy().tolist() == [False, True, False]
    assert F.isinf(inp=a).numpy().tolist() == [False, False, True]
    assert F.add(x=1.0, y=2.0).numpy().tolist() == 3.0
    with pytest.raises(TypeError):
        F.isnan(x=a)
