"""Transforms applied to samples by the DataLoader."""

from .meta_transform import PseudoTransform, Transform
from .vision import *
from .vision import __all__ as _vision_all

__all__ = ["PseudoTransform", "Transform"] + list(_vision_all)
