"""End to end: a small convolutional network with BatchNorm, built from megengine.module, trained
with GradManager, SGD with momentum and a MultiStepLR schedule on a learnable synthetic problem;
then saved, reloaded into a fresh model, and checked to give identical outputs."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
import megengine.optimizer as optim
from megengine.autodiff import GradManager


def make_data(n, rng):
    """8x8 images: class 0 has a bright 3x2 blob in the left half, class 1 in the right."""
    x = rng.normal(scale=0.5, size=(n, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 2, size=n).astype(np.int32)
    for i in range(n):
        r = rng.integers(0, 6)
        c = rng.integers(0, 2) + (4 if y[i] else 0)
        x[i, 0, r : r + 3, c : c + 2] += 2.0
    return x, y


class SmallCNN(M.Module):
    def __init__(self):
        super().__init__()
        self.features = M.Sequential(
            M.Conv2d(1, 8, 3, padding=1),
            M.BatchNorm2d(8),
            M.ReLU(),
            M.MaxPool2d(2),  # (N, 8, 4, 4)
            M.ConvBnRelu2d(8, 8, 3, padding=1),
            M.AvgPool2d(2),  # (N, 8, 2, 2)
        )
        self.classifier = M.Linear(8 * 2 * 2, 2)

    def forward(self, x):
        h = self.features(x)
        return self.classifier(h.reshape(h.shape[0], -1))


def test_small_cnn_trains_saves_and_reloads(tmp_path):
    rng = np.random.default_rng(0)
    mge.random.seed(0)
    xtr, ytr = make_data(512, rng)
    xte, yte = make_data(256, rng)
    net = SmallCNN()
    gm = GradManager().attach(net.parameters())
    opt = optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    sched = optim.MultiStepLR(opt, milestones=[3, 5], gamma=0.1)
    losses = []
    for _epoch in range(6):
        net.train()
        order = rng.permutation(len(xtr))
        for i in range(0, len(xtr), 32):
            idx = order[i : i + 32]
            with gm:
                loss = F.nn.cross_entropy(net(mge.Tensor(xtr[idx])), mge.Tensor(ytr[idx]))
                gm.backward(loss)
            if not losses:  # every layer learns: conv, BatchNorm and Linear all get gradients
                no_grad = [n for n, p in net.named_parameters() if p.grad is None]
                assert no_grad == [], no_grad
            opt.step().clear_grad()
            losses.append(loss.item())
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.0005)
    assert np.mean(losses[-16:]) < 0.5 * np.mean(losses[:16])
    bn = net.features[1]
    assert float(np.abs(bn.running_mean.numpy()).sum()) > 0  # the running statistics moved

    net.eval()
    out = net(mge.Tensor(xte)).numpy()
    acc = (out.argmax(axis=1) == yte).mean()
    assert acc >= 0.9, acc

    path = tmp_path / "small_cnn.mge"
    mge.save(net.state_dict(), path)
    fresh = SmallCNN()
    assert not np.array_equal(fresh.classifier.weight.numpy(), net.classifier.weight.numpy())
    fresh.load_state_dict(mge.load(path))
    fresh.eval()
    np.testing.assert_array_equal(fresh(mge.Tensor(xte)).numpy(), out)
    # in training mode too (batch statistics), and the running statistics agree afterwards
    net.train()
    fresh.train()
    batch = mge.Tensor(xtr[:32])
    np.testing.assert_array_equal(fresh(batch).numpy(), net(batch).numpy())
    np.testing.assert_array_equal(fresh.features[1].running_var.numpy(), bn.running_var.numpy())
