"""megengine.dtr: evicting activations and recomputing them gives the same training step, bit for
bit, with a lower peak of allocated memory; its settings parse as MegEngine's. The tests run with
the estimated cost (the default): what is evicted, and so the peak, is then the same on every run
however loaded the machine; with the measured cost a stalled op changes them."""

import gc

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager
from megengine.core import _imperative_rt as rt
from megengine.optimizer import SGD


@pytest.fixture(autouse=True)
def _restore_dtr():
    names = ("eviction_threshold", "evictee_minimum_size", "enable_sqrt_sampling", "_eviction_cost")
    saved = [getattr(mge.dtr, n) for n in names]
    yield
    mge.dtr.disable()
    for n, v in zip(names, saved):
        setattr(mge.dtr, n, v)


class _Net(M.Module):
    def __init__(self):
        super().__init__()
        self.c1 = M.Conv2d(3, 16, 3, padding=1)
        self.bn = M.BatchNorm2d(16)
        self.c2 = M.Conv2d(16, 16, 3, padding=1)
        self.c3 = M.Conv2d(16, 16, 3, padding=1)
        self.fc = M.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.c1(x)))
        x = F.relu(self.c2(x))
        x = F.avg_pool2d(F.relu(self.c3(x)), 2)
        return self.fc(F.flatten(x, 1))


def _train(dtr, steps=3, sqrt_sampling=False, cost="estimate"):
    """The parameters after `steps` steps, the peak of allocated memory above what was allocated
    before (bytes) and DTR's counters."""
    # The threshold is on all memory allocated on the device, so it is set above what is already
    # there: tensors earlier tests left alive (garbage not yet collected, caches) would otherwise
    # take the threshold's room, and the DTR run evict everything and peak where the plain one
    # does. The allocator's cached blocks go too: a request takes a cached block up to twice its
    # size and counts the whole block, so blocks earlier tests freed would swell either run's
    # count by chance. The collector is off during the steps so that it frees nothing in between.
    gc.collect()
    rt.empty_cache(rt.canonical_device(mge.get_default_device()))
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        base = mge.get_allocated_memory()
        net = _Net()
        for i, p in enumerate(net.parameters()):
            p._reset(mge.tensor(np.random.RandomState(i).randn(*p.shape).astype("float32") * 0.1))
        gm = GradManager().attach(net.parameters())
        opt = SGD(net.parameters(), lr=0.01, momentum=0.9)
        x = mge.tensor(np.random.RandomState(7).randn(32, 3, 16, 16).astype("float32"))
        y = mge.tensor(np.arange(32, dtype="int32") % 10)
        if dtr:
            # The plain step peaks at about 7 MB in backward (backward frees each node's saved
            # values and output gradients once it has run). At 3 MB evictions lower that peak; at
            # 1 MB the backward recomputes whole chains at once (each recomputation holds its
            # inputs) and peaks where the plain run does.
            mge.dtr.eviction_threshold = base + 3 * 1024**2
            mge.dtr.evictee_minimum_size = "16KB"
            mge.dtr.enable_sqrt_sampling = sqrt_sampling
            mge.dtr._eviction_cost = cost
            mge.dtr.enable()
        rt.dtr_reset_stats()
        mge.reset_max_memory_stats()
        for _ in range(steps):
            with gm:
                loss = F.loss.cross_entropy(net(x), y)
                gm.backward(loss)
            opt.step().clear_grad()
        peak = mge.get_max_allocated_memory() - base
        stats = rt.dtr_stats()
        mge.dtr.disable()
        return [p.numpy() for p in net.parameters()], peak, stats
    finally:
        if gc_was_on:
            gc.enable()


@pytest.mark.parametrize("held_mb", [0, 8])
@pytest.mark.parametrize("sqrt_sampling", [False, True])
def test_training_with_evictions_gives_the_same_parameters_with_less_memory(sqrt_sampling, held_mb):
    # held_mb: memory allocated before, as earlier tests in the same process leave some
    held = mge.tensor(np.zeros(held_mb * 2**18, "float32"))
    want, peak_plain, _ = _train(dtr=False)
    got, peak_dtr, stats = _train(dtr=True, sqrt_sampling=sqrt_sampling)
    assert stats["evictions"] > 0 and stats["recomputations"] > 0, stats
    assert stats["candidates"] == 0  # the step's values died with it
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)  # the same kernels on the same inputs
    assert peak_dtr < peak_plain, (peak_dtr, peak_plain)
    del held  # alive until here


def test_the_same_steps_evict_the_same_values():
    # the estimated cost depends on the program alone: a second run makes the same choices
    _, peak_a, stats_a = _train(dtr=True)
    _, peak_b, stats_b = _train(dtr=True)
    assert stats_a["evictions"] > 0
    assert (peak_a, stats_a) == (peak_b, stats_b)


def test_the_measured_cost_gives_the_same_parameters():
    want, _, _ = _train(dtr=False)
    got, _, stats = _train(dtr=True, cost="measured")
    # which values go varies with the machine's load, so the peak is not asserted
    assert stats["evictions"] > 0 and stats["recomputations"] > 0, stats
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_the_eviction_cost_is_the_estimate_unless_asked():
    assert mge.dtr._eviction_cost == "estimate"
    mge.dtr._eviction_cost = "measured"
    assert mge.dtr._eviction_cost == "measured"
    with pytest.raises(ValueError, match="estimate"):
        mge.dtr._eviction_cost = "time"
    assert mge.dtr._eviction_cost == "measured"


def test_an_evicted_activation_reads_back_its_value():
    w = mge.Parameter(np.random.RandomState(0).randn(128, 128).astype("float32"))
    gm = GradManager().attach([w])
    mge.dtr.eviction_threshold = 1
    mge.dtr.evictee_minimum_size = 0
    mge.dtr.enable()
    rt.dtr_reset_stats()
    with gm:
        acts = [F.tanh(w)]
        for _ in range(5):
            acts.append(F.tanh(acts[-1] * 1.5))
        gm.backward(acts[-1].sum())
    assert rt.dtr_stats()["evictions"] > 0
    mge.dtr.disable()
    ref = np.tanh(w.numpy())
    for a in acts[1:]:
        ref = np.tanh(ref * np.float32(1.5))
    np.testing.assert_allclose(acts[-1].numpy(), ref, rtol=1e-5, atol=1e-6)
    # the gradient is the chain rule through every (possibly recomputed) activation
    g = np.ones_like(ref)
    vals = [np.tanh(w.numpy())]
    for _ in range(5):
        vals.append(np.tanh(vals[-1] * np.float32(1.5)))
    for k in range(5, 0, -1):
        g = g * (1 - vals[k] ** 2) * 1.5
    g = g * (1 - vals[0] ** 2)
    np.testing.assert_allclose(w.grad.numpy(), g, rtol=1e-4, atol=1e-6)


def test_a_value_only_recomputation_needs_is_released():
    w = mge.Parameter(np.ones((256, 256), "float32"))
    gm = GradManager().attach([w])
    mge.dtr.evictee_minimum_size = 0
    mge.dtr.enable()
    rt.dtr_reset_stats()
    with gm:
        a = F.exp(w * 0.5)
        b = F.exp(a)
        gm.backward(b.sum())
    del a  # b's history still names it: its memory goes now, its value is recomputable
    assert rt.dtr_stats()["released"] >= 1
    np.testing.assert_allclose(b.numpy(), np.exp(np.exp(np.float32(0.5))), rtol=1e-6)


def test_nothing_is_evicted_outside_a_recording_or_when_disabled():
    mge.dtr.eviction_threshold = 1
    mge.dtr.evictee_minimum_size = 0
    mge.dtr.enable()
    rt.dtr_reset_stats()
    x = mge.tensor(np.ones((256, 256), "float32"))
    y = F.exp(F.exp(x))  # no GradManager records: no history, nothing to evict
    assert rt.dtr_stats()["evictions"] == 0
    mge.dtr.disable()
    _, _, stats = _train(dtr=False, steps=1)
    assert stats["evictions"] == 0
    np.testing.assert_allclose(y.numpy(), np.exp(np.exp(1.0)), rtol=1e-6)


@pytest.mark.parametrize(
    "value, want",
    [("2GB", 2 * 1024**3), ("512 MB", 512 * 1024**2), ("1.5KB", 1536), ("7b", 7), (4096, 4096)],
)
def test_sizes_parse_as_megengine(value, want):
    mge.dtr.eviction_threshold = value
    assert mge.dtr.eviction_threshold == want
    mge.dtr.evictee_minimum_size = value
    assert mge.dtr.evictee_minimum_size == want


def test_bad_sizes_raise():
    with pytest.raises(ValueError, match="units"):
        mge.dtr.eviction_threshold = "2TB"
    with pytest.raises(ValueError, match="units"):
        mge.dtr.evictee_minimum_size = "1GB 2MB"
    with pytest.raises(TypeError):
        mge.dtr.eviction_threshold = 1.5
    with pytest.raises(TypeError):
        mge.dtr.eviction_threshold = True
    with pytest.raises(ValueError, match="negative"):
        mge.dtr.eviction_threshold = -1
