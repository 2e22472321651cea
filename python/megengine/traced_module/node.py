"""Nodes: the values of a traced graph. A ``TensorNode`` stands for a Tensor, a ``ModuleNode``
for a Module; each is the output of one Expr (``node.expr``) and read by others
(``node.users``)."""

from importlib import import_module

from ..module import Module
from ._graph_item import _GraphItem

__all__ = ["ModuleNode", "Node", "TensorNode"]


def _recorded(attr, doc):
    # a TensorNode fact read and set through its private attribute (that _record fills in)
    return property(
        lambda self: getattr(self, attr), lambda self, v: setattr(self, attr, v), doc=doc
    )


class NameInUseError(ValueError, AssertionError):
    """A name given to a Node or graph is taken in its graph. An AssertionError too, as
    MegEngine 1.13 asserts it (callers catch that), and a ValueError for NeoMeg's own callers."""


class Node(_GraphItem):
    r"""A value in a traced graph: an output of ``expr``, an input of each of ``users``.
    Printed as its name (``{:i}`` prefixes ``%id_``, ``{:p}`` the graph's name).

    Args:
        expr: the Expr that makes it.
        name: its name ("" until the graph names it).
        qualname: its qualified name.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> net = M.Sequential(M.Linear(2, 3), M.ReLU())
        >>> traced = tm.trace_module(net, mge.Tensor([[1.0, 2.0]]))
        >>> graph = traced.graph  # nodes refer to their modules weakly: keep traced
        >>> out = graph.outputs[0]
        >>> out.name, out.qualname, f"{out:p}", type(out.expr).__name__
        ('_1_out', 'Sequential.1.[out]', 'Sequential__1_out', 'CallMethod')
    """

    expr = None
    _total_id = 0
    _format_spec = ""

    def __init__(self, expr, name: str = "", qualname: str = ""):
        self.expr = expr
        self.users = []
        self._take_id(Node)
        self._name = name
        self._qualname = qualname
        self._top_graph = None

    def __repr__(self):
        return self.__format__(Node._format_spec)

    def __format__(self, format_spec):
        if not format_spec:
            format_spec = Node._format_spec
        name = self._name or ""
        if format_spec in ("i", "p", "ip", "pi"):
            if "p" in format_spec:
                name = f"{self.top_graph._name}_{name}"
            if "i" in format_spec:
                name = f"%{self._id}_{name}"
            return name
        return name if name else f"{self._id}"

    @property
    def name(self):
        r"""The node's name, unique in its graph."""
        return self._name

    @name.setter
    def name(self, new_name):
        graph = self.top_graph
        if graph is None:
            # a Node made in an insert_exprs block is in the block's graph until it ends
            from . import tracer

            active = tracer.active_module_tracer()
            graph = active.current_scope() if active is not None else None
        if graph is None:
            raise ValueError("the node is in no graph")
        if graph._namespace.used_names.get(new_name) is not None:
            raise NameInUseError(f"the name {new_name} is already in use")
        graph._namespace.unassociate_name_with_obj(self)
        self._name = graph._namespace.create_unique_name(new_name, self)

    @property
    def qualname(self):
        r"""The node's qualified name: the module path it comes from (``Net.block.conv.[out]``),
        from which ``split(".", 1)[-1]`` gives a ``named_modules`` name."""
        return self._qualname

    @property
    def top_graph(self):
        r"""The graph that holds this node."""
        return self._top_graph() if self._top_graph else None

    @classmethod
    def _set_format_spec(cls, spec):
        old, cls._format_spec = cls._format_spec, spec
        return old


class ModuleNode(Node):
    r"""A node standing for a Module; ``owner`` is the module, ``module_type`` its class
    (``Module`` for a traced submodule).

    Args:
        expr: the Expr that makes it.
        name: its name.
        qualname: its qualified name.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> net = M.Sequential(M.Linear(2, 3), M.ReLU())
        >>> traced = tm.trace_module(net, mge.Tensor([[1.0, 2.0]]))
        >>> graph = traced.graph  # nodes refer to their modules weakly: keep traced
        >>> [(n.name, n.module_type.__name__) for n in graph.get_module_by_type(M.Module)]
        [('self', 'Module'), ('_0', 'Linear'), ('_1', 'ReLU')]
    """

    module_type = Module
    _owner = None

    @property
    def owner(self):
        r"""The Module this node stands for."""
        return self._owner() if self._owner else None

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_owner", None)
        state["module_type"] = (self.module_type.__module__, self.module_type.__qualname__)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        mtype = self.module_type
        if isinstance(mtype, tuple):
            obj = import_module(mtype[0])
            for part in mtype[1].split("."):
                obj = getattr(obj, part)
            self.module_type = obj

    def __deepcopy__(self, memo):
        result = super().__deepcopy__(memo)
        result._owner = None
        return result


class TensorNode(Node):
    r"""A node standing for a Tensor, with the ``shape``, ``dtype`` and ``device`` it had
    when traced; ``value`` is a Tensor bound to it while a graph is edited.

    Args:
        expr: the Expr that makes it.
        name: its name.
        qualname: its qualified name.
        shape: the traced shape.
        dtype: the traced dtype.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> net = M.Sequential(M.Linear(2, 3), M.ReLU())
        >>> traced = tm.trace_module(net, mge.Tensor([[1.0, 2.0]]))
        >>> graph = traced.graph  # nodes refer to their modules weakly: keep traced
        >>> x = graph.inputs[1]
        >>> x.name, x.shape, x.dtype
        ('inp', (1, 2), dtype('float32'))
    """

    _shape = None
    _dtype = None
    _device = None
    _qparams = None
    _value = None

    def __init__(self, expr, name="", qualname="", shape=None, dtype=None):
        super().__init__(expr, name, qualname)
        self._shape = shape
        self._dtype = dtype

    shape = _recorded("_shape", "The shape the tensor had when traced.")
    dtype = _recorded("_dtype", "The dtype the tensor had when traced.")
    device = _recorded("_device", "The device the tensor was on when traced.")
    qparams = _recorded("_qparams", "The quantization parameters of the tensor, if any.")
    value = _recorded("_value", "The Tensor bound to this node (while a graph is edited), or None.")

    def _record(self, tensor):
        self._shape = tuple(tensor.shape)
        self._dtype = tensor.dtype
        self._device = tensor.device
        self._qparams = getattr(tensor, "qparams", None) if hasattr(tensor, "_qparams") else None

    def __getstate__(self):
        state = super().__getstate__()
        state["_value"] = None
        state["_device"] = None if self._device is None else str(self._device)
        return state
