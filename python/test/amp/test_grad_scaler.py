"""amp.GradScaler against MegEngine 1.13: the scale factor, the skipped steps and the unscaled
gradients of a run with injected inf and NaN losses, recorded from MegEngine itself (the same
script run with megengine 1.13)."""

import numpy as np
import pytest

import megengine as mge
import megengine.optimizer as optim
from megengine.amp import GradScaler
from megengine.autodiff import GradManager
from megengine.functional.math import _check_non_finite
from megengine.jit import trace

# Loss factors per step: finite ones, then an inf, a NaN and a -inf that must skip the step.
PATTERN = [1, 1, np.inf, 1, 1, 1, np.nan, 1, 1, 1, 1, -np.inf, 1]
# MegEngine 1.13, GradScaler(2**4, 2.0, 0.5, growth_interval=3), SGD lr 0.125, loss sum(w*w)*k
MGE_SCALES = [16.0, 16.0, 8.0, 8.0, 8.0, 16.0, 8.0, 8.0, 8.0, 16.0, 16.0, 8.0, 8.0]
MGE_W = [
    [0.75, -1.5, 2.25],
    [0.5625, -1.125, 1.6875],
    [0.5625, -1.125, 1.6875],
    [0.421875, -0.84375, 1.265625],
    [0.31640625, -0.6328125, 0.94921875],
    [0.2373046875, -0.474609375, 0.7119140625],
    [0.2373046875, -0.474609375, 0.7119140625],
    [0.177978515625, -0.35595703125, 0.533935546875],
    [0.13348388671875, -0.2669677734375, 0.40045166015625],
    [0.1001129150390625, -0.200225830078125, 0.3003387451171875],
    [0.07508468627929688, -0.15016937255859375, 0.22525405883789062],
    [0.07508468627929688, -0.15016937255859375, 0.22525405883789062],
    [0.056313514709472656, -0.11262702941894531, 0.16894054412841797],
]
MGE_GRADS = [
    [2.0, -4.0, 6.0],
    [1.5, -3.0, 4.5],
    None,
    [1.125, -2.25, 3.375],
    [0.84375, -1.6875, 2.53125],
    [0.6328125, -1.265625, 1.8984375],
    None,
    [0.474609375, -0.94921875, 1.423828125],
    [0.35595703125, -0.7119140625, 1.06787109375],
    [0.2669677734375, -0.533935546875, 0.8009033203125],
    [0.200225830078125, -0.40045166015625, 0.600677490234375],
    None,
    [0.15016937255859375, -0.3003387451171875, 0.45050811767578125],
]


def test_injected_inf_and_nan_skip_the_step_and_back_off_like_megengine():
    w = mge.Parameter(np.array([1.0, -2.0, 3.0], "float32"))
    gm = GradManager().attach([w])
    opt = optim.SGD([w], lr=0.125)
    scaler = GradScaler(init_scale=2.0**4, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
    for step, k in enumerate(PATTERN):
        with gm:
            scaler.backward(gm, (w * w).sum() * mge.Tensor(float(k)))
        grad = None if w.grad is None else w.grad.numpy().tolist()
        assert grad == MGE_GRADS[step], step
        opt.step().clear_grad()
        assert scaler.scale_factor == MGE_SCALES[step], step
        np.testing.assert_allclose(w.numpy(), MGE_W[step], rtol=1e-6, err_msg=str(step))
    assert scaler.state_dict() == {
        "scale_factor": 8.0,
        "growth_factor": 2.0,
        "backoff_factor": 0.5,
        "growth_interval": 3,
        "_growth_tracker": 1,
    }


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the graph replays
def test_traced_step_replays_megengines_run_with_no_host_decision():
    w = mge.Parameter(np.array([1.0, -2.0, 3.0], "float32"))
    gm = GradManager().attach([w])
    opt = optim.SGD([w], lr=0.125)
    scaler = GradScaler(init_scale=2.0**4, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)

    @trace
    def step(k):
        with gm:
            scaler.backward(gm, (w * w).sum() * k)
        grad = w.grad * 1.0  # the unscaled gradient, non-finite on a skipped step
        opt.step().clear_grad()
        return grad

    sessions = set()
    for i, k in enumerate(PATTERN):
        grad = step(mge.Tensor(float(k))).numpy()
        sessions.add(id(step._session))
        if MGE_GRADS[i] is None:
            assert not np.isfinite(grad).all(), i
        else:
            assert grad.tolist() == MGE_GRADS[i], i
        assert w.grad is None
        assert scaler.scale_factor == MGE_SCALES[i], i
        np.testing.assert_allclose(w.numpy(), MGE_W[i], rtol=1e-6, err_msg=str(i))
    assert step._mode == "graph" and len(sessions) == 1  # recorded once, replayed since
    assert scaler.state_dict()["_growth_tracker"] == 1


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the graph replays
@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "Adagrad", "LAMB"])
def test_traced_skipped_step_keeps_every_optimizer_state_as_eager(opt_name):
    make = {
        "SGD": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01),
        "Adam": lambda ps: optim.Adam(ps, lr=0.1, weight_decay=0.01),
        "Adagrad": lambda ps: optim.Adagrad(ps, lr=0.1),
        "LAMB": lambda ps: optim.LAMB(ps, lr=0.1),
    }[opt_name]
    factors = [1.0, np.inf, 1.0, np.nan, np.nan, 1.0, 1.0]
    runs = []
    for traced in (False, True):
        w = mge.Parameter(np.array([[0.5, -1.5], [2.0, 0.25]], "float32"))
        b = mge.Parameter(np.array([0.1, -0.2], "float32"))
        gm = GradManager().attach([w, b])
        opt = make([w, b])
        scaler = GradScaler(init_scale=4.0, growth_interval=2)

        def step(k, w=w, b=b, gm=gm, opt=opt, scaler=scaler):
            with gm:
                loss = ((w * w).sum() + (b * w).sum() * 3.0) * k
                scaler.backward(gm, loss)
            opt.step().clear_grad()
            return loss

        if traced:
            step = trace(step)
        trail = []
        for k in factors:
            step(mge.Tensor(k))
            state = [
                np.asarray(v) for st in opt.state_dict()["state"].values() for v in st.values()
            ]
            trail.append((w.numpy(), b.numpy(), scaler.scale_factor, state))
        assert not traced or step._mode == "graph"
        runs.append(trail)
    for i, (eager, traced) in enumerate(zip(*runs)):
        np.testing.assert_allclose(traced[0], eager[0], rtol=1e-6, err_msg=str(i))
        np.testing.assert_allclose(traced[1], eager[1], rtol=1e-6, err_msg=str(i))
        assert traced[2] == eager[2], i
        for a, e in zip(traced[3], eager[3]):
            np.testing.assert_allclose(a, e, rtol=1e-6, err_msg=str(i))
    # the skipped steps (1, 3 and 4) changed nothing
    for before, after in [(0, 1), (2, 3), (2, 4)]:
        np.testing.assert_array_equal(runs[1][before][0], runs[1][after][0])
        for a, e in zip(runs[1][before][3], runs[1][after][3]):
            np.testing.assert_array_equal(a, e)
    assert [t[2] for t in runs[0]] == [4.0, 2.0, 2.0, 1.0, 0.5, 0.5, 1.0]


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the graph replays
def test_update_outside_the_trace_reads_each_replays_flag():
    w = mge.Parameter([1.0, 2.0])
    gm = GradManager().attach([w])
    opt = optim.SGD([w], lr=0.25)
    scaler = GradScaler(init_scale=8.0, growth_interval=1)

    @trace
    def step(k):
        with gm:
            scaler.backward(gm, (w * w).sum() * k, update_scale=False)
        opt.step().clear_grad()

    scales = []
    for k in [1.0, np.inf, 1.0]:
        step(mge.Tensor(k))
        scaler.update()
        scales.append(scaler.scale_factor)
    assert scales == [16.0, 8.0, 16.0]
    np.testing.assert_allclose(w.numpy(), [0.25, 0.5])  # two steps of w -= 0.25 * 2w


def test_unscale_in_a_trace_without_the_optimizer_step_runs_eagerly():
    w = mge.Parameter([1.0, 2.0])
    gm = GradManager().attach([w])
    opt = optim.SGD([w], lr=0.25)
    scaler = GradScaler(init_scale=8.0)

    @trace
    def backward(k):
        with gm:
            scaler.backward(gm, (w * w).sum() * k)

    with pytest.warns(RuntimeWarning, match="no optimizer step"):
        backward(mge.Tensor(1.0))
    opt.step().clear_grad()
    backward(mge.Tensor(np.inf))  # eager: the gradient is dropped, so the step skips
    assert w.grad is None
    opt.step().clear_grad()
    np.testing.assert_allclose(w.numpy(), [0.5, 1.0])
    assert scaler.scale_factor == 4.0


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the graph replays
def test_scale_is_float32_and_assignments_reach_a_traced_step():
    s = GradScaler(init_scale=0.1, growth_factor=3.0, growth_interval=1)
    assert s.scale_factor == float(np.float32(0.1))
    s.update()
    assert s.scale_factor == float(np.float32(np.float32(0.1) * np.float32(3.0)))
    w = mge.Parameter([1.0])
    gm = GradManager().attach([w])
    opt = optim.SGD([w], lr=0.0)

    @trace
    def step():
        with gm:
            s.backward(gm, w * 4.0, update_scale=False)
        g = w.grad * 1.0
        opt.step().clear_grad()
        return g

    step()
    s.scale_factor = 1e38  # 4 * 1e38 overflows float32: the step is skipped
    assert np.isinf(step().numpy()).all()
    s.load_state_dict({**s.state_dict(), "scale_factor": 2.0})
    assert step().numpy().tolist() == [4.0]


def test_unscale_checks_every_gradient_and_drops_all_on_overflow():
    a, b = mge.Parameter([1.0]), mge.Parameter([2.0])
    a.grad, b.grad = mge.Tensor([8.0]), mge.Tensor([float("nan")])
    scaler = GradScaler(init_scale=4.0)
    scaler.unscale([a, b])
    assert a.grad is None and b.grad is None
    scaler.update()
    assert scaler.scale_factor == 2.0
    a.grad, b.grad = mge.Tensor([8.0]), mge.Tensor([-4.0])
    scaler.unscale([a, b, mge.Parameter([0.0])])  # one without a grad is passed over
    assert a.grad.numpy().tolist() == [4.0] and b.grad.numpy().tolist() == [-2.0]


def test_split_backward_unscale_update_as_megengines_docstring():
    w = mge.Parameter([1.0, 2.0])
    gm = GradManager().attach([w])
    scaler = GradScaler(init_scale=8.0, growth_interval=1)
    with gm:
        loss = (w * w).sum()
        gm.backward(loss, dy=mge.tensor(scaler.scale_factor))
    assert w.grad.numpy().tolist() == [16.0, 32.0]
    scaler.unscale(gm.attached_tensors())
    scaler.update()
    assert w.grad.numpy().tolist() == [2.0, 4.0]
    assert scaler.scale_factor == 16.0


def test_backward_scales_given_dy_and_can_accumulate():
    w = mge.Parameter([3.0])
    gm = GradManager().attach([w])
    scaler = GradScaler(init_scale=4.0)
    for _ in range(2):  # accumulate two scaled backwards, then unscale once
        with gm:
            scaler.backward(gm, [w * 2], [mge.Tensor([1.5])], unscale_grad=False)
    assert w.grad.numpy().tolist() == [2 * 2 * 1.5 * 4.0]
    scaler.unscale([w]).update()
    assert w.grad.numpy().tolist() == [6.0]


def test_growth_interval_zero_keeps_the_scale_and_does_not_check():
    w = mge.Parameter([1.0])
    w.grad = mge.Tensor([float("inf")])
    scaler = GradScaler(init_scale=2.0, growth_interval=0)
    scaler.unscale([w])
    scaler.update()
    assert w.grad.numpy().tolist() == [float("inf")] and scaler.scale_factor == 2.0
    scaler.update(new_scale=64.0)
    assert scaler.scale_factor == 2.0  # MegEngine ignores even an explicit scale then


def test_update_with_new_scale_and_state_dict_round_trip():
    s = GradScaler()
    assert (s.scale_factor, s.growth_factor, s.backoff_factor, s.growth_interval) == (
        16.0,
        2.0,
        0.5,
        2000,
    )
    s.update(new_scale=3.0)
    t = GradScaler()
    t.load_state_dict(s.state_dict())
    assert t.state_dict() == s.state_dict() and t.scale_factor == 3.0


def test_check_non_finite_scales_in_place_and_rejects_nothing_to_check():
    g = [mge.Tensor([2.0, -4.0]), mge.Tensor([1.0])]
    assert _check_non_finite(g, 0.25).numpy().tolist() == [0]
    assert g[0].numpy().tolist() == [0.5, -1.0] and g[1].numpy().tolist() == [0.25]
    assert _check_non_finite(mge.Tensor([float("-inf")])).numpy().tolist() == [1]
    with pytest.raises(ValueError, match="no tensors"):
        _check_non_finite([])
