"""The names MegEngine 1.13's optimizer package has beside the optimizers: its module paths,
LAMBFp16, and the Optimizer methods that only point elsewhere (bcast_param, backward) or are
deprecated (zero_grad)."""

import importlib
import warnings

import numpy as np
import pytest

import megengine as mge
import megengine.module as M
import megengine.optimizer as optim

from .test_optimizer import np_lamb


@pytest.mark.parametrize(
    "module,name",
    [
        ("megengine.optimizer.adamw", "AdamW"),
        ("megengine.optimizer.adadelta", "Adadelta"),
        ("megengine.optimizer.multi_step_lr", "MultiStepLR"),
        ("megengine.optimizer.lamb", "LAMBFp16"),
    ],
)
def test_megengine_module_paths_hold_the_same_classes(module, name):
    assert getattr(importlib.import_module(module), name) is getattr(optim, name)


def test_adaptive_pooling_module_path_and_megengines_documented_values():
    from megengine.module.adaptive_pooling import AdaptiveAvgPool2d, AdaptiveMaxPool2d

    assert AdaptiveAvgPool2d is M.AdaptiveAvgPool2d and AdaptiveMaxPool2d is M.AdaptiveMaxPool2d
    x = mge.tensor(np.arange(16, dtype="float32").reshape(1, 1, 4, 4))
    # the examples of MegEngine's adaptive_pooling docstrings
    assert AdaptiveMaxPool2d((2, 2))(x).numpy().tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    assert AdaptiveAvgPool2d((2, 2))(x).numpy().tolist() == [[[[2.5, 4.5], [10.5, 12.5]]]]


def test_bcast_param_and_backward_point_elsewhere():
    opt = optim.SGD([mge.Parameter([1.0])], lr=0.1)
    with pytest.raises(NotImplementedError, match="distributed.bcast_list_"):
        opt.bcast_param()
    with pytest.raises(NotImplementedError, match="GradManager"):
        opt.backward(mge.Tensor(1.0))


def test_zero_grad_zeros_in_place_and_warns():
    a = mge.Parameter([1.0, 2.0])
    b = mge.Parameter(np.ones((2, 3), "float32"))
    a.grad = mge.Tensor([3.0, -4.0])
    grad = a.grad
    opt = optim.SGD([a, b], lr=0.1)
    with pytest.warns(DeprecationWarning, match="clear_grad"):
        opt.zero_grad()
    assert a.grad is grad and grad.numpy().tolist() == [0.0, 0.0]
    assert b.grad is None  # a missing gradient stays missing


def _lamb_fp16_run(p0, grads, **hyper):
    w = mge.Parameter(p0.astype(np.float16))
    opt = optim.LAMBFp16([w], **hyper)
    for g in grads:
        w.grad = mge.Tensor(g.astype(np.float16))
        assert opt.step() is opt
    return w, opt


@pytest.mark.parametrize(
    "hyper",
    [
        {"lr": 0.01},
        {"lr": 0.01, "weight_decay": 0.1},
        {"lr": 0.02, "always_adapt": True, "bias_correction": False},
    ],
)
def test_lamb_fp16_updates_a_float32_master_copy(hyper):
    rng = np.random.default_rng(3)
    p0 = rng.normal(size=(3, 4))
    grads = [rng.normal(size=(3, 4)) for _ in range(5)]
    w, opt = _lamb_fp16_run(p0, grads, **hyper)
    # the reference starts from the float16 values and sees the float16 gradients
    p, st = p0.astype(np.float16).astype(np.float64), {}
    for t, g in enumerate(grads, 1):
        p = np_lamb(p, g.astype(np.float16).astype(np.float64), st, t, **hyper)
    master = opt._state[w]["param_fp32"]
    assert master.dtype == np.float32 and opt._state[w]["exp_avg"].dtype == np.float32
    np.testing.assert_allclose(master.numpy(), p, rtol=2e-5, atol=2e-6)
    assert w.dtype == np.float16
    np.testing.assert_array_equal(w.numpy(), master.numpy().astype(np.float16))


def test_lamb_fp16_keeps_updates_too_small_for_float16():
    # near 1024 float16 steps by 1.0; each update is about lr = 1e-3
    p0 = np.full(4, 1024.0)
    grads = [np.ones(4)] * 10
    w, opt = _lamb_fp16_run(p0, grads, lr=1e-3)
    master = opt._state[w]["param_fp32"].numpy()
    # float32 steps by 1.2e-4 near 1024, so ten roundings stay within 1e-3 of the exact sum
    np.testing.assert_allclose(master, 1024.0 - 10 * 1e-3, rtol=0, atol=1e-3)
    assert master[0] < 1024.0 - 5e-3
    assert w.numpy().tolist() == [1024.0] * 4  # float16 could not show it yet


def test_lamb_fp16_state_dict_round_trip_continues_identically():
    rng = np.random.default_rng(4)
    p0 = rng.normal(size=5)
    grads = [rng.normal(size=5) for _ in range(4)]
    w, opt = _lamb_fp16_run(p0, grads[:2], lr=0.05, weight_decay=0.01)
    sd = opt.state_dict()
    assert set(sd["state"][0]) == {"exp_avg", "exp_avg_sq", "step", "param_fp32"}
    w2 = mge.Parameter(w.numpy())
    opt2 = optim.LAMBFp16([w2], lr=0.05, weight_decay=0.01)
    opt2.load_state_dict(sd)
    for g in grads[2:]:
        for p, o in ((w, opt), (w2, opt2)):
            p.grad = mge.Tensor(g.astype(np.float16))
            o.step()
    np.testing.assert_array_equal(w.numpy(), w2.numpy())
    np.testing.assert_array_equal(
        opt._state[w]["param_fp32"].numpy(), opt2._state[w2]["param_fp32"].numpy()
    )


def test_lamb_fp16_float32_parameter_stays_float32_and_bad_hyper_raises():
    w = mge.Parameter([3.0, 4.0])
    opt = optim.LAMBFp16([w], lr=0.1, always_adapt=True)
    w.grad = mge.Tensor([1.0, 1.0])
    opt.step()
    assert w.dtype == np.float32
    np.testing.assert_allclose(w.numpy(), [2.64645, 3.64645], rtol=1e-5)  # LAMB's own example
    with pytest.raises(ValueError, match="LAMBFp16: invalid lr"):
        optim.LAMBFp16([mge.Parameter([1.0])], lr=-1.0)
    with pytest.raises(ValueError, match="LAMBFp16: invalid betas"):
        optim.LAMBFp16([mge.Parameter([1.0])], lr=0.1, betas=(1.0, 0.9))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optim.LAMBFp16([mge.Parameter([1.0])], lr=0.1)
