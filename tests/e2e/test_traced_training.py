"""End to end: a whole training step traced with megengine.jit.trace (GradManager recording,
backward, the optimizer's update and clear_grad inside the traced function) trains a small CNN
with BatchNorm in train mode exactly as the same step run eagerly: same losses, parameters,
BatchNorm statistics and optimizer state after N steps, all visible to eager code between
steps."""

import numpy as np
import pytest
from test_train_small_cnn import SmallCNN, make_data

import megengine as mge
import megengine.functional as F
import megengine.optimizer as optim
from megengine.autodiff import GradManager
from megengine.jit import trace

STEPS = 8
BATCH = 32


def train(traced, make_opt, steps=STEPS, seed=0, zero_at=None, update_outside=False, lr_at=None):
    rng = np.random.default_rng(seed)
    mge.random.seed(seed)
    x, y = make_data(BATCH * steps, rng)
    net = SmallCNN()
    net.train()
    gm = GradManager().attach(net.parameters())
    opt = make_opt(net.parameters())
    calls = []

    def step(data, label):
        calls.append(1)
        with gm:
            loss = F.nn.cross_entropy(net(data), label)
            gm.backward(loss)
        if not update_outside:
            opt.step().clear_grad()
        return loss

    if traced:
        step = trace(step)
    losses, seen_weights = [], []
    for i in range(steps):
        if i == lr_at:  # a schedule's change: a Python number the graph held
            opt.param_groups[0]["lr"] *= 0.1
        if i == zero_at:  # an eager change between steps, which the next step must see
            w = net.classifier.weight
            w._reset(mge.Tensor(np.zeros(w.shape, np.float32)))
        batch = slice(i * BATCH, (i + 1) * BATCH)
        loss = step(mge.Tensor(x[batch]), mge.Tensor(y[batch]))
        if update_outside:  # eager code reads the .grad each replay assigned
            assert all(p.grad is not None for p in net.parameters())
            opt.step().clear_grad()
        losses.append(loss.item())
        # eager code between steps sees the current parameters
        seen_weights.append(net.classifier.weight.numpy().copy())
    return net, opt, losses, seen_weights, len(calls)


def state_arrays(net, opt):
    out = {k: np.asarray(v) for k, v in net.state_dict().items()}
    for i, p in enumerate(net.parameters()):
        for name, t in opt._state.get(p, {}).items():
            out[f"opt{i}.{name}"] = np.asarray(t.numpy() if isinstance(t, mge.Tensor) else t)
    return out


# SmallCNN's BatchNorm running means and the convolution bias each follows.
BIAS_BEFORE_BATCH_NORM = {
    "features.1.running_mean": "features.0.bias",
    "features.4.bn.running_mean": "features.4.conv.bias",
}


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-4),
        lambda ps: optim.Adam(ps, lr=0.01),
    ],
    ids=["sgd_momentum", "adam"],
)
def test_traced_training_matches_eager(make_opt):
    net_e, opt_e, losses_e, seen_e, calls_e = train(False, make_opt)
    net_t, opt_t, losses_t, seen_t, calls_t = train(True, make_opt)
    assert calls_e == STEPS and calls_t == 1  # every traced step after the first replayed
    np.testing.assert_allclose(losses_t, losses_e, rtol=1e-5, atol=1e-6)
    assert losses_t[-1] < losses_t[0]
    for a, b in zip(seen_t, seen_e):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    want, got = state_arrays(net_e, opt_e), state_arrays(net_t, opt_t)
    assert set(got) == set(want)
    assert any("running_mean" in k for k in got) and any(k.startswith("opt") for k in got)
    # A convolution's bias that a train-mode BatchNorm follows has a zero gradient in exact
    # arithmetic: what backward computes is rounding noise, whose value depends on the order of
    # the sums (the traced graph's blocked BatchNorm sums in another order than eager). Adam
    # normalises that noise into steps of about lr, so those parameters are compared by what the
    # arithmetic fixes: a gradient at rounding level in both runs, and a parameter within Adam's
    # bounded steps of the other run's.
    noise = set()
    for i, (name, _) in enumerate(net_e.named_parameters()):
        avg = want.get(f"opt{i}.exp_avg")
        if avg is not None and np.abs(avg).max() < 1e-7:
            noise |= {name, f"opt{i}.exp_avg", f"opt{i}.exp_avg_sq"}
            assert np.abs(got[f"opt{i}.exp_avg"]).max() < 1e-7, name
    # The running mean of the BatchNorm after such a bias carries the bias (a shift of the batch
    # mean; the variance does not see it), so it differs by an average of the bias's differences.
    for mean, bias in BIAS_BEFORE_BATCH_NORM.items():
        if bias in noise:
            noise.add(mean)
    lr = opt_e.param_groups[0]["lr"]
    for k in want:
        if k in noise and not k.startswith("opt"):
            assert np.abs(got[k] - want[k]).max() <= 2 * STEPS * lr * 1.01, k
        elif k not in noise:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)
    # BatchNorm ran in train mode: its running statistics moved
    assert np.abs(net_t.features[1].running_mean.numpy()).sum() > 0


def test_eager_update_between_traced_steps_is_seen():
    def sgd(ps):
        return optim.SGD(ps, lr=0.05, momentum=0.9)

    net_e, _, losses_e, _, _ = train(False, sgd, steps=5, zero_at=3)
    net_t, _, losses_t, _, _ = train(True, sgd, steps=5, zero_at=3)
    np.testing.assert_allclose(losses_t, losses_e, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        net_t.classifier.weight.numpy(), net_e.classifier.weight.numpy(), rtol=1e-5, atol=1e-6
    )


def test_traced_backward_with_the_update_outside_the_trace():
    """A common MegEngine pattern: the trace covers forward and backward, the optimizer runs
    eagerly on the .grad tensors each replay assigns."""

    def sgd(ps):
        return optim.SGD(ps, lr=0.05, momentum=0.9)

    net_e, _, losses_e, _, _ = train(False, sgd, update_outside=True)
    net_t, _, losses_t, _, calls = train(True, sgd, update_outside=True)
    assert calls == 1
    np.testing.assert_allclose(losses_t, losses_e, rtol=1e-5, atol=1e-6)
    for (name, a), b in zip(net_t.state_dict().items(), net_e.state_dict().values()):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6, err_msg=name)


def test_learning_rate_change_records_again():
    def sgd(ps):
        return optim.SGD(ps, lr=0.05, momentum=0.9)

    net_e, _, losses_e, _, _ = train(False, sgd, lr_at=4)
    net_t, _, losses_t, _, calls = train(True, sgd, lr_at=4)
    assert calls == 2  # recorded at step 0 and again at the new lr, replayed otherwise
    np.testing.assert_allclose(losses_t, losses_e, rtol=1e-5, atol=1e-6)
    for (name, a), b in zip(net_t.state_dict().items(), net_e.state_dict().values()):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6, err_msg=name)
