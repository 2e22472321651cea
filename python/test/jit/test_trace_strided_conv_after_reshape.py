"""A symbolic trace whose forward ends in a shape computed from values (F.flatten records
GetVarShape and a -1 made during the call, frozen into a constant when the graph compiles) and
whose backward runs a strided convolution's input gradient: 14 rows of input give 7 rows of
output, and 7 rows give back 13 or 14. The compiled graph must keep the recorded 14 once the
shapes are static again, and compile (not fall back to eager with a warning)."""

import warnings

import numpy as np

import megengine as mge
import megengine.functional as F
import megengine.module as M
import megengine.optimizer as optim
from megengine.autodiff import GradManager
from megengine.jit import trace


def _make_step(inp, conv, head):
    params = [inp, *conv.parameters(), *head.parameters()]
    gm = GradManager().attach(params)
    opt = optim.SGD(params, lr=0.1)

    def step():
        with gm:
            y = head(F.flatten(F.relu(conv(F.relu(inp))), 1))
            loss = (y * y).mean()
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    return step, params


def test_strided_conv_gradient_keeps_its_input_shape():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 14, 14)).astype("float32")
    results = []
    for traced in (False, True):
        mge.random.seed(3)
        conv, head = M.Conv2d(4, 6, 3, stride=2, padding=1), M.Linear(294, 3)
        step, params = _make_step(mge.Parameter(x), conv, head)
        f = trace(step, symbolic=True) if traced else step
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # "the recording did not compile"
            losses = [float(f().numpy()) for _ in range(3)]
        if traced:
            assert f._graph_text()  # a compiled graph exists
        results.append((losses, [p.numpy() for p in params]))
    (eager_losses, eager_params), (graph_losses, graph_params) = results
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    for a, b in zip(eager_params, graph_params):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
