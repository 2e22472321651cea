"""``megengine.Tensor`` and ``megengine.Parameter``.

``Tensor`` is the C++ extension's tensor class (``megengine/core/_imperative_rt``, built from
``python/src/tensor.cpp``) with the array methods of ``core/tensor/array_method.py`` installed on
it: operators and methods build ops from ``megengine.core.ops.builtin`` and run them with
``apply``, which crosses into C++ (``imperative/src/apply.cpp``) once.
"""

from .core import _imperative_rt as _rt
from .core.comp_node import CompNode as _CompNode
from .core.tensor import array_method as _array_method

Tensor = _rt.Tensor
Tensor.__module__ = "megengine"
Tensor.__doc__ = """A multi-dimensional array on a device.

Args:
    data: array-like values (or another Tensor); float64 becomes float32 and int64 int32.
    dtype: dtype to convert to (a numpy dtype or a name such as ``"float16"``).
    device: where the tensor lives (``"cpu0"``, ``"xpux"``); the default device when None.
    is_const: accepted for MegEngine's signature; eager tensors need no constant marking.
    no_cache: accepted for MegEngine's signature; NeoMeg keeps no per-tensor value cache.
    name: a name for the tensor (its ``name`` attribute, None by default).
    format: the memory format; only ``"default"`` exists.

Examples:
    >>> import megengine as mge
    >>> x = mge.Tensor([[1, 2], [3, 4]], dtype="float32")
    >>> (x * 2 + 1).numpy().tolist()
    [[3.0, 5.0], [7.0, 9.0]]
"""
_array_method.install(Tensor)
_rt_init = Tensor.__init__
Tensor.name = None  # instances set their own


def _init(
    self,
    data=None,
    dtype=None,
    device=None,
    is_const=False,
    no_cache=False,
    name=None,
    format="default",
):
    # The extension's constructor takes the data arguments; MegEngine's extra keywords are
    # handled here so that tensors made by ops (which skip __init__) pay nothing for them.
    if format != "default":
        raise ValueError(f"Tensor: format must be 'default', got {format!r}")
    _rt_init(self, data, dtype, device)
    if name is not None:
        self.name = name


Tensor.__init__ = _init

_rt_device = Tensor.device.fget  # the extension's getter: the canonical name ("cpu0")
_comp_nodes = {}  # that name -> its CompNode, built once


def _device(self):
    name = _rt_device(self)
    node = _comp_nodes.get(name)
    if node is None:
        node = _comp_nodes[name] = _CompNode(name)
    return node


Tensor.device = property(
    _device,
    doc="""The comp node the tensor lives on: a :class:`~megengine.core.comp_node.CompNode`,
    which is its canonical name (``"cpu0:0"``) with MegEngine's ``logical_name``,
    ``physical_name`` and ``physical_locator``, equal to any name of the same device.""",
)


def _flatten(self, start_axis=0, end_axis=-1):
    """The axes ``start_axis..end_axis`` (both included) merged into one; all of them by
    default, giving a 1-D tensor (as ``F.flatten``)."""
    return _array_method.flatten(self, start_axis, end_axis)


Tensor.flatten = _flatten

tensor = Tensor


class Parameter(Tensor):
    """A Tensor that a module learns; GradManager attaches Parameters, optimizers update them.

    Args:
        data: initial values, as for :class:`Tensor`.
        dtype: dtype to convert to.
        device: where the parameter lives.
        is_const: as for :class:`Tensor`.
        no_cache: as for :class:`Tensor`.
        name: a name for the parameter.
        format: the memory format; only ``"default"`` exists.

    Examples:
        >>> import megengine as mge
        >>> w = mge.Parameter([1.0, 2.0])
        >>> isinstance(w, mge.Tensor), w.shape
        (True, (2,))
    """

    def __init__(
        self,
        data,
        dtype=None,
        device=None,
        is_const=False,
        no_cache=False,
        name=None,
        format="default",
    ):
        super().__init__(data, dtype, device, is_const, no_cache, name, format)


_rt._install_operator_slots(Parameter)  # a subclass inherits the Python methods, not the slots
