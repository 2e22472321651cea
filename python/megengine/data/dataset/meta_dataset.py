"""Abstract dataset types: map-style :class:`Dataset`, iterable :class:`StreamDataset`, and the
concrete :class:`ArrayDataset` and :class:`ConcatDataset`."""

import bisect
from abc import ABC, abstractmethod

import numpy as np


class Dataset(ABC):
    r"""An abstract map-style dataset: items are read by integer index.

    Subclasses implement ``__getitem__`` and ``__len__``. A :class:`~megengine.data.DataLoader`
    reads a ``Dataset`` through a map sampler (e.g. :class:`~megengine.data.SequentialSampler`).

    Examples:
        >>> from megengine.data.dataset import Dataset
        >>> class Squares(Dataset):
        ...     def __getitem__(self, index):
        ...         return (index * index,)
        ...     def __len__(self):
        ...         return 4
        >>> Squares()[3]
        (9,)
    """

    def __init__(self):
        # MegEngine declares an abstract ``__init__(self)``; a concrete one keeps its
        # signature and still lets a subclass without ``__init__`` be built.
        pass

    @abstractmethod
    def __getitem__(self, index):
        pass

    @abstractmethod
    def __len__(self):
        pass

    def __add__(self, other):
        return ConcatDataset([self, other])


class StreamDataset(Dataset):
    r"""An abstract iterable dataset: items come out of ``__iter__`` one by one.

    Use it for data that cannot be indexed (a socket, a generator, a file read sequentially).
    A :class:`~megengine.data.DataLoader` reads it through a
    :class:`~megengine.data.StreamSampler`.

    Examples:
        >>> from megengine.data.dataset import StreamDataset
        >>> class Counter(StreamDataset):
        ...     def __iter__(self):
        ...         for i in range(3):
        ...             yield (i,)
        >>> list(Counter())
        [(0,), (1,), (2,)]
    """

    @abstractmethod
    def __iter__(self):
        pass

    def __getitem__(self, idx):
        raise TypeError(f"{type(self).__name__} is a StreamDataset and cannot be indexed")

    def __len__(self):
        raise TypeError(f"{type(self).__name__} is a StreamDataset and has no length")


def _gather_columns(arrays, indices):
    # The batch that the default Collator makes of the items ``tuple(a[index] for a in arrays)``
    # for index in indices, gathered with one NumPy fancy index per array instead of item by
    # item. None where that might differ: arrays that are not plain numeric NumPy arrays,
    # indices that are not integers, an empty batch.
    if not len(indices):
        return None
    idx = np.asarray(indices)
    if idx.ndim != 1 or idx.dtype.kind not in "iu":
        return None
    for a in arrays:
        # Items of 1-d arrays are NumPy scalars, which the Collator turns into an array of
        # the same dtype for these kinds (bool, integers, floats, complex).
        if type(a) is not np.ndarray or a.ndim == 0 or a.dtype.kind not in "biufc":
            return None
    return tuple(np.ascontiguousarray(a[idx]) for a in arrays)


class ArrayDataset(Dataset):
    r"""A dataset over one or more arrays of equal first dimension.

    Item ``i`` is the tuple ``(arrays[0][i], arrays[1][i], ...)``.

    Args:
        arrays: arrays (or any sequences supporting ``len`` and indexing) whose first
            dimensions agree.

    Returns:
        A map-style dataset of ``len(arrays[0])`` items.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.dataset import ArrayDataset
        >>> data = np.arange(6).reshape(3, 2)
        >>> label = np.array([0, 1, 0])
        >>> ds = ArrayDataset(data, label)
        >>> len(ds), ds[1][0].tolist(), int(ds[1][1])
        (3, [2, 3], 1)
    """

    def __init__(self, *arrays):
        super().__init__()
        if not arrays:
            raise ValueError("ArrayDataset needs at least one array")
        lengths = [len(a) for a in arrays]
        if any(n != lengths[0] for n in lengths):
            raise ValueError(
                "ArrayDataset: the first dimensions of the arrays must agree, got lengths "
                + ", ".join(str(n) for n in lengths)
            )
        self.arrays = arrays

    def __getitem__(self, index: int) -> tuple:
        return tuple(array[index] for array in self.arrays)

    def _get_batch(self, indices):
        # The DataLoader's shortcut: the collated items at indices, or None (then it reads the
        # items one by one). Only while __getitem__ is this class's.
        if type(self).__getitem__ is not ArrayDataset.__getitem__:
            return None
        return _gather_columns(self.arrays, indices)

    def __len__(self) -> int:
        return len(self.arrays[0])


class ConcatDataset(Dataset):
    r"""The concatenation of several map-style datasets.

    Args:
        datasets: a list of :class:`Dataset`; item ``i`` is read from the dataset that holds it
            after the previous ones.

    Returns:
        A map-style dataset whose length is the sum of the lengths.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.dataset import ArrayDataset, ConcatDataset
        >>> a = ArrayDataset(np.array([1, 2]))
        >>> b = ArrayDataset(np.array([3]))
        >>> ds = ConcatDataset([a, b])
        >>> len(ds), int(ds[2][0])
        (3, 3)
    """

    def __init__(self, datasets):
        super().__init__()
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        for d in self.datasets:
            if isinstance(d, StreamDataset):
                raise TypeError("ConcatDataset does not accept a StreamDataset")
        self.cumulative_sizes = np.cumsum([len(d) for d in self.datasets]).tolist()

    def __getitem__(self, index: int):
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"index {index} out of range for ConcatDataset of length {n}")
        d = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[d - 1] if d > 0 else 0
        return self.datasets[d][index - start]

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]
