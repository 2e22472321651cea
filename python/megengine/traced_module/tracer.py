"""The state of a trace in progress: which graph records (a stack of scopes), which node each
traced Tensor or module stands for, and whether calls record now (off inside a recorded call).
The patches that make calls record are in ``patcher.py``."""

import contextlib
from typing import ClassVar

from ..module import Module
from ..tensor import Tensor

_active = None  # the ModuleTracer of the trace in progress
_tracing = False  # recording on (off inside a recorded call, which runs eagerly)


def active_module_tracer():
    """The ModuleTracer of the trace in progress, or None."""
    return _active


def set_active_module_tracer(tracer):
    global _active
    _active = tracer


def is_tracing_module():
    """Whether calls are being recorded now."""
    return _tracing


def set_module_tracing(on=True):
    global _tracing
    _tracing = on


@contextlib.contextmanager
def exclude_from_trace():
    """Runs the block eagerly, unrecorded (the inside of a recorded call)."""
    global _tracing
    was = _tracing
    _tracing = False
    try:
        yield
    finally:
        _tracing = was


class ModuleTracer:
    """One trace: the stack of graphs being recorded, the node bound to each traced object
    and the patches in force."""

    _builtin_types: ClassVar[set] = set()  # module classes recorded as one call (leaves)
    _user_functions: ClassVar[list] = []  # (globals dict, name, function) from ``wrap``

    def __init__(self, wrap_fn, record_ops=True):
        self.scopes = []
        self.bindings = {}  # id(obj) -> (obj, node)
        self.wrap_fn = wrap_fn
        from .patcher import Patcher

        self.patcher = Patcher(wrap_fn, record_ops)

    @classmethod
    def register_as_builtin(cls, mod_cls):
        if not (isinstance(mod_cls, type) and issubclass(mod_cls, Module)):
            raise TypeError(f"register_as_builtin takes a Module class, got {mod_cls!r}")
        cls._builtin_types.add(mod_cls)
        return mod_cls

    @classmethod
    def is_builtin(cls, mod):
        return type(mod) in cls._builtin_types

    def push_scope(self, graph):
        self.scopes.append(graph)

    def pop_scope(self):
        self.scopes.pop()

    def current_scope(self):
        return self.scopes[-1] if self.scopes else None

    def top_scope(self):
        return self.scopes[0] if self.scopes else None

    # ------------------------------------------------------------- bindings
    def get_node(self, obj, *default):
        found = self.bindings.get(id(obj))
        if found is None:
            if default:
                return default[0]
            raise KeyError(f"{type(obj).__name__} object is not traced")
        return found[1]

    def bind(self, obj, node):
        from .node import TensorNode

        if isinstance(node, TensorNode) and isinstance(obj, Tensor):
            node._record(obj)
        self.bindings[id(obj)] = (obj, node)
        record = getattr(obj, "_record_wrapped_nodes", None)
        if record is not None:
            record(node)

    def unbind(self, obj):
        self.bindings.pop(id(obj), None)


def get_node(obj, *default):
    """The node ``obj`` stands for in the trace in progress."""
    if _active is None:
        if default:
            return default[0]
        raise KeyError("no trace in progress")
    return _active.get_node(obj, *default)


def bind(obj, node):
    _active.bind(obj, node)
