"""Gradients at the kinks of piecewise functions follow MegEngine 1.13's rules: a tie of
maximum/minimum gives its gradient to the first input alone, abs at 0 gives -dy, clip's bounds
belong to the inside, relu at 0 gives none, a reduction's tied maxima all get the gradient.
The expected values are MegEngine's (fixtures/megengine_1_13/tie_grads.npz, made by
fixtures/make_tie_grad_fixtures.py from fixtures/tie_grad_cases.py's cases); max(x, x) = x is
also checked against its own derivative."""

import importlib.util
import os

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
_spec = importlib.util.spec_from_file_location(
    "tie_grad_cases", os.path.join(FIXTURES, "tie_grad_cases.py")
)
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)
EXPECTED = np.load(os.path.join(FIXTURES, "megengine_1_13", "tie_grads.npz"))


def _run(fn, inputs):
    xs = [mge.tensor(np.asarray(v, "float32")) for v in inputs]
    gm = GradManager().attach(xs)
    with gm:
        y = fn(F, *xs)
        gm.backward((y * mge.tensor(cases.upstream(y.shape))).sum())
    return y.numpy(), [x.grad.numpy() for x in xs]


@pytest.mark.parametrize("name,fn,inputs", cases.CASES, ids=[c[0] for c in cases.CASES])
def test_matches_megengine(name, fn, inputs):
    y, grads = _run(fn, inputs)
    want = EXPECTED[name + "/y"]
    # Where an input is NaN, maximum/minimum give NaN (NumPy's rule); MegEngine's x86 kernel
    # passes the other input through for one of the two orders. Only the gradients are compared
    # there (none for either input in both frameworks).
    both = ~np.isnan(y) & ~np.isnan(want)
    np.testing.assert_array_equal(y[both], want[both])
    for i, g in enumerate(grads):
        # dy times 0 or +-1: exact
        np.testing.assert_array_equal(g, EXPECTED[f"{name}/g{i}"], err_msg=f"input {i}")


def test_maximum_of_a_tensor_with_itself_has_derivative_one():
    x = np.array([-1.5, 0.0, 2.0], "float32")
    _, (g,) = _run(lambda F, t: F.maximum(t, t) + F.minimum(t, t), [x])
    np.testing.assert_array_equal(g, 2 * cases.upstream(x.shape))


def test_ties_do_not_double_count_the_gradient():
    # whatever input gets a tie's gradient, the two together get dy once (d max(a, a) = da)
    a = np.array([1.0, 0.0, -3.0, 2.0], "float32")
    b = np.array([1.0, 0.0, -3.0, 5.0], "float32")
    for op in (F.maximum, F.minimum):
        _, (ga, gb) = _run(lambda F, s, t, op=op: op(s, t), [a, b])
        np.testing.assert_array_equal(ga + gb, cases.upstream(a.shape))
