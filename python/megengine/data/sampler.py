"""Samplers: which dataset items go into each batch, and on which rank."""

import collections.abc
import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Iterator

import numpy as np


def _check_positive_int(name, value, allow_none=False):
    if value is None and allow_none:
        return
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} should be a positive integer, but got {name}={value!r}")


class Sampler(ABC):
    r"""An abstract sampler: iterating over it yields the indices of one batch at a time.

    Examples:
        >>> from megengine.data import Sampler
        >>> class Pairs(Sampler):
        ...     def __iter__(self):
        ...         return iter([[0, 1], [2, 3]])
        ...     def __len__(self):
        ...         return 2
        >>> list(Pairs())
        [[0, 1], [2, 3]]
    """

    def __init__(self):
        # MegEngine declares an abstract ``__init__(self)``; see Dataset.__init__.
        pass

    @abstractmethod
    def __iter__(self):
        pass

    @abstractmethod
    def __len__(self):
        pass


class MapSampler(Sampler):
    r"""Base sampler of a map-style dataset, with batching and sharding across ranks.

    Subclasses implement :meth:`sample`. With ``world_size > 1`` the sample indices are padded
    (wrapping around) to a multiple of ``world_size`` and rank ``r`` takes every
    ``world_size``-th index from ``r``: the ranks see disjoint shards of equal size, disjoint
    exactly when ``world_size`` divides the number of samples (otherwise the padding repeats
    a few items, as in MegEngine).

    Args:
        dataset: the dataset to sample from.
        batch_size: number of indices per batch.
        drop_last: drop the last batch when it is smaller than ``batch_size``.
        num_samples: total number of samples drawn over all ranks; ``len(dataset)`` when
            ``None``.
        world_size: number of ranks; when ``None``, the process group's size
            (``distributed.get_world_size()``), 1 outside a process group.
        rank: this process's rank in ``[0, world_size)``; when ``None``, the process group's
            rank (``distributed.get_rank()``), 0 outside a process group.
        seed: seed of the sampler's random generator; 0 when ``None`` and ``world_size > 1``,
            so that every rank draws the same permutation.

    Returns:
        An iterable of batches (lists of indices).

    Examples:
        >>> from megengine.data import SequentialSampler
        >>> list(SequentialSampler(range(5), batch_size=2, world_size=2, rank=1))
        [[1, 3], [0]]
    """

    def __init__(
        self,
        dataset,
        batch_size=1,
        drop_last=False,
        num_samples=None,
        world_size=None,
        rank=None,
        seed=None,
    ):
        _check_positive_int("batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise TypeError(f"drop_last should be a boolean value, but got drop_last={drop_last!r}")
        _check_positive_int("num_samples", num_samples, allow_none=True)
        if world_size is None or rank is None:
            from .. import distributed as dist  # at call time: distributed imports more layers

            grouped = dist.is_distributed()
            if world_size is None:
                world_size = dist.get_world_size() if grouped else 1
            if rank is None:
                rank = dist.get_rank() if grouped else 0
        _check_positive_int("world_size", world_size)
        if not isinstance(rank, (int, np.integer)) or not 0 <= rank < world_size:
            raise ValueError(f"rank should be in [0, world_size={world_size}), but got {rank!r}")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.drop_last = drop_last
        self.world_size = int(world_size)
        self.rank = int(rank)
        total = len(dataset) if num_samples is None else num_samples
        self.num_samples = math.ceil(total / self.world_size)
        if seed is None and self.world_size > 1:
            seed = 0
        self.seed = seed
        self.rng = np.random.RandomState(seed)

    def sample(self) -> list[int]:
        r"""Returns the sample indices of one epoch, before sharding and batching."""
        raise NotImplementedError

    def scatter(self, indices) -> list[int]:
        r"""Returns this rank's shard of ``indices``.

        Args:
            indices: the indices of all ranks.

        Returns:
            ``num_samples`` indices: every ``world_size``-th of the padded list, from ``rank``.
        """
        total = self.num_samples * self.world_size
        indices = list(indices)
        if not indices:
            return []
        while len(indices) < total:
            indices += indices[: total - len(indices)]
        return indices[self.rank : total : self.world_size]

    def batch(self) -> Iterator[list[int]]:
        r"""Returns an iterator over the batches of one epoch."""
        indices = list(self.sample())
        if self.world_size > 1:
            indices = self.scatter(indices)
        n, b = len(indices), self.batch_size
        batches = [indices[i : i + b] for i in range(0, n, b)]
        if self.drop_last and batches and len(batches[-1]) < b:
            batches.pop()
        return iter(batches)

    def __iter__(self):
        return self.batch()

    def __len__(self) -> int:
        if self.drop_last:
            return self.num_samples // self.batch_size
        return math.ceil(self.num_samples / self.batch_size)


def _check_indices(indices):
    if indices is not None and not isinstance(indices, (collections.abc.Sequence, np.ndarray)):
        raise ValueError(f"indices should be None or a sequence, but got indices={indices!r}")


class SequentialSampler(MapSampler):
    r"""Samples the items in order.

    Args:
        dataset: the dataset to sample from.
        batch_size: number of indices per batch.
        drop_last: drop the last incomplete batch.
        indices: the indices to sample, in order; ``range(len(dataset))`` when ``None``.
        world_size: number of ranks; 1 when ``None``.
        rank: this process's rank; 0 when ``None``.

    Returns:
        An iterable of batches (lists of indices).

    Examples:
        >>> from megengine.data import SequentialSampler
        >>> list(SequentialSampler(range(5), batch_size=2, drop_last=True))
        [[0, 1], [2, 3]]
    """

    def __init__(
        self, dataset, batch_size=1, drop_last=False, indices=None, world_size=None, rank=None
    ):
        _check_indices(indices)
        super().__init__(
            dataset,
            batch_size,
            drop_last,
            None if indices is None else len(indices),
            world_size,
            rank,
        )
        self.indices = indices

    def sample(self) -> list[int]:
        if self.indices is None:
            return list(range(len(self.dataset)))
        return [int(i) for i in self.indices]


class RandomSampler(MapSampler):
    r"""Samples the items in a random order, without replacement; a new order each epoch.

    Args:
        dataset: the dataset to sample from.
        batch_size: number of indices per batch.
        drop_last: drop the last incomplete batch.
        indices: the indices to permute; ``range(len(dataset))`` when ``None``.
        world_size: number of ranks; 1 when ``None``.
        rank: this process's rank; 0 when ``None``.
        seed: seed of the permutations; 0 when ``None`` and ``world_size > 1``.

    Returns:
        An iterable of batches (lists of indices).

    Examples:
        >>> from megengine.data import RandomSampler
        >>> batches = list(RandomSampler(range(6), batch_size=3, seed=1))
        >>> sorted(sum(batches, []))
        [0, 1, 2, 3, 4, 5]
    """

    def __init__(
        self,
        dataset,
        batch_size=1,
        drop_last=False,
        indices=None,
        world_size=None,
        rank=None,
        seed=None,
    ):
        _check_indices(indices)
        super().__init__(
            dataset,
            batch_size,
            drop_last,
            None if indices is None else len(indices),
            world_size,
            rank,
            seed,
        )
        self.indices = indices

    def sample(self) -> list[int]:
        if self.indices is None:
            return self.rng.permutation(len(self.dataset)).tolist()
        return self.rng.permutation(np.asarray(self.indices)).tolist()


class ReplacementSampler(MapSampler):
    r"""Samples items at random with replacement, optionally weighted.

    Args:
        dataset: the dataset to sample from.
        batch_size: number of indices per batch.
        drop_last: drop the last incomplete batch.
        num_samples: number of draws per epoch over all ranks; ``len(dataset)`` when ``None``.
        weights: one non-negative weight per item (need not sum to 1); uniform when ``None``.
        world_size: number of ranks; 1 when ``None``.
        rank: this process's rank; 0 when ``None``.
        seed: seed of the draws; 0 when ``None`` and ``world_size > 1``.

    Returns:
        An iterable of batches (lists of indices).

    Examples:
        >>> from megengine.data import ReplacementSampler
        >>> s = ReplacementSampler(range(3), batch_size=4, weights=[0, 0, 1], seed=0)
        >>> list(s)
        [[2, 2, 2]]
    """

    def __init__(
        self,
        dataset,
        batch_size=1,
        drop_last=False,
        num_samples=None,
        weights=None,
        world_size=None,
        rank=None,
        seed=None,
    ):
        super().__init__(dataset, batch_size, drop_last, num_samples, world_size, rank, seed)
        self._total = len(dataset) if num_samples is None else num_samples
        if weights is not None:
            w = np.asarray(weights, dtype=np.float64)
            if w.shape != (len(dataset),):
                raise ValueError(
                    f"weights should hold one weight per item: len(dataset)={len(dataset)}, "
                    f"but got {w.size} weights"
                )
            if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
                raise ValueError("weights should be finite, non-negative and not all zero")
            self.weights = w / w.sum()
        else:
            self.weights = None

    def sample(self) -> list[int]:
        n = len(self.dataset)
        return self.rng.choice(n, size=self._total, replace=True, p=self.weights).tolist()


class StreamSampler(Sampler):
    r"""Sampler of a :class:`~megengine.data.dataset.StreamDataset`: each step asks for the
    next ``batch_size`` items of the stream.

    Args:
        batch_size: number of items per batch.

    Returns:
        An endless iterable of batches: lists of ``batch_size`` consecutive indices from
        :meth:`sample` (the loader only counts them; a subclass may override ``sample``, as in
        MegEngine).

    Examples:
        >>> from itertools import islice
        >>> from megengine.data import StreamSampler
        >>> list(islice(StreamSampler(batch_size=3), 2))
        [[0, 1, 2], [3, 4, 5]]
    """

    def __init__(self, batch_size=1):
        _check_positive_int("batch_size", batch_size)
        self.batch_size = int(batch_size)

    def __iter__(self):
        return self.batch()

    def batch(self):
        """The batches: :meth:`sample`'s indices, ``batch_size`` at a time.

        Examples:
            >>> from megengine.data import StreamSampler
            >>> next(StreamSampler(batch_size=2).batch())
            [0, 1]
        """
        batch = []
        for index in self.sample():
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []

    def sample(self):
        """The endless index stream 0, 1, 2, ...

        Examples:
            >>> from itertools import islice
            >>> from megengine.data import StreamSampler
            >>> list(islice(StreamSampler().sample(), 3))
            [0, 1, 2]
        """
        return itertools.count(0)

    def __len__(self):
        raise TypeError("a StreamSampler is endless and has no length")


class Infinite(Sampler):
    r"""Repeats a map sampler without end: a new epoch starts when one ends.

    Args:
        sampler: the :class:`MapSampler` to repeat.

    Returns:
        An endless iterable of batches.

    Examples:
        >>> from itertools import islice
        >>> from megengine.data import Infinite, SequentialSampler
        >>> list(islice(Infinite(SequentialSampler(range(3), batch_size=2)), 4))
        [[0, 1], [2], [0, 1], [2]]
    """

    def sample(self):
        """Not supported, as in MegEngine: an Infinite sampler only repeats batches.

        Examples:
            >>> from megengine.data import Infinite, SequentialSampler
            >>> try:
            ...     Infinite(SequentialSampler(range(3))).sample()
            ... except NotImplementedError as e:
            ...     print(e)
            sample method not supported in Infinite
        """
        raise NotImplementedError("sample method not supported in Infinite")

    def __init__(self, sampler):
        if not isinstance(sampler, MapSampler):
            raise TypeError(f"Infinite wraps a MapSampler, got {type(sampler).__name__}")
        if len(sampler) == 0:
            raise ValueError("Infinite cannot repeat a sampler that yields no batch")
        self.sampler = sampler
        self.batch_size = sampler.batch_size
        self.sampler_iter = iter(sampler)

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self.sampler_iter)
        except StopIteration:
            self.sampler_iter = iter(self.sampler)
            return next(self.sampler_iter)

    def __len__(self):
        return np.iinfo(np.int64).max
