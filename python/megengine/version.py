"""Version numbers: the MegEngine API that NeoMeg follows, and NeoMeg's own.

``__version__`` is the MegEngine release whose Python API this package reproduces, a plain
``"1.13.0"``: scripts print it, compare it (``version.parse(mge.__version__) >= ...``, tuples
of ``int`` parts) and pick code paths by it, and all of that must take the MegEngine 1.13 path.
NeoMeg's own release is ``__neomeg_version__`` (the version in ``pyproject.toml``).
"""

__version__ = "1.13.0"
__neomeg_version__ = "0.1.0"
