from collections import namedtuple

import numpy as np
import pytest

from megengine.data import Collator


def test_stacks_arrays_and_numbers():
    samples = [(np.full((2, 2), i, np.float32), np.int32(i), float(i)) for i in range(3)]
    images, labels, floats = Collator().apply(samples)
    assert images.shape == (3, 2, 2) and images.dtype == np.float32
    assert images[2, 1, 1] == 2
    assert labels.dtype == np.int32 and labels.tolist() == [0, 1, 2]
    assert floats.dtype == np.float64 and floats.tolist() == [0.0, 1.0, 2.0]


def test_nested_structures():
    Pair = namedtuple("Pair", "a b")
    samples = [{"x": Pair(np.zeros(2), 1), "name": "p"}, {"x": Pair(np.ones(2), 2), "name": "q"}]
    batch = Collator().apply(samples)
    assert isinstance(batch["x"], Pair)
    assert batch["x"].a.shape == (2, 2) and batch["x"].b.tolist() == [1, 2]
    assert batch["name"] == ["p", "q"]
    lists = Collator().apply([[np.zeros(1), 3], [np.zeros(1), 4]])
    assert isinstance(lists, list) and lists[1].tolist() == [3, 4]


def test_errors():
    with pytest.raises(ValueError, match="different shapes"):
        Collator().apply([np.zeros(2), np.zeros(3)])
    with pytest.raises(ValueError, match="empty"):
        Collator().apply([])
    with pytest.raises(TypeError):
        Collator().apply([object(), object()])
    with pytest.raises(ValueError, match="numbers of fields"):
        Collator().apply([(1, 2), (1,)])
