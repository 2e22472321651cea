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
