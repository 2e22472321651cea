"""``megengine.optimizer.adadelta``: MegEngine's module path of :class:`Adadelta` (defined in ``adagrad.py``)."""

from .adagrad import Adadelta

__all__ = ["Adadelta"]
