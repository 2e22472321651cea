"""Abstract transform types."""

from abc import ABC, abstractmethod
from collections.abc import Sequence


class Transform(ABC):
    r"""An abstract transform of one sample (:meth:`apply`) or a list of samples
    (:meth:`apply_batch`).

    Examples:
        >>> from megengine.data.transform import Transform
        >>> class AddOne(Transform):
        ...     def apply(self, input):
        ...         return input + 1
        >>> AddOne().apply_batch([1, 2])
        (2, 3)
    """

    def apply_batch(self, inputs: Sequence[tuple]):
        r"""Applies the transform to every sample of a batch.

        Args:
            inputs: the samples.

        Returns:
            A tuple of the transformed samples.
        """
        return tuple(self.apply(input) for input in inputs)

    @abstractmethod
    def apply(self, input: tuple):
        r"""Applies the transform to one sample."""

    def _apply_columns(self, columns):
        # The DataLoader's shortcut: given the default-collated batch of untransformed samples
        # (a tuple of arrays, one per field), returns the default-collated batch of the
        # transformed samples, identical to transforming them one by one; or None when this
        # transform cannot (then the DataLoader transforms sample by sample).
        return None

    def __repr__(self):
        return type(self).__name__


class PseudoTransform(Transform):
    r"""The identity transform: samples pass unchanged.

    Examples:
        >>> from megengine.data.transform import PseudoTransform
        >>> PseudoTransform().apply((1, 2))
        (1, 2)
    """

    def apply(self, input: tuple):
        return input

    def _apply_columns(self, columns):
        return columns if type(self) is PseudoTransform else None
