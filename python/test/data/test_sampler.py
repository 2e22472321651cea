from collections import Counter
from itertools import islice

import numpy as np
import pytest

from megengine.data import (
    Infinite,
    MapSampler,
    RandomSampler,
    ReplacementSampler,
    Sampler,
    SequentialSampler,
    StreamSampler,
)


def flat(batches):
    return [i for b in batches for i in b]


def test_sequential_batches_and_len():
    s = SequentialSampler(range(7), batch_size=3)
    assert list(s) == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(s) == 3
    s = SequentialSampler(range(7), batch_size=3, drop_last=True)
    assert list(s) == [[0, 1, 2], [3, 4, 5]]
    assert len(s) == 2


def test_sequential_indices():
    s = SequentialSampler(range(10), batch_size=2, indices=[9, 3, 5])
    assert list(s) == [[9, 3], [5]]
    assert len(s) == 2


def test_random_sampler_is_a_seeded_permutation():
    a = RandomSampler(range(20), batch_size=4, seed=3)
    b = RandomSampler(range(20), batch_size=4, seed=3)
    epoch1 = list(a)
    assert epoch1 == list(b)
    assert sorted(flat(epoch1)) == list(range(20))
    assert flat(epoch1) != list(range(20))
    epoch2 = list(a)
    assert sorted(flat(epoch2)) == list(range(20)) and epoch2 != epoch1
    c = RandomSampler(range(20), batch_size=4, seed=4)
    assert list(c) != epoch1


def test_random_sampler_indices():
    s = RandomSampler(range(100), batch_size=10, indices=[5, 6, 7], seed=0)
    assert sorted(flat(s)) == [5, 6, 7]


@pytest.mark.parametrize("n,world", [(12, 3), (10, 2), (10, 5)])
def test_sharding_is_disjoint_and_complete(n, world):
    shards = [
        flat(RandomSampler(range(n), batch_size=2, world_size=world, rank=r)) for r in range(world)
    ]
    assert all(len(s) == n // world for s in shards)
    union = [i for s in shards for i in s]
    assert sorted(union) == list(range(n))


def test_sharding_pads_to_equal_size():
    shards = [
        list(SequentialSampler(range(5), batch_size=10, world_size=2, rank=r)) for r in (0, 1)
    ]
    assert shards == [[[0, 2, 4]], [[1, 3, 0]]]
    s = SequentialSampler(range(5), batch_size=2, world_size=2, rank=1)
    assert s.num_samples == 3 and len(s) == 2


def test_sharding_with_sequential_sampler_is_strided():
    s = SequentialSampler(range(8), batch_size=2, world_size=4, rank=3)
    assert list(s) == [[3, 7]]


def test_replacement_sampler_weights():
    s = ReplacementSampler(
        range(4), batch_size=1000, num_samples=4000, weights=[0, 1, 0, 3], seed=0
    )
    counts = Counter(flat(s))
    assert set(counts) == {1, 3}
    assert 0.2 < counts[1] / 4000 < 0.3
    assert len(s) == 4


def test_replacement_sampler_uniform_and_errors():
    s = ReplacementSampler(range(5), batch_size=3, num_samples=9, seed=1)
    draws = flat(s)
    assert len(draws) == 9 and set(draws) <= set(range(5))
    with pytest.raises(ValueError, match="one weight per item"):
        ReplacementSampler(range(3), weights=[1, 2])
    with pytest.raises(ValueError, match="non-negative"):
        ReplacementSampler(range(2), weights=[1, -1])


def test_num_samples_limits_map_sampler():
    class FirstK(MapSampler):
        def sample(self):
            return list(range(self.num_samples))

    assert list(FirstK(range(100), batch_size=2, num_samples=4)) == [[0, 1], [2, 3]]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch_size": 0},
        {"batch_size": 1.5},
        {"batch_size": True},
        {"num_samples": 0},
        {"world_size": 2, "rank": 2},
        {"rank": -1},
    ],
)
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        SequentialSampler(range(4), **kwargs) if "num_samples" not in kwargs else MapSampler(
            range(4), **kwargs
        )


def test_drop_last_must_be_bool():
    with pytest.raises(TypeError):
        SequentialSampler(range(4), drop_last=1)


def test_infinite_repeats_epochs():
    inf = Infinite(RandomSampler(range(5), batch_size=2, seed=0))
    batches = list(islice(inf, 9))
    assert len(batches) == 9
    assert sorted(flat(batches[:3])) == list(range(5))
    assert sorted(flat(batches[3:6])) == list(range(5))
    assert len(inf) == np.iinfo(np.int64).max
    with pytest.raises(TypeError):
        Infinite(StreamSampler(2))
    with pytest.raises(NotImplementedError, match="not supported in Infinite"):
        inf.sample()


def test_stream_sampler():
    s = StreamSampler(batch_size=4)
    it = iter(s)
    # MegEngine's: consecutive indices from sample(), batch_size at a time
    assert next(it) == [0, 1, 2, 3] and next(it) == [4, 5, 6, 7]
    assert next(iter(s)) == [0, 1, 2, 3]  # each iteration starts a new stream

    class Evens(StreamSampler):
        def sample(self):
            return iter(range(0, 10, 2))

    assert list(Evens(batch_size=2)) == [[0, 2], [4, 6]]  # the incomplete last batch is dropped
    with pytest.raises(TypeError):
        len(s)
    with pytest.raises(ValueError):
        StreamSampler(0)
    assert isinstance(s, Sampler)
