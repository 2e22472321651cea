"""RNN and LSTM over a sequence (``_RNNBase._run``: an LSTM layer as one LSTMForward op per
direction, an RNN's one input projection per layer and direction and a few ops a step) against
the cells run step by step, against the per-step sequence path and against NumPy: outputs, final
states and every parameter's gradient, in every configuration; dropout, amp, traces, a dumped
model."""

import io

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager
from megengine.jit import trace
from megengine.optimizer import SGD
from megengine.utils.comp_graph_tools import GraphInference

_rng = np.random.default_rng(12)


def _rand(*shape):
    return _rng.normal(size=shape).astype(np.float32)


def _make(kind, layers, bidirectional, batch_first, bias, dropout=0.0):
    if kind == "lstm":
        return M.LSTM(3, 4, layers, bias, batch_first, dropout, bidirectional)
    return M.RNN(3, 4, layers, bias, batch_first, dropout, bidirectional, nonlinearity=kind)


def _cells_forward(m, x, hx):
    """The reference: every cell called once a step, layer by layer, as a user would."""
    if m.batch_first:
        x = x.transpose((1, 0, 2))
    seq_len = x.shape[0]
    n, lstm = m.num_layers * m.num_directions, isinstance(m, M.LSTM)
    if hx is None:
        states = [None] * n
    else:
        states = [(hx[0][k], hx[1][k]) if lstm else hx[k] for k in range(n)]
    layer_in = [x[t] for t in range(seq_len)]
    finals = []
    for layer in range(m.num_layers):
        outs = []
        for d in range(m.num_directions):
            cell, state = m.cells[layer][d], states[layer * m.num_directions + d]
            seq = [None] * seq_len
            for t in range(seq_len) if d == 0 else range(seq_len - 1, -1, -1):
                state = cell(layer_in[t], state)
                seq[t] = state[0] if lstm else state
            outs.append(seq)
            finals.append(state)
        layer_in = [F.concat([o[t] for o in outs], axis=1) for t in range(seq_len)]
    out = F.stack(layer_in, axis=0)
    if m.batch_first:
        out = out.transpose((1, 0, 2))
    if lstm:
        return out, (F.stack([s[0] for s in finals]), F.stack([s[1] for s in finals]))
    return out, F.stack(finals)


def _values_and_grads(m, fn, x, hx):
    """Outputs, final states and the gradients of a loss that reads all of them."""
    gm = GradManager().attach(m.parameters())
    with gm:
        out, h = fn(m, x, hx)
        finals = h if isinstance(h, tuple) else (h,)
        loss = (out * out).sum() + sum((s * (k + 2)).sum() for k, s in enumerate(finals))
        gm.backward(loss)
    grads = {n: p.grad.numpy() for n, p in m.named_parameters()}
    for p in m.parameters():
        p.grad = None
    return [out.numpy()] + [s.numpy() for s in finals], grads


def _initial(m, batch, given):
    if not given:
        return None
    shape = (m.num_layers * m.num_directions, batch, m.hidden_size)
    if isinstance(m, M.LSTM):
        return mge.tensor(_rand(*shape)), mge.tensor(_rand(*shape))
    return mge.tensor(_rand(*shape))


@pytest.mark.parametrize("kind", ["lstm", "tanh", "relu"])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, False), (1, True), (2, True)])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("seq_len,batch", [(5, 3), (1, 2), (4, 1)])
@pytest.mark.parametrize("given_state", [False, True])
def test_sequence_matches_cells_step_by_step(
    kind, layers, bidirectional, batch_first, bias, seq_len, batch, given_state
):
    m = _make(kind, layers, bidirectional, batch_first, bias)
    x = mge.tensor(_rand(*((batch, seq_len, 3) if batch_first else (seq_len, batch, 3))))
    hx = _initial(m, batch, given_state)
    got, got_grads = _values_and_grads(m, lambda m, x, hx: m(x, hx), x, hx)
    want, want_grads = _values_and_grads(m, _cells_forward, x, hx)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert got_grads.keys() == want_grads.keys()
    for name, g in got_grads.items():
        np.testing.assert_allclose(g, want_grads[name], rtol=1e-4, atol=1e-5, err_msg=name)


def _np_sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _np_lstm(x, h, c, w_ih, w_hh, b):
    outs = []
    for xt in x:
        i, f, g, o = np.split(xt @ w_ih.T + h @ w_hh.T + b, 4, axis=1)  # MegEngine's i, f, g, o
        c = _np_sigmoid(f) * c + _np_sigmoid(i) * np.tanh(g)
        h = _np_sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs), h, c


def test_lstm_against_numpy_with_gradients():
    # every gate block of its own size, so that a swap of any two blocks changes the result
    m = M.LSTM(3, 2)
    cell = m.cells[0][0]
    w_ih, w_hh = _rand(8, 3), _rand(8, 2)
    b_ih, b_hh = _rand(8), _rand(8)
    for p, v in ((cell.weight_ih, w_ih), (cell.weight_hh, w_hh)):
        p[...] = v
    cell.bias_ih[...] = b_ih
    cell.bias_hh[...] = b_hh
    x, h0, c0 = _rand(4, 2, 3), _rand(1, 2, 2), _rand(1, 2, 2)
    gm = GradManager().attach(m.parameters())
    with gm:
        out, (hn, cn) = m(mge.tensor(x), (mge.tensor(h0), mge.tensor(c0)))
        gm.backward(out.sum() + 2 * cn.sum())
    want, want_h, want_c = _np_lstm(x, h0[0], c0[0], w_ih, w_hh, b_ih + b_hh)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hn.numpy()[0], want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cn.numpy()[0], want_c, rtol=1e-5, atol=1e-6)

    # central differences of the same loss in float64 for W_hh
    def loss(w):
        o, _, c = _np_lstm(x.astype(np.float64), h0[0], c0[0], w_ih, w, b_ih + b_hh)
        return o.sum() + 2 * c.sum()

    num = np.zeros_like(w_hh, dtype=np.float64)
    for k in np.ndindex(w_hh.shape):
        d = np.zeros_like(w_hh, dtype=np.float64)
        d[k] = 1e-4
        num[k] = (loss(w_hh + d) - loss(w_hh - d)) / 2e-4
    np.testing.assert_allclose(cell.weight_hh.grad.numpy(), num, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_against_numpy(nonlinearity):
    m = M.RNN(3, 4, nonlinearity=nonlinearity)
    cell = m.cells[0][0]
    x, h = _rand(5, 2, 3), np.zeros((2, 4), np.float32)
    act = np.tanh if nonlinearity == "tanh" else (lambda v: np.maximum(v, 0))
    outs = []
    for xt in x:
        h = act(
            xt @ cell.weight_ih.numpy().T
            + h @ cell.weight_hh.numpy().T
            + cell.bias_ih.numpy()
            + cell.bias_hh.numpy()
        )
        outs.append(h)
    out, hn = m(mge.tensor(x))
    np.testing.assert_allclose(out.numpy(), np.stack(outs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hn.numpy()[0], h, rtol=1e-5, atol=1e-6)


def test_single_step_without_state_still_gives_w_hh_a_gradient():
    # the product with the zero h is skipped only where later steps give W_hh its gradient;
    # a None gradient would make the optimizer skip the parameter (momentum, weight decay)
    for m in (M.LSTM(3, 4), M.RNN(3, 4)):
        gm = GradManager().attach(m.parameters())
        with gm:
            gm.backward(m(mge.tensor(_rand(1, 2, 3)))[0].sum())
        g = m.cells[0][0].weight_hh.grad
        assert g is not None and not g.numpy().any()


def test_dropout_only_between_layers_and_only_in_training():
    x = mge.tensor(_rand(6, 3, 3))
    one = M.LSTM(3, 4, 1, dropout=0.5)  # one layer: nothing between layers
    train_out = one(x)[0].numpy()
    one.eval()
    np.testing.assert_array_equal(train_out, one(x)[0].numpy())
    two = M.LSTM(3, 4, 2, dropout=0.5)
    two.eval()
    eval_out = two(x)[0].numpy()
    np.testing.assert_array_equal(eval_out, two(x)[0].numpy())
    two.train()
    train_out = two(x)[0].numpy()
    assert not np.allclose(train_out, eval_out)


def test_autocast_keeps_the_cells_rule():
    m = M.LSTM(3, 4)
    x = mge.tensor(_rand(5, 2, 3))
    with mge.amp.autocast():
        out, (_, cn) = m(x)
        want, (_, want_c) = _cells_forward(m, x, None)
    assert out.dtype == want.dtype
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(cn.numpy(), want_c.numpy(), rtol=1e-3, atol=1e-3)


def test_empty_sequence_keeps_the_initial_state():
    m = M.LSTM(3, 4, bidirectional=True)
    h0, c0 = _rand(2, 2, 4), _rand(2, 2, 4)
    out, (hn, cn) = m(mge.tensor(np.zeros((0, 2, 3), np.float32)), (mge.tensor(h0), mge.tensor(c0)))
    assert out.shape == (0, 2, 8)
    np.testing.assert_array_equal(hn.numpy(), h0)
    np.testing.assert_array_equal(cn.numpy(), c0)


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("kind", ["lstm", "tanh"])
def test_training_under_trace_matches_eager(symbolic, kind):
    def train(traced):
        np.random.seed(0)
        m = _make(kind, 2, True, True, True)
        for p in m.parameters():
            p[...] = np.random.uniform(-0.5, 0.5, p.shape).astype(np.float32)
        gm = GradManager().attach(m.parameters())
        opt = SGD(m.parameters(), lr=0.1, momentum=0.9)

        def step(x):
            with gm:
                out, _ = m(x)
                loss = (out * out).mean()
                gm.backward(loss)
            opt.step().clear_grad()
            return loss

        fn = trace(step, symbolic=symbolic) if traced else step
        xs = [_rand(3, 4, 3) for _ in range(3)]
        losses = [float(fn(mge.tensor(x)).numpy()) for x in xs]
        return losses, [p.numpy() for p in m.parameters()]

    state = _rng.bit_generator.state
    eager = train(False)
    _rng.bit_generator.state = state
    traced = train(True)
    np.testing.assert_allclose(traced[0], eager[0], rtol=1e-5)
    for a, b in zip(traced[1], eager[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, False), (1, True), (2, True)])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("seq_len,batch", [(6, 3), (1, 1)])
@pytest.mark.parametrize("given_state", [False, True])
def test_fused_lstm_matches_the_per_step_sequence_path(
    monkeypatch, layers, bidirectional, batch_first, bias, seq_len, batch, given_state
):
    m = _make("lstm", layers, bidirectional, batch_first, bias)
    x = mge.tensor(_rand(*((batch, seq_len, 3) if batch_first else (seq_len, batch, 3))))
    hx = _initial(m, batch, given_state)
    states = m._initial_states(hx, batch, x)
    assert m._fuses(x, states)  # float32: the LSTMForward op runs
    got, got_grads = _values_and_grads(m, lambda m, x, hx: m(x, hx), x, hx)
    monkeypatch.setattr(M.LSTM, "_fuses", lambda self, input, states: False)
    want, want_grads = _values_and_grads(m, lambda m, x, hx: m(x, hx), x, hx)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert got_grads.keys() == want_grads.keys()
    for name, g in got_grads.items():
        np.testing.assert_allclose(g, want_grads[name], rtol=1e-4, atol=1e-5, err_msg=name)


def _final_state_grads(m, fn, x, final):
    gm = GradManager().attach(m.parameters())
    with gm:
        _, h = fn(m, x, None)
        gm.backward((h[final] * h[final]).sum())
    grads = {n: p.grad.numpy() for n, p in m.named_parameters()}
    for p in m.parameters():
        p.grad = None
    return grads


@pytest.mark.parametrize("final", [0, 1])
def test_fused_lstm_gradients_of_the_final_state_alone(final):
    # only hn (or only cn) reaches the loss: the op's rule gets no gradient for y and the other
    m = M.LSTM(3, 5, bidirectional=True)
    x = mge.tensor(_rand(4, 2, 3))
    got = _final_state_grads(m, lambda m, x, hx: m(x, hx), x, final)
    want = _final_state_grads(m, _cells_forward, x, final)
    for name, g in got.items():
        np.testing.assert_allclose(g, want[name], rtol=1e-4, atol=1e-5, err_msg=name)


def test_float16_input_keeps_the_per_step_path():
    m = M.LSTM(3, 4)
    x = mge.tensor(_rand(3, 2, 3))
    states = m._initial_states(None, 2, x.astype("float16"))
    assert not m._fuses(x.astype("float16"), states)


def test_traced_lstm_dumps_and_loads():
    m = M.LSTM(3, 4, 2, bidirectional=True)
    m.eval()
    x = _rand(5, 2, 3)
    want = m(mge.tensor(x))[0].numpy()
    f = trace(lambda t: m(t)[0], capture_as_const=True)
    np.testing.assert_allclose(f(mge.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    buf = io.BytesIO()
    f.dump(buf, arg_names=["x"], output_names="y")
    g = GraphInference(buf.getvalue())
    np.testing.assert_allclose(g.run(x)["y"], want, rtol=1e-5, atol=1e-6)
    x2 = _rand(5, 2, 3)
    np.testing.assert_allclose(
        g.run(inp_dict={"x": x2})["y"], m(mge.tensor(x2))[0].numpy(), rtol=1e-5, atol=1e-6
    )


def _gradient_of_gradient(m, x):
    gm_outer, gm_inner = GradManager().attach([x]), GradManager().attach([x])
    with gm_outer:
        with gm_inner:
            out, _ = m(x)
            gm_inner.backward((out * out).sum())
        g = x.grad
        x.grad = None
        gm_outer.backward((g * g).sum())
    second = x.grad.numpy()
    x.grad = None
    return g.numpy(), second


def test_gradient_of_an_lstm_gradient_matches_the_cells(monkeypatch):
    # LSTMBackward has no rule: under two recording managers the module runs the per-step ops
    m = M.LSTM(3, 5, 2, bidirectional=True)
    x = mge.tensor(_rand(4, 2, 3))
    states = m._initial_states(None, 2, x)
    with GradManager().attach([x]), GradManager().attach([x]):
        assert not m._fuses(x, states)
    with GradManager().attach([x]):
        assert m._fuses(x, states)
    got_first, got_second = _gradient_of_gradient(m, x)
    monkeypatch.setattr(M.LSTM, "_fuses", lambda self, input, states: False)
    want_first, want_second = _gradient_of_gradient(m, x)
    np.testing.assert_allclose(got_first, want_first, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_second, want_second, rtol=1e-5, atol=1e-6)
    assert np.abs(got_second).max() > 0
