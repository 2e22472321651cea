"""F.einsum against numpy.einsum: explicit and implicit outputs, ellipsis, diagonals, several
operands, size-1 broadcasting and empty dims; gradients by finite differences; bad equations."""

import numpy as np
import pytest
from gradcheck import check_grad

import megengine as mge
import megengine.functional as F

rng = np.random.default_rng(3)


def randn(*shape):
    return rng.normal(size=shape).astype(np.float32)


CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij", [(2, 3)]),
    ("ji", [(2, 3)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...i->...", [(2, 3, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ijk,ikj->i", [(2, 3, 4), (2, 4, 3)]),
    ("ab,ab->ab", [(2, 3), (1, 3)]),
    ("ab,cb->ac", [(2, 1), (4, 3)]),
    ("i,i", [(0,), (0,)]),
    ("ij,jk->ik", [(0, 3), (3, 2)]),
    (" i j , j k -> i k ", [(2, 3), (3, 2)]),
]


@pytest.mark.parametrize("eq,shapes", CASES)
def test_einsum_matches_numpy(eq, shapes):
    arrays = [randn(*s) for s in shapes]
    got = F.einsum(eq, *[mge.Tensor(a) for a in arrays]).numpy()
    want = np.einsum(eq.replace(" ", ""), *arrays)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_einsum_integers_and_promotion():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = F.einsum("ij,kj->ik", a, a)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), a @ a.T)
    mixed = F.einsum("ij,kj->ik", a, a.astype(np.float32))
    assert mixed.dtype == np.float32


@pytest.mark.parametrize(
    "eq,shapes",
    [
        ("ij,jk->ik", [(2, 3), (3, 4)]),
        ("ii->i", [(3, 3)]),
        ("bn,anm,bm->ba", [(2, 3), (4, 3, 2), (2, 2)]),
        ("ab,ab->", [(2, 3), (1, 3)]),
    ],
)
def test_einsum_grad(eq, shapes):
    check_grad(lambda *ts: F.einsum(eq, *ts), *[randn(*s) for s in shapes])


@pytest.mark.parametrize(
    "eq,shapes,match",
    [
        ("ij,jk->ik", [(2, 3)], "has 2 operands"),
        ("ij->ik", [(2, 3)], "appears in no operand"),
        ("ijk->i", [(2, 3)], "names 3 dimensions"),
        ("ij,jk->ik", [(2, 3), (4, 5)], "sizes 3 and 4"),
        ("ij->ii", [(2, 3)], "repeats a label"),
        ("i1->i", [(2, 3)], "bad term"),
        ("ii->i", [(2, 3)], "sizes 2 and 3"),
    ],
)
def test_einsum_errors(eq, shapes, match):
    with pytest.raises(ValueError, match=match):
        F.einsum(eq, *[randn(*s) for s in shapes])
