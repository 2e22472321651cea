"""Random number generation on NeoMeg's Philox generator operators.

UniformRNG, GaussianRNG and PermutationRNG (``dnn/ops/defs/random.py``) draw from a
counter-based Philox4x32-10 stream keyed by a 64-bit seed: element i depends only on (key, i).
An ``RNG`` keeps a seed and a counter and keys each draw with a hash of both, so successive
draws differ and re-seeding replays them. The other distributions are exact constructions
from uniform and normal draws with tensor ops:

- exponential: ``-log(1 - u) / rate`` (inverse CDF);
- gamma: Marsaglia and Tsang's rejection method, repeated until every element is accepted,
  with ``Gamma(a) = Gamma(a + 1) * u ** (1 / a)`` for ``a < 1``;
- beta: ``X / (X + Y)`` with ``X ~ Gamma(alpha)``, ``Y ~ Gamma(beta)``;
- poisson: the number of unit-rate exponential arrivals before ``lam`` (a running sum of
  exponential draws, extended until every element has passed ``lam``);
- multinomial: inverse CDF on the running sum of the weights (with replacement) or the
  Gumbel top-k construction (without replacement).
"""

import os

import numpy as np

from ..core import _imperative_rt as _rt
from ..core._imperative_rt import apply, apply_generator
from ..core.ops import builtin
from ..core.tensor.array_method import as_tensor, cached_op
from ..core.tensor.shape_dim import INTEGER_TYPES
from ..tensor import Tensor

_MASK64 = (1 << 64) - 1


def _mix(seed, counter):
    """SplitMix64 of (seed, counter): the key of one draw."""
    z = (seed * 0x9E3779B97F4A7C15 + counter + 1) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _check_seed(seed, fn):
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{fn}: seed must be an int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"{fn}: seed must be >= 0, got {seed}")
    return int(seed) & _MASK64


def _shape(size, fn):
    if size is None:
        return (1,)
    if isinstance(size, INTEGER_TYPES) and not isinstance(size, bool):
        size = (size,)
    try:
        if isinstance(size, (str, bytes)) or not all(
            isinstance(s, INTEGER_TYPES) and not isinstance(s, bool) for s in size
        ):
            raise TypeError
        shape = tuple(int(s) for s in size)
    except TypeError:
        raise TypeError(f"{fn}: size must be an int or a sequence of ints, got {size!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"{fn}: size must not have negative dims, got {shape}")
    return shape


def _cond(c, a, b):
    return apply(cached_op(builtin.Elemwise, mode="COND"), c, a, b)[0]


def _broadcast(x, shape):
    return apply(cached_op(builtin.Broadcast, shape=tuple(shape)), x)[0]


def _float_param(value, fn, name, device, positive=True):
    """A distribution parameter as a float32 Tensor (a number goes to ``device``, where the
    draws then happen; a Tensor keeps its own); a Python number is checked here."""
    if isinstance(value, Tensor):
        return value if value._dtype_name == "float32" else value.astype("float32")
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        if positive and not value > 0:
            raise ValueError(f"{fn}: {name} must be > 0, got {value}")
        return Tensor(float(value), dtype="float32", device=device)
    raise TypeError(f"{fn}: {name} must be a number or a Tensor, got {type(value).__name__}")


class RNG:
    r"""A random number generator with its own seed, independent of the global one.

    Each draw is keyed by a hash of the seed and a counter that the draw advances, so two
    generators with the same seed give the same sequence of results.

    Args:
        seed: the seed (an int >= 0); a random one when None.
        device: the device the results live on. When None, a generator given a seed keeps
            the default device of its construction (``megengine.set_default_device``), one
            without a seed (``megengine.random``'s own functions too) draws on the default
            device of each call, as MegEngine's generators do.

    Examples:
        >>> import megengine.random as rand
        >>> a, b = rand.RNG(seed=7), rand.RNG(seed=7)
        >>> bool((a.uniform(size=(3,)).numpy() == b.uniform(size=(3,)).numpy()).all())
        True
        >>> x = a.normal(size=(2, 2))
        >>> x.shape, x.dtype.name
        ((2, 2), 'float32')
    """

    def __init__(self, seed=None, device=None):
        given = seed is not None
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        self._seed = _check_seed(seed, "RNG")
        self._counter = 0
        if device is not None:
            device = str(device)
        elif given:
            device = _rt.get_default_device()
        self._fixed_device = device

    @property
    def _device(self):
        """Where this generator's draws go: its own device, else the default one now."""
        return self._fixed_device or _rt.get_default_device()

    def _key(self):
        key = _mix(self._seed, self._counter)
        self._counter += 1
        if _rt._trace_active():
            # A recording trace replays the draw: its graph's random ops get the keys the
            # replay draws from this generator, as the eager calls would (megengine.jit.trace).
            _rt._trace_note_key(self, key)
        return key

    def _seed_(self, seed):
        self._seed = _check_seed(seed, "seed")
        self._counter = 0

    def _uniform01(self, shape, device=None):
        op = builtin.UniformRNG(seed=self._key())
        return apply_generator(op, [list(shape)], device or self._device)[0]

    def _normal01(self, shape, device=None):
        op = builtin.GaussianRNG(seed=self._key())
        return apply_generator(op, [list(shape)], device or self._device)[0]

    def uniform(self, low=0, high=1, size=None):
        r"""Draws from the uniform distribution on ``[low, high)``.

        Args:
            low: lower bound.
            high: upper bound (> low).
            size: output shape (an int or a sequence of ints); ``(1,)`` when None.

        Returns:
            a float32 Tensor of shape ``size``.

        Examples:
            >>> import megengine.random as rand
            >>> x = rand.RNG(seed=1).uniform(low=2, high=3, size=(100,)).numpy()
            >>> bool(((x >= 2) & (x < 3)).all())
            True
        """
        shape = _shape(size, "uniform")
        if not high > low:
            raise ValueError(f"uniform: high ({high}) must be greater than low ({low})")
        u = self._uniform01(shape)
        return u * float(high - low) + float(low)

    def normal(self, mean=0, std=1, size=None):
        r"""Draws from the normal distribution with ``mean`` and standard deviation ``std``.

        Args:
            mean: the mean.
            std: the standard deviation (>= 0).
            size: output shape (an int or a sequence of ints); ``(1,)`` when None.

        Returns:
            a float32 Tensor of shape ``size``.

        Examples:
            >>> import megengine.random as rand
            >>> x = rand.RNG(seed=1).normal(mean=5, std=0, size=(2,))
            >>> x.numpy().tolist()
            [5.0, 5.0]
        """
        shape = _shape(size, "normal")
        if not std >= 0:
            raise ValueError(f"normal: std must be >= 0, got {std}")
        op = builtin.GaussianRNG(seed=self._key(), mean=float(mean), std=float(std))
        return apply_generator(op, [list(shape)], self._device)[0]

    def exponential(self, rate=1, size=None):
        r"""Draws from the exponential distribution with ``rate`` (mean ``1 / rate``).

        Args:
            rate: the rate (> 0), a number or a Tensor broadcast with ``size``.
            size: output shape (an int or a sequence of ints); the output shape is ``size +
                rate.shape``; ``(1,)`` for a number rate when None.

        Returns:
            a float32 Tensor.

        Examples:
            >>> import megengine.random as rand
            >>> x = rand.RNG(seed=1).exponential(rate=2.0, size=(1000,)).numpy()
            >>> bool((x >= 0).all()), bool(0.4 < x.mean() < 0.6)
            (True, True)
        """
        rate_t = _float_param(rate, "exponential", "rate", self._device)
        shape = self._out_shape(size, rate_t.shape, "exponential")
        u = self._uniform01(shape, rate_t.device)
        return -_log(1.0 - u) / rate_t

    def _out_shape(self, size, param_shape, fn):
        if size is None:
            return param_shape if param_shape else (1,)
        return _shape(size, fn) + tuple(param_shape)

    def _gamma01(self, alpha):
        """Gamma(alpha, 1) draws of alpha's shape (alpha a float32 Tensor > 0)."""
        shape = alpha.shape
        small = alpha < 1.0
        a = _cond(small, alpha + 1.0, alpha)
        d = a - 1.0 / 3.0
        c = 1.0 / (9.0 * d) ** 0.5
        out = alpha * 0.0
        done = alpha < 0.0  # all False
        while True:
            x = self._normal01(shape, alpha.device)
            u = self._uniform01(shape, alpha.device)
            v = 1.0 + c * x
            v3 = v * v * v
            # accept when v > 0 and log(u) < x^2 / 2 + d - d v^3 + d log(v^3)
            safe_v3 = _cond(v3 > 0.0, v3, v3 * 0.0 + 1.0)
            accept = (v3 > 0.0) & (_log(u) < 0.5 * x * x + d - d * safe_v3 + d * _log(safe_v3))
            new = accept & ~done
            out = _cond(new, d * safe_v3, out)
            done = done | accept
            if bool(done.numpy().all()):
                break
        if bool(small.numpy().any()):
            u = self._uniform01(shape, alpha.device)
            boost = _cond(small, (1.0 - u) ** (1.0 / alpha), alpha * 0.0 + 1.0)
            out = out * boost
        return out

    def gamma(self, shape, scale=1, size=None):
        r"""Draws from the gamma distribution with ``shape`` (k) and ``scale`` (theta).

        Args:
            shape: the shape parameter (> 0), a number or a Tensor.
            scale: the scale parameter (> 0), a number or a Tensor.
            size: output shape; the output shape is ``size`` + the broadcast shape of
                ``shape`` and ``scale``; ``(1,)`` for number parameters when None.

        Returns:
            a float32 Tensor.

        Examples:
            >>> import megengine.random as rand
            >>> x = rand.RNG(seed=1).gamma(shape=2.0, scale=3.0, size=(2000,)).numpy()
            >>> bool(5.5 < x.mean() < 6.5)  # mean = shape * scale
            True
        """
        k = _float_param(shape, "gamma", "shape", self._device)
        theta = _float_param(scale, "gamma", "scale", k.device)
        pshape = np.broadcast_shapes(k.shape, theta.shape)
        out_shape = self._out_shape(size, pshape, "gamma")
        _check_positive(k, "gamma", "shape")
        _check_positive(theta, "gamma", "scale")
        k, theta = _broadcast(k, out_shape), _broadcast(theta, out_shape)
        return self._gamma01(k) * theta

    def beta(self, alpha, beta, size=None):
        r"""Draws from the beta distribution with parameters ``alpha`` and ``beta``.

        Args:
            alpha: the first shape parameter (> 0), a number or a Tensor.
            beta: the second shape parameter (> 0), a number or a Tensor.
            size: output shape; the output shape is ``size`` + the broadcast shape of
                ``alpha`` and ``beta``; ``(1,)`` for number parameters when None.

        Returns:
            a float32 Tensor with values in [0, 1].

        Examples:
            >>> import megengine.random as rand
            >>> x = rand.RNG(seed=1).beta(alpha=2.0, beta=6.0, size=(2000,)).numpy()
            >>> bool(0.22 < x.mean() < 0.28)  # mean = alpha / (alpha + beta)
            True
        """
        a = _float_param(alpha, "beta", "alpha", self._device)
        b = _float_param(beta, "beta", "beta", a.device)
        pshape = np.broadcast_shapes(a.shape, b.shape)
        out_shape = self._out_shape(size, pshape, "beta")
        _check_positive(a, "beta", "alpha")
        _check_positive(b, "beta", "beta")
        x = self._gamma01(_broadcast(a, out_shape))
        y = self._gamma01(_broadcast(b, out_shape))
        return x / (x + y)

    def poisson(self, lam, size=None):
        r"""Draws from the Poisson distribution with rate ``lam``.

        Each value counts the arrivals of a unit-rate Poisson process before time ``lam``
        (a running sum of exponential draws), so the cost grows with ``lam``.

        Args:
            lam: the rate (> 0), a number or a Tensor.
            size: output shape; the output shape is ``size + lam.shape``; ``(1,)`` for a
                number when None.

        Returns:
            a float32 Tensor of non-negative integer values.

        Examples:
            >>> import megengine.random as rand
            >>> x = rand.RNG(seed=1).poisson(lam=4.0, size=(2000,)).numpy()
            >>> bool((x == x.round()).all()), bool(3.8 < x.mean() < 4.2)
            (True, True)
        """
        lam_t = _float_param(lam, "poisson", "lam", self._device)
        out_shape = self._out_shape(size, lam_t.shape, "poisson")
        _check_positive(lam_t, "poisson", "lam")
        lam_t = _broadcast(lam_t, out_shape)
        n = int(np.prod(out_shape))
        lam_max = float(lam_t.numpy().max()) if n else 0.0
        # draws per element and round: enough for lam_max + 4 sigma, capped at ~16M values
        k = int(min(max(lam_max + 4 * lam_max**0.5 + 8, 8), max(8, (1 << 24) // max(n, 1))))
        count = lam_t * 0.0
        t = lam_t * 0.0
        cumsum = cached_op(builtin.Cumsum, axis=-1)
        while n:
            e = -_log(1.0 - self._uniform01(out_shape + (k,), lam_t.device))
            arrivals = apply(cumsum, e)[0] + _add_axis(t)
            count = count + (arrivals < _add_axis(lam_t)).astype("float32").sum(axis=-1)
            t = _take_last(arrivals)
            if not bool((t < lam_t).numpy().any()):
                break
        return count

    def multinomial(self, input, num_samples, replacement=False):
        r"""Draws category indices with probabilities proportional to the rows of ``input``.

        Args:
            input: non-negative weights, 1-D (categories) or 2-D (rows of categories).
            num_samples: samples per row.
            replacement: draw with replacement; without it, ``num_samples`` must not exceed
                the number of categories with non-zero weight.

        Returns:
            an int32 Tensor of shape ``(num_samples,)`` or ``(rows, num_samples)``.

        Examples:
            >>> import megengine as mge
            >>> import megengine.random as rand
            >>> w = mge.Tensor([0.0, 1.0, 0.0, 3.0])
            >>> sorted(rand.RNG(seed=1).multinomial(w, 2).numpy().tolist())
            [1, 3]
        """
        x = as_tensor(input)
        if x.ndim not in (1, 2):
            raise ValueError(f"multinomial: input must be 1-D or 2-D, got shape {x.shape}")
        if x._dtype_name != "float32":
            x = x.astype("float32")
        rows = x.reshape(1, -1) if x.ndim == 1 else x
        n_rows, n_cat = rows.shape
        if n_cat == 0:
            raise ValueError(f"multinomial: input of shape {x.shape} has no categories")
        if isinstance(num_samples, bool) or not isinstance(num_samples, INTEGER_TYPES):
            raise TypeError("multinomial: num_samples must be an int")
        if num_samples <= 0:
            raise ValueError(f"multinomial: num_samples must be > 0, got {num_samples}")
        w = rows.numpy()
        if not np.isfinite(w).all() or (w < 0).any():
            raise ValueError("multinomial: weights must be finite and non-negative")
        nonzero = (w > 0).sum(axis=1)
        if (nonzero == 0).any():
            raise ValueError("multinomial: every row needs a positive weight")
        if not replacement and num_samples > nonzero.min():
            raise ValueError(
                f"multinomial: cannot draw {num_samples} samples without replacement from a "
                f"row with {int(nonzero.min())} non-zero weights"
            )
        if replacement:
            cdf = apply(cached_op(builtin.Cumsum, axis=-1), rows)[0]
            total = _take_last(cdf)
            v = self._uniform01((n_rows, num_samples), x.device) * _add_axis(total)
            cdf3 = cdf.reshape(n_rows, 1, n_cat)
            below = cdf3 <= _add_axis(v)
            # the first k with cdf[k] > v, which has a positive weight; v can round up to the
            # total, where none is: that draw goes to the row's last positive category
            out = below.astype("int32").sum(axis=-1)
            last = n_cat - 1 - np.argmax(w[:, ::-1] > 0, axis=1)
            last = Tensor(
                np.broadcast_to(last[:, None], out.shape).astype(np.int32), device=x.device
            )
            out = _cond(out >= n_cat, last, out)
        else:
            g = -_log(-_log(1.0 - self._uniform01((n_rows, n_cat), x.device)))
            # Gumbel top-k; zero weights get -inf keys even where g is +inf (u = 0)
            neg_inf = rows * 0.0 - float("inf")
            keys = _cond(rows > 0.0, _log(rows) + g, neg_inf)
            op = cached_op(builtin.TopK, mode=builtin.TopK.Mode.VALUE_IDX_SORTED, k=-num_samples)
            out = apply(op, keys)[1]
        return out.reshape(num_samples) if x.ndim == 1 else out

    def permutation(self, n, *, dtype="int32"):
        r"""A random permutation of ``0..n-1``, or of the first axis of a Tensor.

        Args:
            n: an int (permute ``range(n)``) or a Tensor (return a copy with its first axis
                shuffled; a 0-d Tensor is taken as the one-element vector, as MegEngine does).
            dtype: dtype of the result when ``n`` is an int (``"int32"`` or ``"float32"``).

        Returns:
            a Tensor.

        Examples:
            >>> import megengine.random as rand
            >>> sorted(rand.RNG(seed=1).permutation(5).numpy().tolist())
            [0, 1, 2, 3, 4]
        """
        if isinstance(n, Tensor):
            if n.ndim == 0:
                n = n.reshape(1)
            idx = self.permutation(n.shape[0])
            return apply(cached_op(builtin.IndexingMultiAxisVec, axes=(0,)), n, idx)[0]
        if isinstance(n, bool) or not isinstance(n, INTEGER_TYPES):
            raise TypeError(f"permutation: n must be an int or a Tensor, got {type(n).__name__}")
        if n < 0:
            raise ValueError(f"permutation: n must be >= 0, got {n}")
        dtype = np.dtype(dtype).name
        if dtype not in ("int32", "float32"):
            raise TypeError(f"permutation: dtype must be int32 or float32, got {dtype}")
        op = builtin.PermutationRNG(seed=self._key(), dtype=dtype)
        return apply_generator(op, [[int(n)]], self._device)[0]

    def shuffle(self, inp):
        r"""Shuffles a Tensor in place along its first axis.

        Args:
            inp: the Tensor to shuffle (its values are replaced; the object stays).

        Returns:
            None

        Examples:
            >>> import megengine as mge
            >>> import megengine.random as rand
            >>> x = mge.Tensor([1, 2, 3, 4])
            >>> rand.RNG(seed=1).shuffle(x)
            >>> sorted(x.numpy().tolist())
            [1, 2, 3, 4]
        """
        if not isinstance(inp, Tensor):
            raise TypeError(f"shuffle: expects a Tensor, got {type(inp).__name__}")
        inp._reset(self.permutation(inp))


def _log(x):
    return apply(cached_op(builtin.Elemwise, mode="LOG"), x)[0]


def _add_axis(x):
    return apply(cached_op(builtin.AddAxis, axis=(x.ndim,)), x)[0]


def _take_last(x):
    """x[..., -1] of a Tensor whose last axis is not empty."""
    n = x.shape[-1]
    idx = Tensor(np.array(n - 1, np.int32), device=x.device)
    return apply(cached_op(builtin.IndexingMultiAxisVec, axes=(x.ndim - 1,)), x, idx)[0]


def _check_positive(t, fn, name):
    v = t.numpy()
    if not (v > 0).all():
        raise ValueError(f"{fn}: {name} must be > 0 everywhere")


_default = RNG()


def seed(seed):
    r"""Seeds the global generator: the draws that follow are reproducible.

    Args:
        seed: an int >= 0.

    Returns:
        None

    Examples:
        >>> import megengine.random as rand
        >>> rand.seed(42); a = rand.uniform(size=(3,)).numpy()
        >>> rand.seed(42); b = rand.uniform(size=(3,)).numpy()
        >>> bool((a == b).all())
        True
    """
    _default._seed_(seed)


def _next_seed():
    """The next 64-bit Philox key of the global generator, for other generator ops (dropout
    masks, random initialisers) so that ``seed(s)`` makes them reproducible too."""
    return _default._key()


def _wrap(name):
    method = getattr(RNG, name)

    def fn(*args, **kwargs):
        return getattr(_default, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__signature__ = (
        __import__("inspect")
        .signature(method)
        .replace(parameters=list(__import__("inspect").signature(method).parameters.values())[1:])
    )
    fn.__doc__ = method.__doc__.replace("rand.RNG(seed=1).", "rand.").replace(
        "Draws from", "Draws, from the global generator, from", 1
    )
    fn.__module__ = __name__
    return fn


uniform = _wrap("uniform")
normal = _wrap("normal")
gamma = _wrap("gamma")
beta = _wrap("beta")
poisson = _wrap("poisson")
exponential = _wrap("exponential")
multinomial = _wrap("multinomial")
permutation = _wrap("permutation")
shuffle = _wrap("shuffle")
