"""``F.distributed``: the collectives of :mod:`megengine.distributed.functional`."""

from ..distributed.functional import *
from ..distributed.functional import __all__  # noqa: F401
