"""NeoMeg's ``megengine`` package.

For now this file is deliberately minimal: it must import without the C++ extension, so it only
exposes :mod:`megengine.data`, loaded lazily on first access. The core (tensors, functional,
module, ...) is added here later by the engineer who owns it.
"""

import importlib


def __getattr__(name):
    if name == "data":
        return importlib.import_module(".data", __name__)
    raise AttributeError(f"module 'megengine' has no attribute {name!r}")
