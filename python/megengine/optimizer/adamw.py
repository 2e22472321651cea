"""``megengine.optimizer.adamw``: MegEngine's module path of :class:`AdamW` (defined in ``adam.py``)."""

from .adam import AdamW

__all__ = ["AdamW"]
