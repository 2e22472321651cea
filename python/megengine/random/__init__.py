"""``megengine.random``: random draws on the Philox generator operators, from a global
generator that ``seed`` resets, or from an :class:`RNG` object of one's own."""

from .rng import (
    RNG,
    beta,
    exponential,
    gamma,
    multinomial,
    normal,
    permutation,
    poisson,
    seed,
    shuffle,
    uniform,
)

__all__ = [
    "RNG",
    "beta",
    "exponential",
    "gamma",
    "multinomial",
    "normal",
    "permutation",
    "poisson",
    "seed",
    "shuffle",
    "uniform",
]
