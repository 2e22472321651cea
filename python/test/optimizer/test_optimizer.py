"""Each optimizer, step by step, against a NumPy re-implementation of its documented formula;
the Optimizer base (groups, state dicts, errors), gradient clipping and MultiStepLR."""

import math

import numpy as np
import pytest

import megengine as mge
import megengine.optimizer as optim
from megengine.autodiff import GradManager

SHAPES = [(), (0,), (7,), (3, 4)]


# NumPy references: each takes (p, g, state dict, step t from 1, hyperparameters) and returns
# the new p, updating state in place. float64 throughout.
def np_sgd(p, g, st, t, lr, momentum=0.0, nesterov=False, weight_decay=0.0):
    g = g + weight_decay * p
    if momentum:
        st["v"] = momentum * st.get("v", np.zeros_like(p)) + g
        g = g + momentum * st["v"] if nesterov else st["v"]
    return p - lr * g


def np_adam(p, g, st, t, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    if not decoupled:
        g = g + weight_decay * p
    st["m"] = betas[0] * st.get("m", 0) + (1 - betas[0]) * g
    st["v"] = betas[1] * st.get("v", 0) + (1 - betas[1]) * g * g
    d = (st["m"] / (1 - betas[0] ** t)) / (np.sqrt(st["v"] / (1 - betas[1] ** t)) + eps)
    if decoupled:
        d = d + weight_decay * p
    return p - lr * d


def np_adamw(p, g, st, t, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    return np_adam(p, g, st, t, lr, betas, eps, weight_decay, decoupled=True)


def np_adagrad(p, g, st, t, lr=1e-2, lr_decay=0.0, eps=1e-10, weight_decay=0.0):
    g = g + weight_decay * p
    st["s"] = st.get("s", 0) + g * g
    return p - lr / (1 + (t - 1) * lr_decay) * g / np.sqrt(st["s"] + eps)


def np_adadelta(p, g, st, t, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0):
    g = g + weight_decay * p
    st["s"] = rho * st.get("s", 0) + (1 - rho) * g * g
    d = np.sqrt(st.get("a", 0) + eps) / np.sqrt(st["s"] + eps) * g
    st["a"] = rho * st.get("a", 0) + (1 - rho) * d * d
    return p - lr * d


def np_lamb(p, g, st, t, lr, betas=(0.9, 0.999), eps=1e-8, bias_correction=True,
            weight_decay=0.0, always_adapt=False):  # fmt: skip
    st["m"] = betas[0] * st.get("m", 0) + (1 - betas[0]) * g
    st["v"] = betas[1] * st.get("v", 0) + (1 - betas[1]) * g * g
    m, v = st["m"], st["v"]
    if bias_correction:
        m, v = m / (1 - betas[0] ** t), v / (1 - betas[1] ** t)
    u = m / (np.sqrt(v) + eps) + weight_decay * p
    r = 1.0
    if weight_decay != 0 or always_adapt:
        pn, un = np.linalg.norm(p.ravel()), np.linalg.norm(u.ravel())
        r = pn / un if pn > 0 and un > 0 else 1.0
    return p - lr * r * u


CASES = [
    (optim.SGD, np_sgd, {"lr": 0.1}),
    (optim.SGD, np_sgd, {"lr": 0.05, "momentum": 0.9}),
    (optim.SGD, np_sgd, {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-2}),
    (optim.SGD, np_sgd, {"lr": 0.1, "weight_decay": 0.1}),
    (optim.Adam, np_adam, {"lr": 0.01}),
    (optim.Adam, np_adam, {"lr": 0.02, "betas": (0.5, 0.9), "eps": 1e-3, "weight_decay": 0.1}),
    (optim.AdamW, np_adamw, {"lr": 0.01}),
    (optim.AdamW, np_adamw, {"lr": 0.02, "betas": (0.8, 0.99), "weight_decay": 0.3}),
    (optim.Adagrad, np_adagrad, {}),
    (optim.Adagrad, np_adagrad, {"lr": 0.1, "lr_decay": 0.5, "eps": 1e-4, "weight_decay": 0.2}),
    (optim.Adadelta, np_adadelta, {}),
    (optim.Adadelta, np_adadelta, {"lr": 0.5, "rho": 0.5, "eps": 1e-3, "weight_decay": 0.1}),
    (optim.LAMB, np_lamb, {"lr": 0.01}),
    (optim.LAMB, np_lamb, {"lr": 0.01, "weight_decay": 0.1}),
    (optim.LAMB, np_lamb, {"lr": 0.02, "always_adapt": True, "bias_correction": False}),
]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize(
    "cls,ref,hyper", CASES, ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(CASES)]
)
def test_steps_match_numpy(cls, ref, hyper, shape):
    rng = np.random.default_rng(0)
    p0 = rng.normal(size=shape)
    w = mge.Parameter(p0.astype(np.float32))
    opt = cls([w], **hyper)
    p, st = p0.copy(), {}
    for t in range(1, 6):
        g = rng.normal(size=shape)
        w.grad = mge.Tensor(g.astype(np.float32))
        assert opt.step() is opt
        p = ref(p, g.astype(np.float32).astype(np.float64), st, t, **hyper)
        np.testing.assert_allclose(w.numpy(), p, rtol=2e-5, atol=2e-6, err_msg=f"step {t}")
        assert w.numpy().dtype == np.float32 and w.shape == shape


def test_grad_from_gradmanager_keeps_identity_and_attachment():
    rng = np.random.default_rng(1)
    xv = rng.normal(size=(8, 3)).astype(np.float32)
    yv = xv @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    w = mge.Parameter(np.zeros((3, 1), np.float32))
    gm = GradManager().attach(w)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    losses = []
    for _ in range(150):
        with gm:
            loss = ((mge.Tensor(xv) @ w - mge.Tensor(yv)) ** 2).mean()
            gm.backward(loss)
        opt.step().clear_grad()
        losses.append(loss.item())
        assert gm.attached_tensors()[0] is w
    assert losses[-1] < 1e-4 * losses[0]
    np.testing.assert_allclose(w.numpy().ravel(), [1.0, -2.0, 0.5], atol=1e-2)


def test_params_without_grad_are_skipped():
    a, b = mge.Parameter([1.0]), mge.Parameter([2.0])
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = mge.Tensor([1.0])
    opt.step()
    assert b.numpy().tolist() == [2.0]
    assert opt.state_dict()["state"][1]["step"] == 0.0
    assert opt.state_dict()["state"][0]["step"] == 1.0


def test_param_groups_and_their_hyperparameters():
    a, b, c = mge.Parameter([1.0]), mge.Parameter([1.0]), mge.Parameter([1.0])
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.0)
    opt.add_param_group({"params": [c], "lr": 1.0, "weight_decay": 1.0})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5, 1.0]
    assert opt.param_groups[2]["momentum"] == 0.0
    for t in (a, b, c):
        t.grad = mge.Tensor([1.0])
    opt.step()
    np.testing.assert_allclose([a.item(), b.item(), c.item()], [0.9, 0.5, -1.0], rtol=1e-6)


def test_optimizer_errors():
    w = mge.Parameter([1.0])
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="only optimize Parameters"):
        optim.SGD([mge.Tensor([1.0])], lr=0.1)
    with pytest.raises(TypeError, match="iterable"):
        optim.SGD(3, lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(ValueError, match="SGD: invalid lr: -1.0"):
        optim.SGD([w], lr=-1.0)
    with pytest.raises(ValueError, match="Adam: invalid betas\\[1\\]"):
        optim.Adam([w], lr=0.1, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Adadelta: invalid rho"):
        optim.Adadelta([w], rho=1.5)
    with pytest.raises(ValueError, match="nesterov"):
        optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(TypeError, match="SGD: lr must be a number"):
        optim.SGD([w], lr="0.1")
    with pytest.raises(ValueError, match="LAMB: invalid eps"):
        optim.LAMB([w], lr=0.1, eps=-1.0)
    with pytest.raises(ValueError, match="AdamW: betas must be a pair"):
        optim.AdamW([w], lr=0.1, betas=0.9)
    opt = optim.SGD([w], lr=0.1)
    opt.param_groups[0]["lr"] = mge.Tensor(0.1)
    with pytest.raises(TypeError, match="SGD: lr must be a number, got Tensor"):
        opt.step()
    with pytest.raises(TypeError, match="params mixes"):
        optim.SGD([w, {"params": [mge.Parameter([1.0])]}], lr=0.1)


@pytest.mark.parametrize("cls,kw", [(optim.SGD, {"momentum": 0.9}), (optim.Adam, {}),
                                    (optim.Adadelta, {}), (optim.LAMB, {})])  # fmt: skip
def test_state_dict_roundtrip_resumes_identically(cls, kw):
    rng = np.random.default_rng(2)
    p0 = rng.normal(size=(4, 3)).astype(np.float32)
    grads = [rng.normal(size=(4, 3)).astype(np.float32) for _ in range(6)]
    kw = dict(kw, lr=0.05) if cls is not optim.Adadelta else kw
    a = mge.Parameter(p0)
    opt_a = cls([a], **kw)
    for g in grads:
        a.grad = mge.Tensor(g)
        opt_a.step()
    b = mge.Parameter(p0)
    opt_b = cls([b], **kw)
    for g in grads[:3]:
        b.grad = mge.Tensor(g)
        opt_b.step()
    sd = opt_b.state_dict()
    assert all(isinstance(v, np.ndarray) for st in sd["state"].values() for v in st.values())
    c = mge.Parameter(b.numpy())
    opt_c = cls([c], **kw)
    opt_c.load_state_dict(sd)
    for g in grads[3:]:
        c.grad = mge.Tensor(g)
        opt_c.step()
    np.testing.assert_allclose(c.numpy(), a.numpy(), rtol=1e-6, atol=1e-7)
    kept = opt_b.state_dict(keep_var=True)
    assert all(isinstance(v, mge.Tensor) for st in kept["state"].values() for v in st.values())


def test_load_state_dict_errors():
    w = mge.Parameter([1.0, 2.0])
    sd = optim.SGD([w], lr=0.1, momentum=0.9).state_dict()
    other = optim.SGD([mge.Parameter([1.0]), mge.Parameter([2.0])], lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="group 0 has 2 parameters, the loaded one 1"):
        other.load_state_dict(sd)
    with pytest.raises(ValueError, match="keys"):
        optim.Adam([mge.Parameter([1.0, 2.0])], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="shape \\(2,\\), expected \\(3,\\)"):
        optim.SGD([mge.Parameter([1.0, 2.0, 3.0])], lr=0.1, momentum=0.9).load_state_dict(sd)
    with pytest.raises(ValueError, match="has 1 parameter groups, the optimizer has 2"):
        two = optim.SGD([{"params": [mge.Parameter([1.0])]}, {"params": [mge.Parameter([1.0])]}],
                        lr=0.1, momentum=0.9)  # fmt: skip
        two.load_state_dict(sd)
    with pytest.raises(ValueError, match="exactly"):
        optim.SGD([w], lr=0.1).load_state_dict({"state": {}})


@pytest.mark.parametrize("ord", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm(ord, max_norm):
    rng = np.random.default_rng(3)
    gs = [rng.normal(size=s).astype(np.float32) for s in [(3, 4), (5,), (), (0,)]]
    ps = [mge.Parameter(np.zeros_like(g)) for g in gs]
    for p, g in zip(ps, gs):
        p.grad = mge.Tensor(g)
    no_grad = mge.Parameter([1.0])
    flat = np.concatenate([g.ravel() for g in gs]).astype(np.float64)
    expected = np.max(np.abs(flat)) if math.isinf(ord) else np.sum(np.abs(flat) ** ord) ** (1 / ord)
    total = optim.clip_grad_norm(ps + [no_grad], max_norm=max_norm, ord=ord)
    assert isinstance(total, mge.Tensor) and total.ndim == 0
    np.testing.assert_allclose(total.item(), expected, rtol=1e-5)
    scale = min(max_norm / (expected + 1e-6), 1.0)
    for p, g in zip(ps, gs):
        np.testing.assert_allclose(p.grad.numpy(), g * scale, rtol=1e-5, atol=1e-7)
    assert no_grad.grad is None


def test_clip_grad_norm_edge_cases():
    assert optim.clip_grad_norm([mge.Parameter([1.0])], 1.0).item() == 0.0
    with pytest.raises(ValueError, match="clip_grad_norm: ord"):
        optim.clip_grad_norm([], 1.0, ord=0)
    with pytest.raises(ValueError, match="clip_grad_norm: max_norm"):
        optim.clip_grad_norm([], -1.0)
    with pytest.raises(TypeError, match="clip_grad_norm expects Tensors"):
        optim.clip_grad_norm([np.ones(3)], 1.0)


def test_clip_grad_value():
    rng = np.random.default_rng(4)
    g = rng.normal(size=(4, 5)).astype(np.float32) * 3
    w = mge.Parameter(np.zeros((4, 5), np.float32))
    w.grad = mge.Tensor(g).T.T
    optim.clip_grad_value([w, mge.Parameter([0.0])], lower=-1.0, upper=0.5)
    np.testing.assert_array_equal(w.grad.numpy(), np.clip(g, -1.0, 0.5))
    with pytest.raises(ValueError, match="lower \\(1.0\\) is greater than upper \\(0.0\\)"):
        optim.clip_grad_value(w, 1.0, 0.0)


def test_multistep_lr_schedule_and_resume():
    a, b = mge.Parameter([1.0]), mge.Parameter([1.0])
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=1.0)
    sched = optim.MultiStepLR(opt, milestones=[2, 4], gamma=0.1)
    seen = []
    for _ in range(6):
        seen.append([g["lr"] for g in opt.param_groups])
        sched.step()
    expected = [[1.0, 0.5]] * 2 + [[0.1, 0.05]] * 2 + [[0.01, 0.005]] * 2
    np.testing.assert_allclose(seen, expected)
    resumed = optim.MultiStepLR(opt, milestones=[2, 4], gamma=0.1, current_epoch=2)
    np.testing.assert_allclose([g["lr"] for g in opt.param_groups], [0.1, 0.05])  # epoch 3
    resumed.load_state_dict(sched.state_dict())
    assert resumed.current_epoch == 6
    with pytest.raises(KeyError, match="initial_lr"):
        optim.MultiStepLR(optim.SGD([a], lr=1.0), [1], current_epoch=3)
    with pytest.raises(ValueError, match="increasing"):
        optim.MultiStepLR(opt, [3, 1])
    with pytest.raises(TypeError, match="expects an Optimizer"):
        optim.MultiStepLR(object(), [1])
    with pytest.raises(KeyError, match="gamma"):
        sched.load_state_dict({"milestones": [1], "current_epoch": 0})


def test_optimizer_state_dict_survives_lr_schedule():
    w = mge.Parameter([1.0])
    opt = optim.SGD([w], lr=1.0, momentum=0.9)
    optim.MultiStepLR(opt, [0])
    sd = opt.state_dict()
    assert sd["param_groups"][0]["lr"] == pytest.approx(0.1)
    assert sd["param_groups"][0]["initial_lr"] == 1.0
    opt2 = optim.SGD([mge.Parameter([1.0])], lr=1.0, momentum=0.9)
    optim.MultiStepLR(opt2, [5])
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == pytest.approx(0.1)


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW, optim.Adagrad,
                                 optim.Adadelta, optim.LAMB])  # fmt: skip
def test_low_precision_parameters_keep_their_dtype(cls):
    p0 = np.array([0.5, -1.0, 2.0], np.float16)
    w = mge.Parameter(p0, dtype="float16")
    kw = {} if cls in (optim.Adagrad, optim.Adadelta) else {"lr": 0.1}
    opt = cls([w], **kw)
    for _ in range(3):
        w.grad = mge.Tensor([1.0, -2.0, 0.5], dtype="float16")
        opt.step()
    assert w._dtype_name == "float16"
    assert np.isfinite(w.numpy()).all() and not np.array_equal(w.numpy(), p0)


def test_step_inside_recording_matches_step_outside():
    def run(inside):
        w = mge.Parameter([1.0, -2.0])
        gm = GradManager().attach(w)
        opt = optim.Adam([w], lr=0.1, weight_decay=0.1)
        for _ in range(3):
            with gm:
                gm.backward((w * w * w).sum())
                if inside:
                    opt.step().clear_grad()
            if not inside:
                opt.step().clear_grad()
        return w.numpy()

    np.testing.assert_array_equal(run(True), run(False))


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.LAMB])
def test_parameters_on_another_device(cls):
    w = mge.Parameter([1.0, 2.0], device="cpu1")
    e = mge.Parameter(np.zeros((0,), np.float32), device="cpu1")
    opt = cls([w, e], lr=0.1, weight_decay=0.1)
    w.grad = mge.Tensor([0.5, -0.5], device="cpu1")
    e.grad = mge.Tensor(np.zeros((0,), np.float32), device="cpu1")
    for o in (2.0, math.inf):
        total = optim.clip_grad_norm([w, e], 0.1, ord=o)
        assert total.device == "cpu1"
    opt.step()
    assert w.device == "cpu1" and e.device == "cpu1" and e.shape == (0,)
    assert set(opt.state_dict()["state"]) == (set() if cls is optim.SGD else {0, 1})


@pytest.mark.parametrize(
    "pdtype,gdtype,rtol", [("float16", "float16", 3e-3), ("float32", "int32", 1e-6)]
)
def test_sgd_updates_in_the_parameter_dtype(pdtype, gdtype, rtol):
    # SGD's updates are fused multiply-adds with Python-number factors: a float16 parameter
    # stays float16 and an integer gradient is promoted, as the unfused arithmetic did.
    hyper = {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}
    p0 = np.array([0.5, -1.0, 2.0, 3.0], pdtype)
    w = mge.Parameter(p0, dtype=pdtype)
    opt = optim.SGD([w], **hyper)
    p, st = p0.astype(np.float64), {}
    for t in range(1, 4):
        g = np.array([1, -2, 3, t], gdtype)
        w.grad = mge.Tensor(g, dtype=gdtype)
        opt.step()
        p = np_sgd(p, g.astype(np.float64), st, t, **hyper)
        assert w._dtype_name == pdtype
        np.testing.assert_allclose(w.numpy().astype(np.float64), p, rtol=rtol, atol=rtol)
