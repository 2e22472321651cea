"""The state of a trace in progress: which graph records (a stack of scopes), which node each
traced Tensor or module stands for, and the patches that make ``megengine.functional`` and
Tensor methods record themselves.

Nothing here costs eager code anything: the functions and methods are replaced only while
``trace_module`` (or ``graph.insert_exprs``) runs and restored after, the C operator slots of
Tensor included (``_install_operator_slots``)."""

import collections
import contextlib
import inspect
import warnings
from typing import ClassVar

from .. import functional as F
from ..core import _imperative_rt as _rt
from ..module import Module
from ..tensor import Tensor

# Tensor methods and operators recorded as CallMethod (MegEngine's list; those Tensor lacks are
# skipped).
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
    "__setitem__", "detach",
]  # fmt: skip

# reading a traced tensor's value in Python: the graph keeps the value read, as a constant
VALUE_READS = ["__bool__", "__int__", "__float__", "__index__", "item", "numpy", "tolist"]

# the submodules of megengine.functional whose public functions are recorded as CallFunction
FUNCTIONAL_MODULES = ["elemwise", "loss", "math", "metric", "nn", "tensor", "vision"]

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
        for frame_dict, name, func in ModuleTracer._user_functions:
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
        node = get_node(self, None) if _tracing else None
        if node is not None and not isinstance(node.expr, (Constant, GetAttr)):
            warnings.warn(
                f"trace_module: Tensor.{name} reads the value of {node} in Python; the graph "
                "keeps what this trace read (a branch taken, a number) and will not follow "
                "other inputs: use functional ops (F.where, ...) instead",
                stacklevel=2,
            )
        with exclude_from_trace():  # one warning: __bool__ reads through item and numpy
            return func(self, *args, **kwargs)

    read.__name__ = name
    return read


def convert_kwargs_to_args(spec, args, kwargs, is_bounded=False):
    """``(args, kwargs)`` with every positional parameter of ``spec`` (a function or FullArgSpec)
    given positionally, defaults filled in, as MegEngine records calls."""
    func_name = "function"
    if callable(spec):
        spec = inspect.unwrap(spec)
        func_name = getattr(spec, "__qualname__", func_name)
        spec = inspect.getfullargspec(spec)
    names = spec.args[1:] if is_bounded else spec.args
    defaults = spec.defaults or ()
    kwonly_defaults = spec.kwonlydefaults or {}
    new_args = list(args)
    repeated = set(names[: len(new_args)]) & set(kwargs)
    if repeated:
        raise TypeError(f"{func_name} got multiple values for argument {', '.join(repeated)}")
    for ind in range(len(new_args), len(names)):
        name = names[ind]
        if name in kwargs:
            new_args.append(kwargs[name])
            continue
        index = ind - len(names) + len(defaults)
        if not 0 <= index < len(defaults):
            raise TypeError(f"{func_name} missing required positional argument: {name}")
        new_args.append(defaults[index])
    new_kwargs = {}
    for name in spec.kwonlyargs:
        if name in kwargs:
            new_kwargs[name] = kwargs[name]
        elif name in kwonly_defaults:
            new_kwargs[name] = kwonly_defaults[name]
        else:
            raise TypeError(f"{func_name} missing required keyword-only argument: {name}")
    for k, v in kwargs.items():
        if k not in names and k not in spec.kwonlyargs:
            if spec.varkw is None:
                raise TypeError(f"{func_name} got an unexpected keyword argument {k}")
            new_kwargs[k] = v
    return tuple(new_args), new_kwargs


def _positional(func):
    """Whether calls of ``func`` can be normalised (a Python signature)."""
    try:
        inspect.getfullargspec(inspect.unwrap(func))
        return True
    except TypeError:
        return False


_expr_checker = False
_default_checker = True


def expr_checker_enabled():
    return _expr_checker


def default_checker_enabled():
    return _default_checker


def enable_expr_checker():
    r"""Checks, while tracing, that each recorded expr interpreted gives what the eager call
    gave (slower; for finding which call a trace records wrongly).

    Returns:
        None.

    Examples:
        >>> import megengine.traced_module as tm
        >>> tm.enable_expr_checker()
        >>> from megengine.traced_module import tracer
        >>> tracer.expr_checker_enabled()
        True
        >>> tracer._expr_checker = False
    """
    global _expr_checker
    _expr_checker = True


def disable_default_checker():
    r"""Stops ``trace_module`` from running the traced module once more to compare its
    outputs with the original's.

    Returns:
        None.

    Examples:
        >>> import megengine.traced_module as tm
        >>> tm.disable_default_checker()
        >>> from megengine.traced_module import tracer
        >>> tracer.default_checker_enabled()
        False
        >>> tracer._default_checker = True
    """
    global _default_checker
    _default_checker = False
