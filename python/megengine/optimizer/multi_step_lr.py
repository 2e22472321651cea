"""``megengine.optimizer.multi_step_lr``: MegEngine's module path of :class:`MultiStepLR` (defined in ``lr_scheduler.py``)."""

from .lr_scheduler import MultiStepLR

__all__ = ["MultiStepLR"]
