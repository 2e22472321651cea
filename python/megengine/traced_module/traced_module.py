"""``TracedModule`` and ``trace_module``: a module whose forward is a recorded graph, run by
interpreting it, editable, picklable, and still a Module (its parameters are the original
ones)."""

import copy
import inspect
import weakref

from ..module import Module
from ..tensor import Tensor
from . import tm_config, tracer
from .builder import TracedModuleBuilder, forward_spec
from .expr import Constant, Expr, GetAttr, Input
from .filters import (  # noqa: F401 (MegEngine's module holds these names too)
    BaseFilter,
    ExprFilter,
    ExprFilterCallFunction,
    ExprFilterCallMethod,
    ExprFilterExprId,
    NodeFilter,
    NodeFilterName,
    NodeFilterNodeId,
    NodeFilterType,
)
from .graph import InternalGraph
from .namespace import NameSpace  # noqa: F401
from .node import ModuleNode, Node, TensorNode
from .pytree import USER_REGISTERED_CONTAINER_TYPE, USER_REGISTERED_LEAF_TYPE, tree_flatten
from .record import _is_tensor_leaf, wrapped_function
from .utils import convert_kwargs_to_args

__all__ = ["TracedModule", "register_as_builtin", "trace_module", "wrap"]

USER_REGISTERED_MODULE = []
USER_REGISTERED_FUNCTION = []


class TracedModule(Module):
    r"""A module made by :func:`trace_module`: for each argument structure it was called
    with, an ``InternalGraph`` (``argdef_graph_map``) that ``forward`` interprets, and the
    structure of its result (``argdef_outdef_map``).

    Args:
        is_top: whether it is the traced top module (whose graph may be edited).
        argdef_graph_map: TreeDef of ``((self, *args), kwargs)`` -> InternalGraph.
        argdef_outdef_map: TreeDef of ``((self, *args), kwargs)`` -> TreeDef of the result.
        is_qat: whether the traced module was a QAT module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> net = M.Sequential(M.Linear(3, 2), M.ReLU())
        >>> x = mge.Tensor(np.ones((1, 3), np.float32))
        >>> traced = tm.trace_module(net, x)
        >>> np.allclose(traced(x).numpy(), net(x).numpy())
        True
        >>> sorted(traced.state_dict()) == sorted(net.state_dict())
        True
    """

    argdef_graph_map = None
    argdef_outdef_map = None

    def __init__(self, is_top, argdef_graph_map, argdef_outdef_map, is_qat=False):
        super().__init__()
        self.argdef_graph_map = argdef_graph_map
        self.argdef_outdef_map = argdef_outdef_map
        self._is_top = is_top
        self.watch_points = []
        self.watch_node_value = {}
        self.end_points = []
        self.is_qat = is_qat
        self.argspec = None

    def forward(self, *args, **kwargs):
        if self.argspec is not None:
            args, kwargs = convert_kwargs_to_args(self.argspec, args, kwargs, True)
        leaves, treedef = tree_flatten(((self, *args), kwargs))
        graph = self.argdef_graph_map.get(treedef)
        if graph is None:
            expected = "\n ".join(
                f"forward({d._args_kwargs_repr()})" for d in self.argdef_graph_map
            )
            raise TypeError(
                f"this TracedModule was traced for the arguments:\n {expected}\n"
                f"but was called as forward({treedef._args_kwargs_repr()})"
            )
        inputs = [v for v in leaves if isinstance(v, (Module, TracedModuleBuilder, Tensor))]
        outputs = graph.interpret(*inputs)
        if self.watch_points:
            self.watch_node_value = {
                n: n.top_graph._rst.pop(n) for n in self.watch_points if n in n.top_graph._rst
            }
        if self.end_points:
            return outputs
        return self.argdef_outdef_map[treedef].unflatten(outputs)

    @property
    def graph(self) -> InternalGraph:
        r"""The graph of this module (it must have been traced with one argument structure)."""
        if len(self.argdef_graph_map) != 1:
            raise ValueError(f"this module has {len(self.argdef_graph_map)} graphs")
        return next(iter(self.argdef_graph_map.values()))

    def _rekey(self, old, new):
        self.argdef_graph_map[new] = self.argdef_graph_map.pop(old)
        self.argdef_outdef_map[new] = self.argdef_outdef_map.pop(old)

    # ------------------------------------------------------------- watch and end points
    def set_watch_points(self, nodes):
        r"""Records, at each call, the value of each of ``nodes`` in ``watch_node_value``.

        Examples:
            >>> import megengine as mge
            >>> import megengine.module as M
            >>> import megengine.traced_module as tm
            >>> class Net(M.Module):
            ...     def forward(self, x):
            ...         return x + 1 + 2
            >>> traced = tm.trace_module(Net(), mge.Tensor([0.0]))
            >>> node = traced.graph.get_node_by_name("Net_add_out").as_unique()
            >>> traced.set_watch_points(node)
            >>> _ = traced(mge.Tensor([0.0]))
            >>> traced.watch_node_value[node].numpy()
            array([1.], dtype=float32)
        """
        if not isinstance(nodes, (list, tuple)):
            nodes = [nodes]
        self.watch_points = list(nodes)
        for n in nodes:
            n.top_graph._watch_point = []
        for n in nodes:
            n.top_graph._watch_point.append(n)

    def clear_watch_points(self):
        r"""Stops recording the watch points' values."""
        for n in self.watch_points:
            n.top_graph._watch_point = []
        self.watch_points = []
        self.watch_node_value = {}

    def set_end_points(self, nodes):
        r"""Makes a call stop once every one of ``nodes`` is computed, returning their values
        as a list.

        Examples:
            >>> import megengine as mge
            >>> import megengine.module as M
            >>> import megengine.traced_module as tm
            >>> class Net(M.Module):
            ...     def forward(self, x):
            ...         return x + 1 + 2
            >>> traced = tm.trace_module(Net(), mge.Tensor([0.0]))
            >>> traced.set_end_points(traced.graph.get_node_by_name("Net_add_out").as_unique())
            >>> [t.numpy() for t in traced(mge.Tensor([0.0]))]
            [array([1.], dtype=float32)]
        """
        if not isinstance(nodes, (list, tuple)):
            nodes = [nodes]
        graphs = list(self.argdef_graph_map.values())
        for n in nodes:
            if n.top_graph not in graphs:
                raise ValueError(f"{n} is not in this module's graph")
        self.end_points = list(nodes)
        for n in nodes:
            n.top_graph._end_point.append(n)

    def clear_end_points(self):
        r"""Lets calls run to the end again."""
        for n in self.end_points:
            n.top_graph._end_point = []
        self.end_points = []

    # ------------------------------------------------------------- references
    def _update_ref(self, actual_node_map=None, top_graph=None):
        """Restores the weak references (graph of each node and expr, owner of each module
        node) that copies and pickles drop."""
        for graph in self.argdef_graph_map.values():
            if top_graph is not None:
                graph._top_graph = weakref.ref(top_graph)
            ref = weakref.ref(graph)
            for n in graph._inputs + graph._outputs:
                n.expr._top_graph = ref
                n._top_graph = ref
            graph._inputs[0]._owner = weakref.ref(self)
            node2obj = {graph._inputs[0]: self}
            for expr in graph._exprs:
                expr._top_graph = ref
                for n in expr.inputs + expr.outputs:
                    n._top_graph = ref
                out = expr.outputs[0] if expr.outputs else None
                if isinstance(expr, GetAttr) and isinstance(out, ModuleNode):
                    obj = expr.interpret(node2obj[expr.inputs[0]])[0]
                    out._owner = weakref.ref(obj)
                    node2obj[out] = obj
                elif isinstance(expr, Constant) and isinstance(out, ModuleNode):
                    out._owner = weakref.ref(expr.value)
                    node2obj[out] = expr.value
            for obj in node2obj.values():
                if obj is not self and isinstance(obj, TracedModule):
                    obj._update_ref(None, graph)

    # ------------------------------------------------------------- flatten
    def flatten(self):
        r"""A copy whose graph calls no traced submodule: their graphs inlined, their
        attributes read by dotted paths (``getattr(self, "layer1.conv1")``).

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> import megengine.module as M
            >>> import megengine.traced_module as tm
            >>> net = M.Sequential(M.Sequential(M.Linear(2, 2), M.ReLU()), M.Linear(2, 1))
            >>> x = mge.Tensor(np.ones((1, 2), np.float32))
            >>> flat = tm.trace_module(net, x).flatten()
            >>> print(flat.graph)  # doctest: +NORMALIZE_WHITESPACE
            Sequential.Graph (self, inp) {
                %2: _1 = getattr(self, "1") -> (Linear)
                %3: _0__0 = getattr(self, "0.0") -> (Linear)
                %4: _0__1 = getattr(self, "0.1") -> (ReLU)
                %5: _0__0_out = _0__0(inp, )
                %6: _0_out = _0__1(_0__0_out, )
                %7: _1_out = _1(_0_out, )
                return _1_out
            }
            >>> np.allclose(flat(x).numpy(), net(x).numpy())
            True
        """
        from .flatten import flatten_module

        return flatten_module(self)

    # ------------------------------------------------------------- copies and pickles
    def __getstate__(self):
        state = dict(self.__dict__)
        state["dump_info"] = {
            "version": "1.13.0",
            "register_type": USER_REGISTERED_LEAF_TYPE,
            "register_container_type": USER_REGISTERED_CONTAINER_TYPE,
            "register_mdule": USER_REGISTERED_MODULE,
            "register_function": USER_REGISTERED_FUNCTION,
        }
        state["watch_points"], state["watch_node_value"], state["end_points"] = [], {}, []
        return state

    def __setstate__(self, state):
        state.pop("dump_info", None)
        self.__dict__.update(state)
        _relink(self)
        self._update_ref()

    def __deepcopy__(self, memo):
        result = type(self).__new__(type(self))
        memo[id(self)] = result
        for k, v in self.__dict__.items():
            if not isinstance(v, weakref.ReferenceType):
                result.__dict__[k] = copy.deepcopy(v, memo)
        result._update_ref()
        return result


def _relink(module):
    """After unpickling: each node's users are exactly the exprs reading it."""
    for graph in module.argdef_graph_map.values():
        for node in graph.nodes(False):
            node.users = [e for e in node.users if any(i is node for i in e.inputs)]


def register_as_builtin(mod_cls) -> None:
    r"""Makes ``trace_module`` record calls of ``mod_cls`` modules as one CallMethod (a leaf)
    instead of tracing their forward.

    Args:
        mod_cls: a Module subclass.

    Returns:
        None.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> class Twice(M.Module):
        ...     def forward(self, x):
        ...         return x * 2
        >>> tm.register_as_builtin(Twice)
        >>> class Net(M.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.twice = Twice()
        ...     def forward(self, x):
        ...         return self.twice(x)
        >>> traced = tm.trace_module(Net(), mge.Tensor([1.0]))
        >>> [type(e).__name__ for e in traced.graph.exprs()]
        ['Input', 'Input', 'GetAttr', 'CallMethod']
    """
    USER_REGISTERED_MODULE.append((mod_cls.__module__, mod_cls.__qualname__))
    tracer.ModuleTracer.register_as_builtin(mod_cls)


def wrap(func):
    r"""Makes ``trace_module`` record calls of the module-level function ``func`` as one
    CallFunction (a decorator, or a call at the top level of the module defining ``func``).

    Args:
        func: the function.

    Returns:
        ``func`` itself.

    Examples:
        >>> import megengine.traced_module as tm
        >>> def my_add(x, y):
        ...     return x + y
        >>> my_add = tm.wrap(my_add)
        >>> my_add.__name__
        'my_add'
    """
    if not callable(func) or not hasattr(func, "__code__"):
        raise TypeError(f"wrap takes a Python function, got {func!r}")
    frame = inspect.currentframe().f_back
    if frame is None or frame.f_code.co_name != "<module>":
        raise ValueError("wrap must be called at the top level of a module")
    USER_REGISTERED_FUNCTION.append((func.__module__, func.__qualname__))
    tracer.ModuleTracer._user_functions.append((frame.f_globals, func.__code__.co_name, func))
    return func


def _register_all_builtin_module():
    import importlib

    from .. import module as M

    for sub in [M, importlib.import_module("megengine.module.qat")]:
        for _, cls in inspect.getmembers(sub, inspect.isclass):
            if issubclass(cls, Module) and cls is not M.Sequential:
                tracer.ModuleTracer.register_as_builtin(cls)
    # observers and fake quantizers are leaves too (MegEngine 1.13's list)
    from ..quantization import fake_quant as FQ
    from ..quantization import observer as O
    from .fake_quant import FakeQuantize

    for cls in (
        O.Observer,
        O.MinMaxObserver,
        O.SyncMinMaxObserver,
        O.ExponentialMovingAverageObserver,
        O.SyncExponentialMovingAverageObserver,
        O.HistogramObserver,
        O.PassiveObserver,
        FQ.LSQ,
        FQ.TQT,
        FQ.FakeQuantize,
        FakeQuantize,
    ):
        tracer.ModuleTracer.register_as_builtin(cls)


def trace_module(mod: Module, *args, **kwargs) -> TracedModule:
    r"""Traces ``mod`` called with ``args`` and ``kwargs`` into a :class:`TracedModule`.

    Calls of builtin modules (``megengine.module``'s layers, those registered with
    :func:`register_as_builtin`), of ``megengine.functional``'s functions and of Tensor methods
    and operators are recorded; other modules are traced into graphs of their own. Python
    control flow runs once, with the given arguments: the graph holds the path taken, and
    shapes read in Python are constants.

    Args:
        mod: the module to trace.
        args: its positional arguments (Tensors, constants, supported containers of them).
        kwargs: its keyword arguments.

    Returns:
        the TracedModule.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> class Net(M.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = M.Linear(4, 2)
        ...     def forward(self, x, scale=2.0):
        ...         return F.relu(self.fc(x)) * scale
        >>> x = mge.Tensor(np.ones((3, 4), np.float32))
        >>> traced = tm.trace_module(Net(), x)
        >>> [type(e).__name__ for e in traced.graph.exprs()]
        ['Input', 'Input', 'GetAttr', 'CallMethod', 'CallFunction', 'CallMethod']
    """
    if tracer.active_module_tracer() is not None:
        raise RuntimeError("trace_module cannot run inside another trace_module")
    if not isinstance(mod, Module):
        raise TypeError(f"trace_module traces a Module, got {type(mod).__name__}")
    active = tracer.ModuleTracer(wrapped_function)
    tracer.set_active_module_tracer(active)
    tracer.set_module_tracing(True)
    Expr._set_next_id(0)
    Node._set_next_id(0)
    try:
        net_name = getattr(mod, "name", None) or type(mod).__name__
        with active.patcher:
            top_scope = InternalGraph(name="top", qualname=net_name)
            active.push_scope(top_scope)
            builder = TracedModuleBuilder(mod, True)
            tracer.bind(builder, Input.make(ModuleNode, name="top", qualname=net_name))
            spec = forward_spec(mod)
            argspec = (
                spec if isinstance(spec, inspect.FullArgSpec) else inspect.getfullargspec(spec)
            )
            argspec = argspec._replace(annotations={})
            args, kwargs = convert_kwargs_to_args(argspec, args, kwargs, True)
            leaves, _ = tree_flatten((args, kwargs))
            for i, leaf in enumerate(leaves):
                if isinstance(leaf, Tensor):
                    name = f"arg_{i}"
                    tracer.bind(
                        leaf, Input.make(TensorNode, name=name, qualname=f"{net_name}.[{name}]")
                    )
            result = builder(*args, **kwargs)
            active.pop_scope()
            traced = builder.build()
            traced.argspec = argspec
            traced.graph._reset_ids()
    finally:
        tracer.set_module_tracing(False)
        tracer.set_active_module_tracer(None)
    if tm_config.default_checker_enabled():
        _check_outputs(traced, args, kwargs, result)
    return traced


def _check_outputs(traced, args, kwargs, expected):
    got, _ = tree_flatten(traced(*args, **kwargs), is_leaf=_is_tensor_leaf)
    want, _ = tree_flatten(expected, is_leaf=_is_tensor_leaf)
    if len(got) != len(want):
        raise RuntimeError(f"the traced module gives {len(got)} outputs, the module {len(want)}")
    import numpy as np

    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or not np.allclose(
            g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6, equal_nan=True
        ):
            raise RuntimeError(
                f"output {i} of the traced module differs from the module's: the trace "
                "recorded something the module does not do for these inputs (an untraced "
                "operation, or a value read in Python)"
            )
