"""Vision transforms."""

from .transform import *
from .transform import __all__ as __all__
