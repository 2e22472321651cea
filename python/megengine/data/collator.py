"""Collator: merges a list of samples into one batch of NumPy arrays."""

import collections.abc
import numbers

import numpy as np


class Collator:
    r"""Stacks samples into batch arrays.

    Samples may be arrays, numbers, strings, or (nested) tuples, lists and dicts of them. Arrays
    are stacked along a new first axis; numbers become a 1-d array; strings stay a list;
    tuples and lists are collated field by field into a list (a namedtuple keeps its type), dicts
    key by key.

    Examples:
        >>> import numpy as np
        >>> from megengine.data import Collator
        >>> batch = Collator().apply([(np.zeros(2), 1), (np.ones(2), 0)])
        >>> batch[0].shape, batch[1].tolist()
        ((2, 2), [1, 0])
    """

    def apply(self, inputs):
        r"""Collates a batch.

        Args:
            inputs: a list of samples of the same structure.

        Returns:
            The batch: arrays with the batch on axis 0, in the samples' structure.
        """
        if not len(inputs):
            raise ValueError("Collator.apply: cannot collate an empty batch")
        elem = inputs[0]
        if isinstance(elem, np.ndarray):
            shapes = {e.shape for e in inputs}
            if len(shapes) > 1:
                raise ValueError(
                    f"Collator: cannot stack arrays of different shapes {sorted(shapes)}"
                )
            return np.stack(inputs)
        if isinstance(elem, (np.generic, numbers.Number)):
            return np.array(inputs)
        if isinstance(elem, (str, bytes)):
            return list(inputs)
        if isinstance(elem, collections.abc.Mapping):
            return {key: self.apply([d[key] for d in inputs]) for key in elem}
        if isinstance(elem, tuple) and hasattr(elem, "_fields"):
            return type(elem)(*(self.apply(list(f)) for f in zip(*inputs)))
        if isinstance(elem, collections.abc.Sequence):
            if any(len(e) != len(elem) for e in inputs):
                raise ValueError("Collator: samples have different numbers of fields")
            # A list for tuple samples too, as MegEngine's collator returns.
            return [self.apply(list(f)) for f in zip(*inputs)]
        raise TypeError(f"Collator: cannot collate samples of type {type(elem).__name__}")
