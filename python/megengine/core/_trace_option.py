"""MegEngine's switch for shapes as values (``megengine.core._trace_option``), kept for code
written against it (MegEngine's own tests import it).

In MegEngine the switch makes ``Tensor.shape`` a Tensor; ``trace(symbolic_shape=True)`` turns it
on while it traces. Here eager shapes are always tuples, and the switch is what
``trace(symbolic_shape=...)`` sets while a trace runs the function: whether the shapes the
function reads follow the inputs (``megengine.core.tensor.shape_dim``).
"""

from .tensor import shape_dim as _shape_dim


def use_symbolic_shape() -> bool:
    """Whether the shapes read now follow the inputs: True only inside a trace that records or
    checks with ``symbolic_shape=True``.

    Returns:
        bool

    Examples:
        >>> from megengine.core._trace_option import use_symbolic_shape
        >>> use_symbolic_shape()  # eager shapes are tuples of ints
        False
    """
    return _shape_dim.follows_shapes()


def set_symbolic_shape(option: bool) -> bool:
    """Sets whether the shapes read now follow the inputs; returns the previous setting.

    False inside a trace with ``symbolic_shape=True`` makes the shapes read for the rest of that
    call plain ints (constants of the graph), as ``symbolic_shape=False`` would; outside a trace it
    is already so. True is only possible inside such a trace, where it already holds: eager
    shapes cannot be Tensors here.

    Args:
        option: the new setting.

    Returns:
        the previous setting.

    Examples:
        >>> from megengine.core._trace_option import set_symbolic_shape
        >>> set_symbolic_shape(False)
        False
    """
    previous = use_symbolic_shape()
    if option and not previous:
        raise NotImplementedError(
            "set_symbolic_shape(True): shapes read outside trace(symbolic_shape=True) are "
            "tuples of ints in NeoMeg; trace with symbolic_shape=True for shapes that follow "
            "the inputs"
        )
    if not option and previous:
        _shape_dim._state.follow = False
    return previous
