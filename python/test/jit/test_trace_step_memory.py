"""A traced training step holds no more memory than the eager step: the blocks the recording
call left in the caching allocator are given back before the compiled graph's arena (one block,
which cannot reuse them) is allocated, and a broadcast that constant folding would make a large
constant of (an embedding gradient's zeros) stays a step."""

import numpy as np

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager
from megengine.jit import trace
from megengine.optimizer import SGD

DEVICE = "cpu13"  # a node of its own: its statistics are this test's alone
VOCAB, HIDDEN, HEADS, FFN, BATCH, SEQ = 8192, 64, 4, 256, 8, 64


class EncoderBlock(M.Module):
    """An embedding, one post-LayerNorm encoder layer and a classifier on the first token."""

    def __init__(self):
        super().__init__()
        self.emb = M.Embedding(VOCAB, HIDDEN)
        self.q, self.k, self.v, self.o = (M.Linear(HIDDEN, HIDDEN) for _ in range(4))
        self.ln1, self.ln2 = M.LayerNorm(HIDDEN), M.LayerNorm(HIDDEN)
        self.fc1, self.fc2 = M.Linear(HIDDEN, FFN), M.Linear(FFN, HIDDEN)
        self.head = M.Linear(HIDDEN, 2)

    def forward(self, ids):
        x = self.emb(ids)
        b, s, h = x.shape
        d = h // HEADS

        def split(t):
            return t.reshape(b, s, HEADS, d).transpose(0, 2, 1, 3)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        probs = F.softmax(F.matmul(q, k, transpose_b=True) * (1.0 / d**0.5), axis=-1)
        ctx = F.matmul(probs, v).transpose(0, 2, 1, 3).reshape(b, s, h)
        x = self.ln1(x + self.o(ctx))
        x = self.ln2(x + self.fc2(F.nn.gelu(self.fc1(x))))
        return self.head(x[:, 0])


def _training_step(model):
    gm = GradManager().attach(model.parameters())
    opt = SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(ids, y):
        with gm:
            loss = F.nn.cross_entropy(model(ids), y)
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    return step


def _run(traced, ids, y, steps=3):
    """Reserved bytes the steps added on DEVICE (the model's included), the losses and the
    step function."""
    mge.coalesce_free_memory()
    base = mge.get_reserved_memory(DEVICE)
    model = EncoderBlock()
    rng = np.random.default_rng(1)
    for p in model.parameters():
        p._reset(mge.Tensor(rng.normal(0, 0.05, p.shape).astype(np.float32), device=DEVICE))
    step = _training_step(model)
    fn = trace(step, symbolic=True) if traced else step
    losses = [float(fn(ids, y).numpy()) for _ in range(steps)]
    return mge.get_reserved_memory(DEVICE) - base, losses, fn


def test_a_traced_step_reserves_no_more_than_the_eager_step():
    old = mge.get_default_device()
    mge.set_default_device(DEVICE)
    try:
        rng = np.random.default_rng(0)
        ids = mge.Tensor(rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32))
        y = mge.Tensor(rng.integers(0, 2, BATCH).astype(np.int32))
        eager_reserved, eager_losses, _ = _run(False, ids, y)
        traced_reserved, traced_losses, fn = _run(True, ids, y)
    finally:
        mge.set_default_device(old)
    np.testing.assert_allclose(traced_losses, eager_losses, rtol=1e-4)
    # The recording's cached blocks came on top of the arena: 1.4x the eager step's.
    assert traced_reserved <= eager_reserved, (traced_reserved, eager_reserved)
    # The embedding gradient's zeros (VOCAB x HIDDEN) were folded into a constant of the graph,
    # held for the trace's life.
    consts = [line for line in fn._graph_text().splitlines() if "= const" in line]
    assert not any(f"{{{VOCAB},{HIDDEN}}}" in line for line in consts), consts
