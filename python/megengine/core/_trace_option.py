"""MegEngine's switch for what ``Tensor.shape`` returns outside a trace.

MegEngine can make ``shape`` a Tensor everywhere (``set_symbolic_shape(True)``, or the
``MEGENGINE_USE_SYMBOLIC_SHAPE`` environment variable); by default, and always here, it is a
tuple of ints. A trace with ``symbolic_shape=True`` (:class:`megengine.jit.trace`) records the
shapes it reads as graph values without this switch.
"""

__all__ = ["set_symbolic_shape", "use_symbolic_shape"]


def use_symbolic_shape() -> bool:
    """Whether ``Tensor.shape`` returns a Tensor instead of a tuple: always False here.

    Returns:
        False

    Examples:
        >>> from megengine.core._trace_option import use_symbolic_shape
        >>> use_symbolic_shape()
        False
    """
    return False


def set_symbolic_shape(option: bool) -> bool:
    """Sets whether ``Tensor.shape`` returns a Tensor; only False (the tuple) is supported.

    Args:
        option: False. True raises NotImplementedError: shapes outside a trace are tuples
            here (a trace's ``symbolic_shape=True`` records them as graph values).

    Returns:
        the previous setting (False).

    Examples:
        >>> from megengine.core._trace_option import set_symbolic_shape
        >>> set_symbolic_shape(False)
        False
    """
    if option:
        raise NotImplementedError(
            "set_symbolic_shape(True): Tensor.shape is always a tuple outside a trace here; "
            "trace with symbolic_shape=True to record shapes as graph values"
        )
    return False
