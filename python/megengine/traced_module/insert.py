"""``graph.insert_exprs()``: graph surgery by writing ordinary code on Nodes.

Inside the block, a function of ``megengine.functional``, a Tensor method or operator on a
TensorNode, an attribute read on a ModuleNode and a call of a ModuleNode run on stand-in
Tensors (the node's shape and dtype) and are recorded into a scratch graph; each returns the
Nodes of its results. When the block ends the recorded exprs are inserted into the graph after
the given expr (or after the last expr they read)."""

import weakref

from .. import functional as F
from ..module import Module
from ..tensor import Tensor
from . import tracer
from .builder import TracedModuleBuilder
from .expr import Expr, GetAttr
from .graph import InternalGraph
from .node import ModuleNode, Node, TensorNode
from .patcher import TENSOR_METHODS
from .pytree import tree_flatten
from .record import wrapped_function

_scope_inputs = None  # the scratch graph's external inputs while a block runs
_scope = None  # the scratch graph itself while a block runs
_scope_builders = None  # (module node, builder) of each module called in the block


def _in_module_body():
    # a module called in the block is traced: its forward works on Tensors, not on Nodes
    return tracer.active_module_tracer().current_scope() is not _scope


def _nodes_to_tensors(args, kwargs):
    leaves, tree_def = tree_flatten((args, kwargs), is_leaf=_leaf_ok)
    values = []
    for leaf in leaves:
        if isinstance(leaf, TensorNode):
            if leaf.top_graph is not None:
                _scope_inputs.append(leaf)
            value = leaf.value
            if value is None:
                with tracer.exclude_from_trace():
                    value = F.zeros(leaf.shape, dtype=leaf.dtype)
            tracer.bind(value, leaf)
            values.append(value)
        elif isinstance(leaf, ModuleNode):
            values.append(_builder_of(leaf))
        else:
            values.append(leaf)
    return tree_def.unflatten(values)


def _leaf_ok(obj):
    from .pytree import _is_leaf

    return _is_leaf(obj)


def _tensors_to_nodes(result):
    if result is None:
        return None
    leaves, tree_def = tree_flatten(result, is_leaf=_leaf_ok)
    out = []
    for leaf in leaves:
        node = tracer.get_node(leaf, None) if isinstance(leaf, Tensor) else None
        if isinstance(node, TensorNode):
            node.value = leaf
            out.append(node)
        else:
            out.append(leaf)
    return tree_def.unflatten(out)


def _builder_of(mnode):
    """A builder standing for the module of ``mnode``, bound to it (its graph when traced)."""
    owner = mnode.owner
    if owner is None:
        raise ValueError(f"{mnode} has no module")
    if mnode.top_graph is not None:
        _scope_inputs.append(mnode)
    builder = TracedModuleBuilder(owner)
    graphs = getattr(owner, "argdef_graph_map", None)
    if graphs:
        # a traced module is called, not traced again
        builder._argdef_graph_map.update(graphs)
        builder._argdef_outdef_map.update(owner.argdef_outdef_map)
    tracer.bind(builder, mnode)
    _scope_builders.append((mnode, builder))
    return builder


def _install_traced_modules(builders):
    """Puts the TracedModule of each user module the block called in place of the module, as
    MegEngine 1.13 does: its graph is what the inserted call runs."""
    from .traced_module import TracedModule

    for mnode, builder in builders:
        owner = mnode.owner
        if builder._is_builtin or isinstance(owner, TracedModule) or not builder._argdef_graph_map:
            continue
        expr = mnode.expr
        if not isinstance(expr, GetAttr) or expr.inputs[0].owner is None:
            continue
        parent = expr.inputs[0].owner
        *path, attr = expr.name.split(".")
        for part in path:
            parent = getattr(parent, part)
        if getattr(parent, attr, None) is not owner:
            continue
        traced = builder.build()
        setattr(parent, attr, traced)
        mnode._owner = weakref.ref(traced)


def _surgery_fn(func, method=None):
    recording = wrapped_function(func, method)

    def call(*args, **kwargs):
        if _in_module_body():
            return recording(*args, **kwargs)
        args, kwargs = _nodes_to_tensors(args, kwargs)
        return _tensors_to_nodes(recording(*args, **kwargs))

    call.__wrapped__ = func
    call.__name__ = getattr(func, "__name__", "call")
    return call


def _node_method(name):
    def method(self, *args, **kwargs):
        (node_self, *args), kwargs = _nodes_to_tensors((self, *args), kwargs)
        return _tensors_to_nodes(getattr(node_self, name)(*args, **kwargs))

    method.__name__ = name
    return method


def _mnode_getattr(self, name):
    if name.startswith("__"):
        raise AttributeError(name)
    owner = self.owner
    if owner is None:
        raise AttributeError(name)
    value = getattr(owner, name)
    if not isinstance(value, (Module, Tensor)):
        return value
    if self.top_graph is not None:
        _scope_inputs.append(self)
    if isinstance(value, Module):
        node = GetAttr.make(self, type=ModuleNode, attr_name=name)
        node._owner = weakref.ref(value)
        if tracer.ModuleTracer.is_builtin(value):
            node.module_type = type(value)
        return node
    node = GetAttr.make(self, type=TensorNode, attr_name=name)
    node._record(value)
    node.value = value
    return node


def _tensor_name_get(self):
    return self.__dict__.get("name", "")


def _tensor_name_set(self, name):
    """``Tensor.name`` while a block runs: in the body of a module the block calls, naming a
    traced Tensor names its node, as MegEngine 1.13 does there."""
    self.__dict__["name"] = name
    if name and _in_module_body():
        node = tracer.get_node(self, None)
        if isinstance(node, TensorNode) and node.name != name:
            node.name = name


def _mnode_call(self, *args, **kwargs):
    builder = _builder_of(self)
    args, kwargs = _nodes_to_tensors(args, kwargs)
    return _tensors_to_nodes(builder(*args, **kwargs))


class InsertExprs:
    """The context manager ``InternalGraph.insert_exprs`` returns."""

    def __init__(self, graph, expr=None):
        self.graph = graph
        root = graph
        while root.top_graph is not None:
            root = root.top_graph
        self.root_graph = root
        self.scope = InternalGraph(graph._name, graph._qualname)
        self.scope._namespace.merge(graph._namespace)
        self.expr = expr
        self._patches = []

    def __enter__(self):
        global _scope_inputs, _scope, _scope_builders
        if tracer.active_module_tracer() is not None:
            raise RuntimeError("insert_exprs cannot run inside a trace or another insert_exprs")
        if self.root_graph._total_ids:
            node_id, expr_id = self.root_graph._total_ids
            Node._set_next_id(node_id)
            Expr._set_next_id(expr_id)
        _scope_inputs = []
        _scope = self.scope
        _scope_builders = []
        active = tracer.ModuleTracer(_surgery_fn, record_ops=False)
        tracer.set_active_module_tracer(active)
        tracer.set_module_tracing(True)
        active.patcher.__enter__()
        for name in TENSOR_METHODS:
            if hasattr(Tensor, name):
                self._patch(TensorNode, name, _node_method(name))
        self._patch(ModuleNode, "__getattr__", _mnode_getattr)
        self._patch(ModuleNode, "__call__", _mnode_call)
        self._patch(Tensor, "name", property(_tensor_name_get, _tensor_name_set))
        active.push_scope(self.scope)
        return self

    def _patch(self, cls, name, value):
        self._patches.append((cls, name, cls.__dict__.get(name)))
        setattr(cls, name, value)

    def __exit__(self, ty, value, tb):
        global _scope_inputs, _scope, _scope_builders
        active = tracer.active_module_tracer()
        active.patcher.__exit__(ty, value, tb)
        for cls, name, old in reversed(self._patches):
            if old is None:
                delattr(cls, name)
            else:
                setattr(cls, name, old)
        tracer.set_module_tracing(False)
        tracer.set_active_module_tracer(None)
        inputs, _scope_inputs, _scope = _scope_inputs, None, None
        builders, _scope_builders = _scope_builders, None
        if value is not None:
            _clear_values(self.root_graph)
            return False
        graph = self.graph
        index = -1
        for node in inputs:
            if node.top_graph is not graph:
                raise ValueError(f"{node} is not in the graph {graph.name}")
            if node.expr in graph._exprs:
                index = max(index, graph._exprs.index(node.expr))
        position = graph._exprs.index(self.expr) + 1 if self.expr in graph._exprs else 0
        position = max(position, index + 1)
        graph._exprs[position:position] = self.scope._exprs
        graph._namespace.merge(self.scope._namespace)
        _install_traced_modules(builders)
        self.root_graph._total_ids = (Node._get_next_id(), Expr._get_next_id())
        self.root_graph.inputs[0].owner._update_ref()
        _clear_values(self.root_graph)
        return False


def _clear_values(graph):
    for node in graph.nodes():
        if isinstance(node, TensorNode):
            node.value = None
