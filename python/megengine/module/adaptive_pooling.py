"""``megengine.module.adaptive_pooling``: MegEngine's module path of the adaptive pooling layers
(defined in ``pooling.py`` beside the other pooling layers)."""

from .pooling import AdaptiveAvgPool2d, AdaptiveMaxPool2d

__all__ = ["AdaptiveAvgPool2d", "AdaptiveMaxPool2d"]
