"""Every layer's gradients (parameters and input) through GradManager against central finite
differences of its forward."""

import numpy as np
import pytest

import megengine as mge
import megengine.module as M
from megengine.autodiff import GradManager


def _layers():
    """(id, module factory, input shape or a list of shapes, call)."""
    x4 = (2, 2, 5, 5)
    return [
        ("Linear", lambda: M.Linear(3, 2), (4, 3), None),
        ("Conv1d", lambda: M.Conv1d(2, 3, 3, padding=1, stride=2), (2, 2, 7), None),
        ("Conv2d", lambda: M.Conv2d(2, 3, 3, padding=1), x4, None),
        ("Conv2d-grouped", lambda: M.Conv2d(2, 4, 3, groups=2), x4, None),
        ("Conv2d-reflect", lambda: M.Conv2d(2, 2, 3, padding=1, padding_mode="reflect"), x4, None),
        ("Conv3d", lambda: M.Conv3d(1, 2, 2), (1, 1, 3, 3, 3), None),
        ("ConvTranspose2d", lambda: M.ConvTranspose2d(2, 2, 3, stride=2), (1, 2, 3, 3), None),
        ("ConvBnRelu2d", lambda: M.ConvBnRelu2d(2, 2, 3), x4, None),
        ("BatchNorm2d", lambda: M.BatchNorm2d(2), x4, None),
        ("BatchNorm1d", lambda: M.BatchNorm1d(3), (6, 3), None),
        ("LayerNorm", lambda: M.LayerNorm((5, 5)), x4, None),
        ("GroupNorm", lambda: M.GroupNorm(2, 4), (2, 4, 3, 3), None),
        ("InstanceNorm", lambda: M.InstanceNorm(2), x4, None),
        ("MaxPool2d", lambda: M.MaxPool2d(2), (1, 2, 4, 4), None),
        ("AvgPool2d", lambda: M.AvgPool2d(3, 2, 1), x4, None),
        ("AdaptiveAvgPool2d", lambda: M.AdaptiveAvgPool2d((2, 3)), x4, None),
        ("PReLU", lambda: M.PReLU(2), x4, None),
        ("Pad", lambda: M.Pad(((0, 0), (0, 0), (1, 2), (2, 1)), mode="reflect"), x4, None),
        ("PixelShuffle", lambda: M.PixelShuffle(2), (1, 8, 2, 3), None),
        ("RNNCell", lambda: M.RNNCell(3, 2), (4, 3), None),
        ("LSTMCell", lambda: M.LSTMCell(3, 2), (4, 3), lambda m, x: m(x)[1]),
        ("RNN", lambda: M.RNN(2, 2, bidirectional=True), (3, 2, 2), lambda m, x: m(x)[0]),
        ("LSTM", lambda: M.LSTM(2, 2, num_layers=2), (3, 2, 2), lambda m, x: m(x)[0]),
        (
            "MultiHeadAttention",
            lambda: M.MultiHeadAttention(4, 2, kdim=3),
            [(2, 3, 4), (2, 2, 3), (2, 2, 4)],
            lambda m, q, k, v: m(q, k, v)[0],
        ),
    ]


def _loss(m, call, inputs, weights):
    out = call(m, *inputs) if call else m(*inputs)
    return (out * weights).sum()


@pytest.mark.parametrize("name,factory,shapes,call", _layers(), ids=[c[0] for c in _layers()])
def test_layer_gradients_match_finite_differences(name, factory, shapes, call):
    rng = np.random.default_rng(sum(map(ord, name)))
    mge.random.seed(1)
    m = factory()
    for p in m.parameters():  # non-trivial values everywhere (biases start at zero)
        p._reset(mge.Tensor(p.numpy() + rng.normal(scale=0.3, size=p.shape).astype(np.float32)))
    shapes = shapes if isinstance(shapes, list) else [shapes]
    # inputs kept 0.1 away from 0, where ReLU and PReLU have their kink
    xs = [rng.normal(size=s).astype(np.float32) for s in shapes]
    xs = [x + np.float32(0.1) * np.sign(x) for x in xs]
    out = call(m, *map(mge.Tensor, xs)) if call else m(*map(mge.Tensor, xs))
    weights = mge.Tensor(rng.normal(size=out.shape).astype(np.float32))

    params = list(m.parameters())
    inputs = [mge.Parameter(x) for x in xs]
    gm = GradManager().attach(params + inputs)
    with gm:
        gm.backward(_loss(m, call, inputs, weights))

    def value():
        return float(_loss(m, call, [mge.Tensor(x) for x in xs], weights).item())

    eps = 1e-2
    targets = [(p, p.numpy().copy(), None) for p in params] + [
        (t, x, k) for k, (t, x) in enumerate(zip(inputs, xs))
    ]
    for tensor, base, input_index in targets:
        is_input = input_index is not None
        assert tensor.grad is not None, f"{name}: no gradient for a {tensor.shape} tensor"
        num = np.zeros(base.shape, np.float64)
        for i in np.ndindex(base.shape):
            for sign in (1, -1):
                v = base.copy()
                v[i] += sign * eps
                if is_input:
                    xs[input_index] = v
                else:
                    tensor._reset(mge.Tensor(v))
                num[i] += sign * value() / (2 * eps)
            if is_input:
                xs[input_index] = base
            else:
                tensor._reset(mge.Tensor(base))
        np.testing.assert_allclose(tensor.grad.numpy(), num, rtol=3e-2, atol=3e-3, err_msg=name)
