"""The patches that make ``megengine.functional``, ``apply``, Tensor's constructor, methods
and operators record themselves while a trace runs, and put everything back after: the C
operator slots of Tensor and its subclasses included (``_install_operator_slots``), so eager
code pays nothing once a trace ends."""

import collections
import inspect
import warnings

from .. import functional as F
from ..core import _imperative_rt as _rt
from ..tensor import Tensor
from . import tracer

TENSOR_METHODS = [
    "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__neg__", "__pos__",
    "__abs__", "__invert__", "__round__", "__floor__", "__ceil__", "__add__", "__sub__",
    "__mul__", "__matmul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
    "__lshift__", "__rshift__", "__and__", "__or__", "__xor__", "__radd__", "__rsub__",
    "__rmul__", "__rmatmul__", "__rtruediv__", "__rfloordiv__", "__rmod__", "__rpow__",
    "__rlshift__", "__rrshift__", "__rand__", "__ror__", "__rxor__", "__iadd__", "__isub__",
    "__imul__", "__imatmul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
    "__ilshift__", "__irshift__", "__iand__", "__ior__", "__ixor__", "transpose", "astype",
    "reshape", "_broadcast", "flatten", "sum", "prod", "min", "max", "mean", "__getitem__",
    "__setitem__", "detach", "to",
]  # fmt: skip

# reading a traced tensor's value in Python: the graph keeps the value read, as a constant
VALUE_READS = ["__bool__", "__int__", "__float__", "__index__", "item", "numpy", "tolist"]

# the submodules of megengine.functional whose public functions are recorded as CallFunction
# (F.distributed loads on first use; a trace loads it, megengine.distributed being loaded already)
FUNCTIONAL_MODULES = [
    "distributed", "elemwise", "loss", "math", "metric", "nn", "quantized", "tensor", "vision",
]  # fmt: skip


class _Patch:
    """One replaced attribute of a dict or class, restorable."""

    _missing = object()

    def __init__(self, owner, name):
        self.owner, self.name = owner, name
        if isinstance(owner, collections.abc.Mapping):
            self.origin = owner[name]
        else:
            self.origin = owner.__dict__.get(name, self._missing)

    def current(self):
        if isinstance(self.owner, collections.abc.Mapping):
            return self.owner[self.name]
        return getattr(self.owner, self.name)

    def set(self, value):
        if isinstance(self.owner, collections.abc.Mapping):
            self.owner[self.name] = value
        else:
            setattr(self.owner, self.name, value)

    def restore(self):
        if isinstance(self.owner, collections.abc.Mapping):
            self.owner[self.name] = self.origin
        elif self.origin is self._missing:
            delattr(self.owner, self.name)
        else:
            setattr(self.owner, self.name, self.origin)


class _CellPatch:
    """A closure cell's contents replaced, restorable."""

    def __init__(self, cell, value):
        self.cell, self.origin = cell, cell.cell_contents
        cell.cell_contents = value

    def restore(self):
        self.cell.cell_contents = self.origin


def _tensor_classes():
    todo, seen = [Tensor], []
    while todo:
        cls = todo.pop()
        seen.append(cls)
        todo.extend(cls.__subclasses__())
    return seen


class Patcher:
    """Replaces megengine.functional's functions and Tensor's methods by recording versions
    while a trace runs (a context manager); a forward's own globals that name a replaced
    function are patched too (``auto_patch``)."""

    def __init__(self, wrap_fn, record_ops=True):
        self.wrap_fn = wrap_fn
        self.record_ops = record_ops  # raw apply and Tensor(tensor): traces, not graph edits
        self.patches = []
        self.patched_ids = {}  # id(original) -> wrapper
        self.visited = set()
        self.tensor_patched = False

    def _wrapper(self, origin, method=None):
        key = (id(origin), method)
        wrapper = self.patched_ids.get(key)
        if wrapper is None:
            wrapper = self.wrap_fn(origin, method)
            self.patched_ids[key] = wrapper
        return wrapper

    def patch(self, owner, name, method=None):
        p = _Patch(owner, name)
        origin = p.current()
        p.set(self._wrapper(origin, method))
        self.patches.append(p)

    def patch_module(self, module):
        if id(module.__dict__) in self.visited:
            return
        self.visited.add(id(module.__dict__))
        for name in getattr(module, "__all__", list(module.__dict__)):
            value = module.__dict__.get(name)
            if inspect.isfunction(value) and not name.startswith("_"):
                self.patch(module.__dict__, name)

    def auto_patch(self, frame_dict):
        """Patches the entries of a globals dict that name a recorded function."""
        if id(frame_dict) in self.visited:
            return
        self.visited.add(id(frame_dict))
        for name, value in list(frame_dict.items()):
            if (id(value), None) in self.patched_ids and callable(value):
                self.patch(frame_dict, name)

    def auto_patch_closure(self, func):
        """Patches the closure cells of ``func`` that hold a recorded function (a forward
        defined inside a function that imported it)."""
        for cell in getattr(func, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if (id(value), None) in self.patched_ids and callable(value):
                self.patches.append(_CellPatch(cell, self._wrapper(value)))

    def __enter__(self):
        import importlib

        for sub in FUNCTIONAL_MODULES:
            self.patch_module(importlib.import_module(f"{F.__name__}.{sub}"))
        self.patch_module(F)
        for frame_dict, name, func in tracer.ModuleTracer._user_functions:
            if frame_dict.get(name) is func:  # a module that rebinds or dropped it: skipped
                self.patch(frame_dict, name)
        for name in TENSOR_METHODS:
            if hasattr(Tensor, name):
                self.patch(Tensor, name, method=name)
        if self.record_ops:
            from .record import wrapped_apply, wrapped_tensor_init

            p = _Patch(_rt.__dict__, "apply")
            p.set(wrapped_apply(p.origin))
            self.patches.append(p)
            self.patched_ids[(id(p.origin), None)] = _rt.__dict__["apply"]
            p = _Patch(Tensor, "__init__")
            p.set(wrapped_tensor_init(p.current()))
            self.patches.append(p)
        for name in VALUE_READS:
            if hasattr(Tensor, name):
                p = _Patch(Tensor, name)
                p.set(_warn_value_read(p.current(), name))
                self.patches.append(p)
        self.tensor_patched = True
        return self

    def __exit__(self, *exc):
        while self.patches:
            self.patches.pop().restore()
        if self.tensor_patched:
            # assigning Python methods replaced the C operator slots, of subclasses too
            for cls in _tensor_classes():
                _rt._install_operator_slots(cls)
            self.tensor_patched = False
        self.visited.clear()
        return False


def _warn_value_read(func, name):
    from .expr import Constant, GetAttr

    def read(self, *args, **kwargs):
        node = tracer.get_node(self, None) if tracer.is_tracing_module() else None
        if node is not None and not isinstance(node.expr, (Constant, GetAttr)):
            warnings.warn(
                f"trace_module: Tensor.{name} reads the value of {node} in Python; the graph "
                "keeps what this trace read (a branch taken, a number) and will not follow "
                "other inputs: use functional ops (F.where, ...) instead",
                stacklevel=2,
            )
        with tracer.exclude_from_trace():  # one warning: __bool__ reads through item and numpy
            return func(self, *args, **kwargs)

    read.__name__ = name
    return read
