"""megengine.random: reproducibility from seeds, shapes, and each distribution against its
law (Kolmogorov-Smirnov distance to the CDF, or to a NumPy sample of the same law)."""

import math

import numpy as np
import pytest

import megengine as mge
import megengine.random as rand

N = 20000
KS_1 = 1.95 / math.sqrt(N)  # one-sample KS bound at alpha = 0.001
KS_2 = 1.95 * math.sqrt(2 / N)  # two-sample


def ks_cdf(x, cdf):
    x = np.sort(np.asarray(x, np.float64).ravel())
    f = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def ks_two(a, b):
    a, b = np.sort(np.ravel(a)), np.sort(np.ravel(b))
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / len(a)
    fb = np.searchsorted(b, grid, side="right") / len(b)
    return np.max(np.abs(fa - fb))


def test_seed_reproduces_and_successive_calls_differ():
    rand.seed(123)
    a1, a2 = rand.uniform(size=(50,)).numpy(), rand.uniform(size=(50,)).numpy()
    n1 = rand.normal(size=(7,)).numpy()
    p1 = rand.permutation(20).numpy()
    assert not np.array_equal(a1, a2)
    rand.seed(123)
    np.testing.assert_array_equal(rand.uniform(size=(50,)).numpy(), a1)
    np.testing.assert_array_equal(rand.uniform(size=(50,)).numpy(), a2)
    np.testing.assert_array_equal(rand.normal(size=(7,)).numpy(), n1)
    np.testing.assert_array_equal(rand.permutation(20).numpy(), p1)
    rand.seed(124)
    assert not np.array_equal(rand.uniform(size=(50,)).numpy(), a1)


def test_rng_objects_are_independent_of_the_global_generator():
    r1, r2 = rand.RNG(seed=5), rand.RNG(seed=5)
    x = r1.normal(size=(10,)).numpy()
    rand.seed(0)
    rand.uniform(size=(3,))
    np.testing.assert_array_equal(r2.normal(size=(10,)).numpy(), x)
    assert not np.array_equal(rand.RNG(seed=6).normal(size=(10,)).numpy(), x)
    assert not np.array_equal(rand.RNG().uniform(size=(8,)).numpy(),
                              rand.RNG().uniform(size=(8,)).numpy())  # fmt: skip


@pytest.mark.parametrize("size,shape", [(None, (1,)), ((), ()), (0, (0,)), (5, (5,)),
                                        ((2, 0, 3), (2, 0, 3)), ([3, 4], (3, 4))])  # fmt: skip
def test_shapes(size, shape):
    r = rand.RNG(seed=1)
    for fn in (r.uniform, r.normal, r.exponential, r.gamma, r.poisson):
        args = (2.0,) if fn in (r.gamma, r.poisson) else ()
        out = fn(*args, size=size)
        assert out.shape == shape and out.dtype == np.float32, fn.__name__
    assert r.beta(1.0, 2.0, size=size).shape == shape


def test_uniform_law():
    x = rand.RNG(seed=2).uniform(low=-2, high=3, size=(N,)).numpy()
    assert x.min() >= -2 and x.max() < 3
    assert ks_cdf(x, lambda t: (t + 2) / 5) < KS_1


def test_normal_law():
    x = rand.RNG(seed=3).normal(mean=1.5, std=2.0, size=(100, N // 100)).numpy()
    erf = np.vectorize(math.erf)
    assert ks_cdf(x, lambda t: 0.5 * (1 + erf((t - 1.5) / (2.0 * math.sqrt(2))))) < KS_1


def test_exponential_law_and_tensor_rate():
    x = rand.RNG(seed=4).exponential(rate=0.5, size=(N,)).numpy()
    assert ks_cdf(x, lambda t: 1 - np.exp(-0.5 * t)) < KS_1
    rate = mge.Tensor([1.0, 10.0])
    y = rand.RNG(seed=5).exponential(rate=rate, size=(N,)).numpy()
    assert y.shape == (N, 2)
    np.testing.assert_allclose(y.mean(axis=0), [1.0, 0.1], rtol=0.05)


@pytest.mark.parametrize("k,theta", [(0.3, 1.0), (1.0, 2.0), (2.5, 0.5), (30.0, 1.0)])
def test_gamma_law(k, theta):
    x = rand.RNG(seed=6).gamma(shape=k, scale=theta, size=(N,)).numpy()
    ref = np.random.default_rng(0).gamma(k, theta, size=N)
    assert (x > 0).all()
    assert ks_two(x, ref) < KS_2


def test_gamma_tensor_parameters_broadcast():
    k = mge.Tensor([[0.5], [4.0]])
    theta = mge.Tensor([1.0, 3.0, 0.1])
    x = rand.RNG(seed=7).gamma(k, theta, size=(N // 4,)).numpy()
    assert x.shape == (N // 4, 2, 3)
    np.testing.assert_allclose(x.mean(axis=0), k.numpy() * theta.numpy(), rtol=0.06)


@pytest.mark.parametrize("a,b", [(0.5, 0.5), (2.0, 5.0), (1.0, 1.0)])
def test_beta_law(a, b):
    x = rand.RNG(seed=8).beta(a, b, size=(N,)).numpy()
    ref = np.random.default_rng(1).beta(a, b, size=N)
    assert ((x >= 0) & (x <= 1)).all()
    assert ks_two(x, ref) < KS_2


@pytest.mark.parametrize("lam", [0.1, 3.0, 50.0])
def test_poisson_law(lam):
    x = rand.RNG(seed=9).poisson(lam, size=(N,)).numpy()
    ref = np.random.default_rng(2).poisson(lam, size=N)
    assert (x == np.round(x)).all() and (x >= 0).all()
    # compare the two CDFs on the integers
    grid = np.arange(0, int(lam * 3 + 10))
    fa = np.searchsorted(np.sort(x), grid, side="right") / N
    fb = np.searchsorted(np.sort(ref), grid, side="right") / N
    assert np.max(np.abs(fa - fb)) < KS_2


def test_poisson_tensor_lam():
    lam = mge.Tensor([0.5, 20.0, 200.0])
    x = rand.RNG(seed=10).poisson(lam, size=(4000,)).numpy()
    assert x.shape == (4000, 3)
    np.testing.assert_allclose(x.mean(axis=0), [0.5, 20.0, 200.0], rtol=0.04)
    np.testing.assert_allclose(x.var(axis=0), [0.5, 20.0, 200.0], rtol=0.12)


def test_multinomial_with_replacement_frequencies():
    w = np.array([[1.0, 0.0, 3.0, 6.0], [5.0, 5.0, 0.0, 0.0]], np.float32)
    out = rand.RNG(seed=11).multinomial(mge.Tensor(w), N, replacement=True).numpy()
    assert out.shape == (2, N) and out.dtype == np.int32
    for row in range(2):
        freq = np.bincount(out[row], minlength=4) / N
        np.testing.assert_allclose(freq, w[row] / w[row].sum(), atol=0.015)
    one = rand.RNG(seed=12).multinomial(mge.Tensor([0.0, 2.0]), 5, replacement=True)
    assert one.shape == (5,) and one.numpy().tolist() == [1] * 5


def test_multinomial_without_replacement():
    w = np.array([1.0, 2.0, 3.0, 0.0, 4.0], np.float32)
    r = rand.RNG(seed=13)
    firsts, seconds = [], []
    for _ in range(100):
        out = r.multinomial(mge.Tensor(np.tile(w, (40, 1))), 4).numpy()
        assert out.shape == (40, 4)
        for row in out:
            assert sorted(row.tolist()) == [0, 1, 2, 4]  # distinct, never the zero weight
        firsts.extend(out[:, 0].tolist())
        seconds.extend(out[:, 1].tolist())
    n = len(firsts)
    np.testing.assert_allclose(np.bincount(firsts, minlength=5) / n, w / w.sum(), atol=0.02)
    # P(second = j) = sum_i p_i p_j / (1 - p_i), exactly as sequential draws
    p = w / w.sum()
    second = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(5) if i != j)
                       for j in range(5)])  # fmt: skip
    np.testing.assert_allclose(np.bincount(seconds, minlength=5) / n, second, atol=0.02)


def test_permutation_and_shuffle():
    r = rand.RNG(seed=14)
    p = r.permutation(1000)
    assert p.dtype == np.int32 and sorted(p.numpy().tolist()) == list(range(1000))
    assert p.numpy().tolist() != list(range(1000))
    assert r.permutation(0).shape == (0,)
    assert r.permutation(mge.Tensor(np.zeros((0, 3), np.float32))).shape == (0, 3)
    assert r.permutation(np.int64(4)).shape == (4,)
    pf = r.permutation(6, dtype="float32").numpy()
    assert pf.dtype == np.float32 and sorted(pf.tolist()) == list(range(6))
    x = mge.Tensor(np.arange(24, dtype=np.float32).reshape(6, 4))
    y = r.permutation(x).numpy()
    assert sorted(y[:, 0].tolist()) == [0, 4, 8, 12, 16, 20]
    np.testing.assert_array_equal(y[:, 1:] - y[:, :1], np.tile([1, 2, 3], (6, 1)))
    # MegEngine 1.13 takes a 0-d Tensor as the one-element vector: Tensor(7) gives [7]
    for v, dt in [(7, np.int32), (7.5, np.float32)]:
        s = r.permutation(mge.Tensor(v))
        assert s.shape == (1,) and s.dtype == dt and s.tolist() == [v]
    xt = x.T  # a non-contiguous view
    yt = r.permutation(xt).numpy()
    assert sorted(yt[:, 0].tolist()) == [0, 1, 2, 3]
    w = mge.Parameter(np.arange(10, dtype=np.float32))
    same = w
    r.shuffle(w)
    assert w is same and sorted(w.numpy().tolist()) == list(range(10))
    # every position is equally likely: frequency of value 0 at each slot
    counts = np.zeros(5)
    for _ in range(2000):
        counts[int(np.argmax(r.permutation(5).numpy() == 0))] += 1
    np.testing.assert_allclose(counts / 2000, 0.2, atol=0.04)


def test_errors():
    r = rand.RNG(seed=0)
    with pytest.raises(ValueError, match="uniform: high \\(0\\) must be greater than low"):
        r.uniform(1, 0)
    with pytest.raises(ValueError, match="normal: std must be >= 0"):
        r.normal(0, -1)
    with pytest.raises(ValueError, match="size must not have negative dims"):
        r.uniform(size=(2, -1))
    with pytest.raises(TypeError, match="size must be an int or a sequence"):
        r.normal(size="abc")
    with pytest.raises(ValueError, match="gamma: shape must be > 0"):
        r.gamma(0.0)
    with pytest.raises(ValueError, match="gamma: scale must be > 0 everywhere"):
        r.gamma(1.0, mge.Tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="beta: alpha must be > 0"):
        r.beta(-1.0, 1.0)
    with pytest.raises(ValueError, match="poisson: lam must be > 0"):
        r.poisson(0)
    with pytest.raises(TypeError, match="exponential: rate must be a number or a Tensor"):
        r.exponential("fast")
    with pytest.raises(ValueError, match="multinomial: input must be 1-D or 2-D"):
        r.multinomial(mge.Tensor(np.ones((2, 2, 2))), 1)
    with pytest.raises(ValueError, match="cannot draw 3 samples without replacement"):
        r.multinomial(mge.Tensor([1.0, 0.0, 1.0]), 3)
    with pytest.raises(ValueError, match="non-negative"):
        r.multinomial(mge.Tensor([1.0, -1.0]), 1)
    with pytest.raises(ValueError, match="every row needs a positive weight"):
        r.multinomial(mge.Tensor([[0.0, 0.0]]), 1, replacement=True)
    with pytest.raises(ValueError, match="num_samples must be > 0"):
        r.multinomial(mge.Tensor([1.0]), 0)
    with pytest.raises(TypeError, match="permutation: n must be an int or a Tensor"):
        r.permutation(2.5)
    with pytest.raises(TypeError, match="permutation: dtype must be int32 or float32"):
        r.permutation(3, dtype="int8")
    with pytest.raises(TypeError, match="shuffle: expects a Tensor"):
        r.shuffle([1, 2])
    with pytest.raises(TypeError, match="seed must be an int"):
        rand.seed(1.5)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        rand.RNG(seed=-1)


def test_next_seed_follows_the_global_seed():
    from megengine.random.rng import _next_seed

    rand.seed(77)
    keys = [_next_seed() for _ in range(3)]
    assert len(set(keys)) == 3 and all(0 <= k < 2**64 for k in keys)
    rand.seed(77)
    assert [_next_seed() for _ in range(3)] == keys


def test_rng_default_device_follows_set_default_device():
    # MegEngine's rule: the module's functions (and a generator without a seed) draw on the
    # default device of each call; a generator given a seed keeps the default of its
    # construction; an explicit device always wins.
    was = mge.get_default_device()
    try:
        mge.set_default_device("cpu1")
        seeded = rand.RNG(seed=3)
        unseeded = rand.RNG()
        assert rand.normal(size=(2,)).device == "cpu1"
        assert rand.uniform(size=(2,)).device == "cpu1"
        assert rand.permutation(4).device == "cpu1"
        mge.set_default_device("cpu2")
        assert rand.normal(size=(2,)).device == "cpu2"
        assert rand.gamma(2.0, size=(2,)).device == "cpu2"
        assert unseeded.uniform(size=(2,)).device == "cpu2"
        assert seeded.uniform(size=(2,)).device == "cpu1"
        assert seeded.normal(size=(2,)).device == "cpu1"
        assert rand.RNG(seed=3, device="cpu3").uniform(size=(2,)).device == "cpu3"
    finally:
        mge.set_default_device(was)


def test_rng_device():
    r = rand.RNG(seed=1, device="cpu1")
    for x in (r.uniform(size=(4,)), r.normal(size=(4,)), r.exponential(size=(4,)),
              r.gamma(0.5, size=(4,)), r.beta(1.0, 2.0, size=(4,)), r.poisson(2.0, size=(4,)),
              r.permutation(3)):  # fmt: skip
        assert x.device == "cpu1"
    # a Tensor argument's device wins over the generator's
    w = mge.Tensor([1.0, 2.0], device="cpu2")
    assert r.multinomial(w, 3, replacement=True).device == "cpu2"
    assert r.exponential(w, size=(2,)).device == "cpu2"


def test_multinomial_draw_at_the_top_never_picks_a_zero_weight():
    class Top(rand.RNG):
        def _uniform01(self, shape, device=None):  # as if u * total rounded up to the total
            return mge.Tensor(np.ones(shape, np.float32))

    w = mge.Tensor([[0.1, 0.2, 0.0, 0.0], [0.0, 0.0, 0.0, 5.0]])
    out = Top(seed=0).multinomial(w, 3, replacement=True).numpy()
    assert out.tolist() == [[1, 1, 1], [3, 3, 3]]

    class Zero(rand.RNG):
        def _uniform01(self, shape, device=None):  # Gumbel noise +inf everywhere
            return mge.Tensor(np.zeros(shape, np.float32))

    out = Zero(seed=0).multinomial(mge.Tensor([0.0, 1.0, 0.0, 2.0]), 2).numpy()
    assert sorted(out.tolist()) == [1, 3]
