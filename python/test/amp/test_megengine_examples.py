"""MegEngine 1.13's own amp examples (the docstrings of ``autocast`` and ``GradScaler``, the
``convert_module_format`` recipe), run unchanged, eagerly and inside ``jit.trace``: a traced
step gives the eager step's losses, parameters and loss scale, overflowing steps included."""

import warnings

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
import megengine.optimizer as optim
from megengine import amp
from megengine.amp import GradScaler
from megengine.autodiff import GradManager
from megengine.jit import trace

from .megengine_examples import (
    autocast_context,
    autocast_decorator,
    grad_scaler_backward,
    grad_scaler_split,
)

STEPS = 6


class Net(M.Module):
    def __init__(self):
        super().__init__()
        self.conv = M.Conv2d(3, 4, 3, padding=1)
        self.bn = M.BatchNorm2d(4)
        self.fc = M.Linear(4 * 4 * 4, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(F.flatten(x, 1))


INIT = [p.numpy() for p in Net().parameters()]


def fresh_model():
    model = Net()
    for p, v in zip(model.parameters(), INIT):
        p._reset(mge.Tensor(v))
    return model


def data(step, overflow_at=None):
    rng = np.random.default_rng(step)
    image = rng.standard_normal((4, 3, 8, 8)).astype("float32")
    if step == overflow_at:
        image[0, 0, 0, 0] = np.inf  # the loss, and so every gradient, is not finite
    return mge.Tensor(image), mge.Tensor(rng.integers(0, 5, 4).astype("int32"))


def run(make_step, traced, overflow_at=None):
    """Losses, final parameters and the scaler of STEPS steps of the step make_step builds."""
    model = fresh_model()
    gm = GradManager()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = GradScaler(init_scale=2.0**8, growth_interval=2)
    gm.attach(model.parameters())
    train_step = make_step(model, gm, opt, scaler)
    if traced:
        train_step = trace(train_step)
    losses = []
    with warnings.catch_warnings():
        # a dynamic GradScaler makes the trace run its step eagerly, with a warning
        warnings.simplefilter("ignore", RuntimeWarning)
        for step in range(STEPS):
            losses.append(float(train_step(*data(step, overflow_at)).numpy()))
    return losses, [p.numpy() for p in model.parameters()], scaler


@pytest.mark.parametrize("make_step", [autocast_decorator, autocast_context])
def test_autocast_examples_traced_match_eager(make_step):
    losses, params, _ = run(make_step, traced=False)
    t_losses, t_params, _ = run(make_step, traced=True)
    assert all(np.isfinite(losses)) and losses[-1] != losses[0]
    np.testing.assert_allclose(t_losses, losses, rtol=1e-5)
    for a, b in zip(t_params, params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    # the decorator and the context manager are the same step
    other = autocast_context if make_step is autocast_decorator else autocast_decorator
    np.testing.assert_allclose(run(other, traced=False)[0], losses, rtol=1e-6)


@pytest.mark.parametrize("make_step", [grad_scaler_backward, grad_scaler_split])
def test_grad_scaler_examples_skip_overflow_traced_as_eager(make_step):
    losses, params, scaler = run(make_step, traced=False, overflow_at=3)
    t_losses, t_params, t_scaler = run(make_step, traced=True, overflow_at=3)
    # 256, two finite steps: 512, one more, the overflow halves it, two finite steps double it
    # (no overflow would end at 2048)
    assert scaler.scale_factor == t_scaler.scale_factor == 512.0
    np.testing.assert_allclose(t_losses, losses, rtol=1e-5)
    for a, b in zip(t_params, params):
        assert np.isfinite(a).all()
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_dynamic_grad_scaler_makes_the_trace_run_eagerly_with_a_warning():
    model = fresh_model()
    gm = GradManager().attach(model.parameters())
    opt = optim.SGD(model.parameters(), lr=0.1)
    step = trace(grad_scaler_backward(model, gm, opt, GradScaler()))
    with pytest.warns(RuntimeWarning, match="GradScaler"):
        step(*data(0))


def test_fixed_grad_scaler_replays_and_records_again_for_a_new_scale():
    results, sessions = [], []
    for traced in (False, True):
        model = fresh_model()
        gm = GradManager().attach(model.parameters())
        opt = optim.SGD(model.parameters(), lr=0.1)
        scaler = GradScaler(init_scale=2.0**6, growth_interval=0)
        step = grad_scaler_backward(model, gm, opt, scaler)
        if traced:
            step = trace(step)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # the graph replays
            for i in range(STEPS):
                if i == 3:
                    scaler.scale_factor = 2.0**3  # held by the graph: recorded again
                step(*data(i))
                if traced:
                    sessions.append(step._session)
        results.append([p.numpy() for p in model.parameters()])
    assert sessions[0] is sessions[1] is sessions[2]
    assert sessions[3] is not sessions[2] and sessions[3] is sessions[4] is sessions[5]
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_convert_module_format_recipe_trains_as_nchw():
    def make(model, gm, opt, scaler):
        # MegEngine's NHWC recipe: the module and each input converted, the step unchanged
        amp.convert_module_format(model)
        step = grad_scaler_backward(model, gm, opt, scaler)

        def train_step(image, label):
            return step(amp.convert_tensor_format(image), label)

        return train_step

    losses, params, _ = run(grad_scaler_backward, traced=False)
    nhwc_losses, nhwc_params, _ = run(make, traced=False)
    np.testing.assert_allclose(nhwc_losses, losses, rtol=1e-5)
    for a, b in zip(nhwc_params, params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
