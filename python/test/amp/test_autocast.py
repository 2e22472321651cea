"""amp.autocast: the dtype every op runs in under MegEngine 1.13's rules (the float16 column was
recorded from MegEngine itself; bfloat16 follows the same rules), the state it sets and
restores, the cast cache, gradients, and jit.trace."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
import megengine.optimizer as optim
from megengine import amp
from megengine.amp import autocast
from megengine.autodiff import GradManager
from megengine.core.tensor import amp as amp_state
from megengine.jit import trace

from .megengine_examples import (
    autocast_context,
    autocast_decorator,
    grad_scaler_backward,
    grad_scaler_split,
)

rng = np.random.default_rng(0)
X = mge.Tensor(rng.standard_normal((2, 3, 8, 8)).astype("float32"))
W = mge.Parameter(rng.standard_normal((4, 3, 3, 3)).astype("float32"))
B = mge.Parameter(np.zeros((1, 4, 1, 1), "float32"))
LW = mge.Parameter(rng.standard_normal((5, 144)).astype("float32"))
LB = mge.Parameter(np.zeros(5, "float32"))
LABEL = mge.Tensor([1, 2], dtype="int32")
ONES4, ZEROS4 = mge.Tensor(np.ones(4, "float32")), mge.Tensor(np.zeros(4, "float32"))


class _Net(M.Module):
    def __init__(self, bn=False):
        super().__init__()
        self.conv = M.Conv2d(3, 4, 3)
        self.bn = M.BatchNorm2d(4) if bn else None
        self.fc = M.Linear(144, 3)

    def forward(self, x):
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        return self.fc(F.flatten(F.relu(x), 1))


def _ops():
    """(name, function of the low dtype's conv output c and linear output lin, dtype class);
    "low" = the autocast dtype, "low-f16" = float16 under float16 and float32 under bfloat16,
    "f32" = float32, as MegEngine 1.13 gives them."""
    stats = lambda: (
        mge.Tensor(np.zeros((1, 4, 1, 1), "float32")),
        mge.Tensor(np.ones((1, 4, 1, 1), "float32")),
    )
    wt = mge.Tensor(rng.standard_normal((3, 2, 3, 3)).astype("float32"))
    return [
        ("conv2d", lambda c, lin: F.conv2d(X, W), "low"),
        ("conv2d+bias", lambda c, lin: F.conv2d(X, W, B), "low"),
        ("conv1d", lambda c, lin: F.conv1d(X[:, :, 0], W[:, :, 0]), "low"),
        (
            "conv3d",
            lambda c, lin: F.conv3d(X.reshape(2, 3, 8, 8, 1), W.reshape(4, 3, 3, 3, 1)),
            "f32",
        ),
        ("conv_transpose2d", lambda c, lin: F.conv_transpose2d(X, wt), "low"),
        ("linear", lambda c, lin: F.linear(F.flatten(c, 1), LW, LB), "low"),
        ("linear no bias", lambda c, lin: F.linear(F.flatten(c, 1), LW), "low"),
        ("matmul f32 f32", lambda c, lin: F.matmul(X.reshape(2, -1), X.reshape(2, -1).T), "low"),
        ("@", lambda c, lin: X.reshape(2, -1) @ X.reshape(2, -1).T, "low"),
        ("batched matmul", lambda c, lin: F.matmul(X, X), "low"),
        ("module Linear", lambda c, lin: M.Linear(144, 3)(F.flatten(c, 1)), "low"),
        ("batch_norm train", lambda c, lin: F.batch_norm(c, *stats(), B, B, training=True), "low"),
        (
            "batch_norm f32 in",
            lambda c, lin: F.batch_norm(c.astype("float32"), *stats(), B, B, training=True),
            "low",
        ),
        ("batch_norm eval", lambda c, lin: F.batch_norm(c, *stats(), B, B, training=False), "low"),
        ("relu", lambda c, lin: F.relu(c), "low"),
        ("sigmoid", lambda c, lin: F.sigmoid(lin), "low"),
        ("tanh", lambda c, lin: F.tanh(lin), "low"),
        ("add low+f32", lambda c, lin: c + B, "f32"),
        # MegEngine 1.13 computes a bfloat16 tensor with a Python scalar in float32
        # (core/tensor/dtype.py); a float16 one stays float16.
        ("mul scalar", lambda c, lin: c * 2, "low-f16"),
        ("max_pool2d", lambda c, lin: F.max_pool2d(c, 2), "low"),
        ("avg_pool2d", lambda c, lin: F.avg_pool2d(c, 2), "low"),
        ("adaptive_avg_pool2d", lambda c, lin: F.adaptive_avg_pool2d(c, (1, 1)), "low"),
        ("softmax", lambda c, lin: F.softmax(lin), "low"),
        ("logsoftmax", lambda c, lin: F.logsoftmax(lin, 1), "f32"),
        ("cross_entropy", lambda c, lin: F.nn.cross_entropy(lin, LABEL), "f32"),
        (
            "square_loss",
            lambda c, lin: F.nn.square_loss(lin, mge.Tensor(np.zeros((2, 5), "float32"))),
            "f32",
        ),
        ("sum", lambda c, lin: lin.sum(), "low"),
        ("max", lambda c, lin: lin.max(), "low"),
        ("mean", lambda c, lin: lin.mean(), "f32"),
        ("F.mean", lambda c, lin: F.mean(lin), "f32"),
        ("var", lambda c, lin: F.var(lin), "f32"),
        ("norm", lambda c, lin: F.norm(lin.flatten()), "f32"),
        ("exp", lambda c, lin: F.exp(lin), "f32"),
        ("log", lambda c, lin: F.log(F.abs(lin) + 1), "f32"),
        ("sqrt", lambda c, lin: F.sqrt(F.abs(lin)), "f32"),
        ("div", lambda c, lin: lin / 3, "f32"),
        ("pow", lambda c, lin: lin**2, "f32"),
        ("softplus", lambda c, lin: F.softplus(lin), "f32"),
        ("logsumexp", lambda c, lin: F.logsumexp(lin, 1), "f32"),
        (
            "layer_norm",
            lambda c, lin: F.nn.layer_norm(
                lin,
                (5,),
                True,
                mge.Tensor(np.ones(5, "float32")),
                mge.Tensor(np.zeros(5, "float32")),
            ),
            "f32",
        ),
        ("group_norm", lambda c, lin: F.nn.group_norm(c, 2, True, ONES4, ZEROS4), "f32"),
        ("instance_norm", lambda c, lin: F.nn.instance_norm(c, True, ONES4, ZEROS4), "low"),
        ("concat", lambda c, lin: F.concat([lin, lin.astype("float32")]), "f32"),
        ("stack", lambda c, lin: F.stack([lin, lin.astype("float32")]), "f32"),
        (
            "where",
            lambda c, lin: F.where(lin > 0, lin, mge.Tensor(np.zeros((2, 5), "float32"))),
            "f32",
        ),
        ("dropout", lambda c, lin: F.dropout(lin, 0.5), "low"),
        ("pad", lambda c, lin: F.nn.pad(c, ((0, 0), (0, 0), (1, 1), (1, 1))), "low"),
        ("embedding", lambda c, lin: F.embedding(LABEL, LW), "f32"),
        ("astype", lambda c, lin: lin.astype("float32"), "f32"),
    ]


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_each_op_runs_in_megengines_dtype(low):
    ran = {}
    with autocast(low_prec_dtype=low):
        c = F.conv2d(X, W)
        lin = F.linear(F.flatten(c, 1), LW, LB)
        for name, fn, _ in _ops():
            ran[name] = fn(c, lin)._dtype_name
    low_kinds = ("low", "low-f16") if low == "float16" else ("low",)
    want = {name: (low if kind in low_kinds else "float32") for name, _, kind in _ops()}
    assert ran == want


def test_outside_autocast_nothing_is_cast():
    h = X.astype("float16")
    assert F.conv2d(X, W)._dtype_name == "float32"
    assert F.exp(h)._dtype_name == "float16" and (h / 2)._dtype_name == "float16"
    with autocast():
        assert F.exp(h)._dtype_name == "float32"
    # the elemwise hook is gone again
    assert F.exp(h)._dtype_name == "float16" and (h**2)._dtype_name == "float16"
    # MegEngine computes a mean of 16-bit floats in float32 with or without autocast
    assert h.mean()._dtype_name == "float32"


def test_state_properties_and_restoring():
    assert (amp.enabled, amp.low_prec_dtype, amp.high_prec_dtype) == (False, "float16", "float32")
    with autocast(low_prec_dtype="bfloat16"):
        assert (amp.enabled, amp.low_prec_dtype, mge.amp.enabled) == (True, "bfloat16", True)
        assert mge.config._compute_mode == "float32"
        with autocast(enabled=False):  # a disabled autocast changes nothing
            assert amp.enabled and amp.low_prec_dtype == "bfloat16"
        with autocast(low_prec_dtype="float16"):
            assert amp.low_prec_dtype == "float16"
        assert amp.low_prec_dtype == "bfloat16"
    assert (amp.enabled, amp.low_prec_dtype, mge.config._compute_mode) == (
        False,
        "float16",
        "default",
    )
    with pytest.raises(RuntimeError), autocast():
        raise RuntimeError("inside")
    assert not amp.enabled and not amp_state._get_amp_dtype_autocast()


def test_module_attributes_switch_autocast():
    amp.enabled = True
    try:
        amp.low_prec_dtype = "bfloat16"
        assert F.matmul(X[0, 0], X[0, 0])._dtype_name == "bfloat16"
    finally:
        amp.enabled = False
        amp.low_prec_dtype = "float16"
    assert F.matmul(X[0, 0], X[0, 0])._dtype_name == "float32"


def test_bad_dtypes_are_rejected():
    with pytest.raises(ValueError, match="low_prec_dtype"):
        autocast(low_prec_dtype="int8")
    with pytest.raises(ValueError, match="high_prec_dtype"):
        amp.high_prec_dtype = "float64"
    with pytest.raises(TypeError, match="low_prec_dtype"):
        amp.low_prec_dtype = 3.5
    assert amp.high_prec_dtype == "float32" and amp.low_prec_dtype == "float16"


def test_decorator_keeps_the_function():
    @autocast(low_prec_dtype="bfloat16")
    def f(x):
        """doc"""
        return F.linear(x, LW), amp.enabled

    out, on = f(F.flatten(X, 1)[:, :144])
    assert out._dtype_name == "bfloat16" and on and f.__doc__ == "doc" and not amp.enabled


def test_a_tensor_is_cast_once_per_value():
    w = mge.Parameter(np.ones((3, 3), "float32"))
    with autocast():
        (a,) = amp_state.cast_tensors(w)
        (b,) = amp_state.cast_tensors(w)
        assert a is b  # the second use reuses the first cast
        w._reset(mge.Tensor(np.full((3, 3), 2.0, "float32")))  # an optimizer step
        (c,) = amp_state.cast_tensors(w)
        assert c is not a and c.numpy().tolist() == [[2.0] * 3] * 3
        w[...] = mge.Tensor(np.full((3, 3), 5.0, "float32"))
        assert amp_state.cast_tensors(w)[0].numpy()[0, 0] == 5.0
    with autocast():
        assert amp_state.cast_tensors(w)[0] is not c  # a new region starts empty


def test_shared_weight_cast_once_gets_both_gradients_in_float32():
    w = mge.Parameter(np.full((2, 2), 0.5, "float32"))
    x = mge.Tensor(np.ones((1, 2), "float32"))
    gm = GradManager().attach([w])
    with autocast():
        F.linear(x, w)  # cached before the recording started: must not be reused inside it
        with gm:
            y = F.linear(F.linear(x, w), w)  # w used twice
            gm.backward(y.sum().astype("float32"))
    assert w.grad._dtype_name == "float32"
    # d/dw of sum((x w^T) w^T) = 1^T (x w^T) + (1^T w) x... computed in float32 by numpy-free algebra
    ref = mge.Parameter(np.full((2, 2), 0.5, "float32"))
    gm2 = GradManager().attach([ref])
    with gm2:
        gm2.backward(F.linear(F.linear(x, ref), ref).sum())
    np.testing.assert_allclose(w.grad.numpy(), ref.grad.numpy(), rtol=1e-3)


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_training_step_gradients_reach_float32_parameters(low):
    # The initialisation is fixed so the result does not depend on which tests ran before: the
    # convolution's filter gradient behind BatchNorm is a sum with heavy cancellation, and for about
    # one initialisation in twenty bfloat16's rounding of its input gradient moves it by 5-11% of
    # the largest gradient (0.5-0.9% for the others, float16 0.1% for all).
    mge.random.seed(1)
    model = M.Sequential(M.Conv2d(3, 4, 3), M.BatchNorm2d(4), M.ReLU())
    head = M.Linear(4 * 6 * 6, 3)
    params = list(model.parameters()) + list(head.parameters())
    gm = GradManager().attach(params)

    def loss_of():
        return F.nn.cross_entropy(head(F.flatten(model(X), 1)), mge.Tensor([0, 2], dtype="int32"))

    with gm:
        gm.backward(loss_of())
    want = [p.grad.numpy() for p in params]
    for p in params:
        p.grad = None
    with autocast(low_prec_dtype=low), gm:
        loss = loss_of()
        assert loss._dtype_name == "float32"
        gm.backward(loss)
    # relative to the largest gradient: the conv bias's is zero (BatchNorm removes it) up to
    # rounding noise
    tol = (0.05 if low == "bfloat16" else 0.01) * max(np.abs(g).max() for g in want)
    for p, g in zip(params, want):
        assert p._dtype_name == "float32" and p.grad._dtype_name == "float32"
        np.testing.assert_allclose(p.grad.numpy(), g, atol=tol)


def test_megengines_docstring_examples_run_unchanged():
    model = _Net()
    gm = GradManager().attach(model.parameters())
    opt = optim.SGD(model.parameters(), lr=0.01)
    image, label = X, mge.Tensor([0, 1], dtype="int32")

    # megengine/amp/autocast.py and megengine/amp/grad_scaler.py (its full-width comma in
    # `gm.backward(loss， ...)` made ASCII), verbatim
    scaler = amp.GradScaler()
    for make_step in (
        autocast_decorator,
        autocast_context,
        grad_scaler_backward,
        grad_scaler_split,
    ):
        train_step = make_step(model, gm, opt, scaler)
        assert np.isfinite(train_step(image, label).item())

    # megengine/core/tensor/amp.py
    mge.amp.enabled = True
    mge.amp.high_prec_dtype = "float32"
    mge.amp.low_prec_dtype = "float16"
    assert mge.amp.enabled
    mge.amp.enabled = False


# Every opt_level replays eager's rounding: the graph fuses no low-precision convolution with its
# bias (the ConvBias pass is float32 only), and elementwise fusion is bit-exact.
@pytest.mark.parametrize("opt_level", [1, 2])
@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_traced_step_matches_eager(low, opt_level):
    def make():
        model = _Net(bn=True)
        params = list(model.parameters())
        for p, v in zip(params, init):
            p._reset(mge.Tensor(v))
        gm = GradManager().attach(params)
        opt = optim.SGD(params, lr=0.05, momentum=0.9)

        @autocast(low_prec_dtype=low)
        def step(x, y):
            with gm:
                loss = F.nn.cross_entropy(model(x), y)
                gm.backward(loss)
            opt.step().clear_grad()
            return loss

        return step, params

    init = [p.numpy() for p in _Net(bn=True).parameters()]
    eager_step, eager_params = make()
    traced_step, traced_params = make()
    traced_step = trace(traced_step, opt_level=opt_level)
    y = mge.Tensor([0, 2], dtype="int32")
    for i in range(4):
        x = mge.Tensor(rng.standard_normal((2, 3, 8, 8)).astype("float32"))
        a, b = eager_step(x, y), traced_step(x, y)
        assert a._dtype_name == b._dtype_name == "float32"
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, err_msg=str(i))
    for p, q in zip(eager_params, traced_params):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-4, atol=1e-6)
    # the replays ran the compiled graph, which keeps autocast's casts
    assert "TypeCvt" in traced_step._graph_text()


def test_trace_inside_an_autocast_region_reads_parameters_not_cached_casts():
    w = mge.Parameter(np.ones((2, 2), "float32"))
    x = mge.Tensor(np.ones((1, 2), "float32"))
    f = trace(lambda x: F.linear(x, w))
    with autocast(low_prec_dtype="bfloat16"):
        F.linear(x, w)  # an eager cast of w, cached before the recording
        for v in (1.0, 2.0, 3.0):
            out = f(x)  # records (the graph must cast w itself), then replays
            assert out._dtype_name == "bfloat16"
            assert out.numpy().tolist() == [[2 * v, 2 * v]]
            w._reset(mge.Tensor(np.full((2, 2), v + 1, "float32")))


def test_a_cast_cached_in_one_recording_is_not_reused_by_the_next():
    w = mge.Parameter(np.full((2, 2), 0.5, "float32"))
    x = mge.Tensor(np.ones((3, 2), "float32"))
    gm = GradManager().attach([w])
    grads = []
    with autocast():
        for _ in range(2):  # two steps in one region, w unchanged between them
            with gm:
                gm.backward(F.linear(x, w).astype("float32").sum())
            grads.append(w.grad.numpy())
            w.grad = None
    np.testing.assert_array_equal(grads[0], np.full((2, 2), 3.0, "float32"))
    np.testing.assert_array_equal(grads[1], grads[0])
