"""``InternalGraph``: what a traced module's forward did, as a list of Exprs over Nodes; its
queries, edits and interpreter."""

import collections
import copy
import logging

from ..tensor import Tensor
from .expr import GetAttr, Input, get_suffix_name
from .filters import ExprFilter, NodeFilter, iter_exprs, iter_nodes
from .namespace import NameSpace
from .node import ModuleNode, NameInUseError, Node, TensorNode
from .pytree import tree_flatten

logger = logging.getLogger(__name__)


class _Reiterable:
    def __init__(self, make):
        self._make = make

    def __iter__(self):
        return self._make()


class InternalGraph:
    r"""The graph of a traced module's forward: ``inputs`` (``self`` first), ``exprs()`` in
    execution order and ``outputs``.

    Examples:
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> class Net(M.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.linear = M.Linear(4, 5)
        ...     def forward(self, x):
        ...         return F.relu(self.linear(x + 1))
        >>> traced = tm.trace_module(Net(), F.zeros((3, 4)))
        >>> print(traced.graph)  # doctest: +NORMALIZE_WHITESPACE
        Net.Graph (self, x) {
            %2: linear = getattr(self, "linear") -> (Linear)
            %3: add_out = x.__add__(1, )
            %4: linear_out = linear(add_out, )
            %5: relu_out = elemwise.relu(linear_out, )
            return relu_out
        }
    """

    _top_graph = None
    _total_ids = None

    def __init__(self, name, qualname):
        self._exprs = []
        self._inputs = []
        self._outputs = []
        self._watch_point = []
        self._end_point = []
        self._namespace = NameSpace(name, qualname)
        self._rst = {}
        self._name = name
        self._qualname = qualname

    def _insert(self, expr):
        self._exprs.append(expr)

    def _add_input(self, node):
        self._inputs.append(node)

    def _add_output(self, node):
        self._outputs.append(node)

    @property
    def name(self):
        r"""The graph's name: the prefix of its Nodes' full names (``get_node_by_name``).

        Setting it renames the graph; in a subgraph the name must be free in the calling
        graph (else a ``NameInUseError``, an AssertionError as in MegEngine 1.13).

        Examples:
            >>> import megengine as mge
            >>> import megengine.module as M
            >>> import megengine.traced_module as tm
            >>> class Net(M.Module):
            ...     def forward(self, x):
            ...         return x + 1
            >>> traced = tm.trace_module(Net(), mge.Tensor(1.0))
            >>> graph = traced.graph
            >>> graph.name = "Top"
            >>> graph.get_node_by_name("Top_add_out").as_unique().name
            'add_out'
        """
        return self._name

    @name.setter
    def name(self, new_name):
        top = self.top_graph
        if top is None:
            owner = self.inputs[0].owner
            if owner is not None and not owner._is_top:
                raise ValueError("a subgraph without its calling graph cannot be renamed")
        else:
            if top._namespace.used_names.get(new_name) is not None:
                raise NameInUseError(f"the name {new_name} is already in use")
            new_name = top._namespace.create_unique_name(new_name, self)
        self._name = new_name

    @property
    def qualname(self):
        r"""The module path of the graph (``Net.block``)."""
        return self._qualname

    @property
    def inputs(self):
        r"""The input Nodes: the module's own ModuleNode, then the arguments'."""
        return self._inputs

    @property
    def outputs(self):
        r"""The output Nodes, flattened."""
        return self._outputs

    @property
    def top_graph(self):
        r"""The graph that calls this one, or None for a top graph."""
        return self._top_graph() if self._top_graph else None

    # ------------------------------------------------------------------ queries
    def exprs(self, recursive=True):
        r"""The graph's Exprs (and its subgraphs' when ``recursive``), as an ``ExprFilter``."""
        return ExprFilter(_Reiterable(lambda: iter_exprs(self, recursive)))

    def nodes(self, recursive=True):
        r"""The graph's Nodes (and its subgraphs' when ``recursive``), as a ``NodeFilter``."""
        return NodeFilter(_Reiterable(lambda: iter_nodes(self, recursive)))

    def get_function_by_type(self, func=None, recursive=True):
        r"""The CallFunction exprs of ``func`` (all when None)."""
        return self.exprs(recursive).call_function(func)

    def get_method_by_type(self, method=None, recursive=True):
        r"""The CallMethod exprs of ``method`` (``"__call__"``, ``"__add__"``...; all when None)."""
        return self.exprs(recursive).call_method(method)

    def get_expr_by_id(self, expr_id=None, recursive=True):
        r"""The exprs of the given id or ids."""
        return self.exprs(recursive).expr_id(expr_id)

    def get_module_by_type(self, module_cls, recursive=True):
        r"""The ModuleNodes whose module is a ``module_cls``."""
        return self.nodes(recursive).type(module_cls)

    def get_node_by_id(self, node_id=None, recursive=True):
        r"""The nodes of the given id or ids."""
        return self.nodes(recursive).node_id(node_id)

    def get_node_by_name(self, name=None, ignorecase=True, recursive=True):
        r"""The nodes whose full name (``<graph name>_<node name>``) matches the glob ``name``."""
        return self.nodes(recursive).name(name, ignorecase)

    def get_dep_exprs(self, nodes):
        r"""The exprs that ``nodes`` depend on (theirs included)."""
        if not isinstance(nodes, (list, tuple)):
            nodes = (nodes,)
        ret, queue, visited = [], list(nodes), set()
        while queue:
            node = queue.pop()
            visited.add(id(node))
            if node.expr not in ret:
                ret.append(node.expr)
            for i in node.expr.inputs:
                if id(i) not in visited and i not in queue:
                    queue.append(i)
        return ret

    # ------------------------------------------------------------------ edits
    def _top_module(self, what):
        module = self.inputs[0].owner
        if module is None or not module._is_top:
            raise ValueError(f"{what} only supports the top graph")
        return module

    def reset_inputs(self, *args, **kwargs):
        r"""Replaces the Tensor inputs by new ones (named ``args``, ``args_1``...) shaped like
        the Tensors of ``args`` and ``kwargs``, a new argument structure; returns the new input
        nodes. Readers of the old inputs must be rewired (``replace_node``) by the caller."""
        module = self._top_module("reset_inputs")
        leaves, tree_def = tree_flatten(((module, *args), kwargs))
        nodes = [self._inputs[0]]
        for value in leaves[1:]:
            if not isinstance(value, Tensor):
                raise TypeError(f"reset_inputs takes Tensors, got {type(value).__name__}")
            name = self._namespace.create_unique_name("args")
            node = Input(TensorNode, name=name, qualname=f"{self._qualname}.[{name}]").outputs[0]
            self._namespace.associate_name_with_obj(node.name, node)
            node.shape, node.dtype = tuple(value.shape), value.dtype
            node._top_graph = node.expr._top_graph = _ref(self)
            nodes.append(node)
        self._inputs[:] = nodes
        module._rekey(next(iter(module.argdef_graph_map)), tree_def)
        return nodes[1:]

    def add_input_node(self, shape, dtype="float32", name="args"):
        r"""Adds a Tensor input, the last positional argument, and returns its node."""
        module = self._top_module("add_input_node")
        name = self._namespace.create_unique_name(name)
        node = Input(TensorNode, name=name, qualname=f"{self._qualname}.[{name}]").outputs[0]
        self._namespace.associate_name_with_obj(node.name, node)
        node.shape, node.dtype = shape, dtype
        old_def = next(iter(module.argdef_graph_map))
        args, kwargs = old_def.unflatten(self._inputs)
        inputs, tree_def = tree_flatten(
            ((*args, node), kwargs),
            is_const_leaf=lambda x: not isinstance(x, (TensorNode, ModuleNode)),
        )
        self._inputs[:] = inputs
        node._top_graph = node.expr._top_graph = _ref(self)
        module._rekey(old_def, tree_def)
        return node

    def reset_outputs(self, outputs):
        r"""Makes ``outputs`` (Nodes in any supported container) the graph's result."""
        module = self._top_module("reset_outputs")
        leaves, out_def = tree_flatten(outputs, is_leaf=lambda x: isinstance(x, TensorNode))
        self._outputs[:] = leaves
        module.argdef_outdef_map[next(iter(module.argdef_graph_map))] = out_def

    def add_output_node(self, node):
        r"""Adds ``node`` to the result, which becomes ``(old result, node)``."""
        module = self._top_module("add_output_node")
        key = next(iter(module.argdef_graph_map))
        old = module.argdef_outdef_map[key].unflatten(self._outputs)
        leaves, out_def = tree_flatten((old, node), is_leaf=lambda x: isinstance(x, TensorNode))
        self._outputs[:] = leaves
        module.argdef_outdef_map[key] = out_def

    def insert_exprs(self, expr=None):
        r"""A context in which calls on this graph's Nodes (``F.relu(node)``, ``node + 1``, a
        module node's call) record new exprs, inserted after ``expr`` (or after their inputs)
        when the block ends; each call returns the new output Nodes."""
        from .insert import InsertExprs

        if expr is not None and expr.top_graph is not self:
            raise ValueError("the expr to insert after is not in this graph")
        return InsertExprs(self, expr)

    def replace_node(self, repl_dict):
        r"""Makes the readers of each node of ``{old: new}`` (those after ``new`` is made)
        read ``new`` instead, graph outputs included."""
        while repl_dict:
            node, repl = repl_dict.popitem()
            if type(node) is not type(repl):
                raise TypeError(
                    f"cannot replace {node} ({type(node).__name__}) by {repl} "
                    f"({type(repl).__name__})"
                )
            if repl.top_graph is not self:
                raise ValueError(f"{repl} is not in this graph")
            for i, out in enumerate(self._outputs):
                if out is node:
                    self._outputs[i] = repl
            index = -1 if isinstance(repl.expr, Input) else self._exprs.index(repl.expr)
            deps = self.get_dep_exprs(repl)
            i = 0
            while i < len(node.users):
                user = node.users[i]
                if (user in self._exprs and index >= self._exprs.index(user)) or user in deps:
                    i += 1
                    continue
                repl.users.append(user)
                node.users.pop(i)
                user.inputs[user.inputs.index(node)] = repl

    def _merge_getattr_expr(self):
        # one GetAttr per attribute: later reads of the same attribute use the first's node
        by_key, key_of = {}, {}
        for expr in [e for e in self._exprs if isinstance(e, GetAttr)]:
            base, attr = expr.inputs[0], expr.name
            if base in key_of:
                base, base_attr = key_of[base]
                attr = f"{base_attr}.{expr.name}"
            if get_suffix_name(self.qualname, expr.outputs[0].qualname) != attr:
                expr.outputs[0]._qualname = f"{base.qualname}.{attr}"
            key = (base, attr)
            key_of[expr.outputs[0]] = key
            if key in by_key:
                kept, dup = by_key[key], expr.outputs[0]
                for user in dup.users:
                    kept.users.append(user)
                    user.inputs[user.inputs.index(dup)] = kept
                dup.users = []
            else:
                if attr != expr.name:
                    expr.name = attr
                    expr.inputs[0].users.remove(expr)
                    self.inputs[0].users.append(expr)
                    expr.inputs[0] = self.inputs[0]
                by_key[key] = expr.outputs[0]

    def compile(self):
        r"""Removes the exprs that the outputs do not need (unless ``disable_remove``)."""
        self._merge_getattr_expr()
        deps = set(map(id, self.get_dep_exprs(self.outputs)))
        kept = []
        for expr in self._exprs:
            if id(expr) in deps or expr._disable_remove:
                kept.append(expr)
                continue
            for n in expr.inputs:
                n.users.remove(expr)
            for n in expr.outputs:
                self._namespace.unassociate_name_with_obj(n)
        self._exprs = kept

    def _reset_ids(self):
        expr_id = node_id = -1
        for expr_id, expr in enumerate(self.exprs()):
            expr._id = expr_id
        for node_id, node in enumerate(self.nodes()):
            node._id = node_id
        self._total_ids = (node_id + 1, expr_id + 1)

    def _re_associate_name(self):
        self._namespace.used_names.clear()
        for node in self.nodes(False):
            node._name = self._namespace.create_unique_name(node.name, node)

    # ------------------------------------------------------------------ running
    def interpret(self, *inputs):
        node2value = {}
        end_nodes = set(self._end_point)
        end_values = {}

        def reached_end(node, value):
            if node in end_nodes:
                end_values[node] = value
                end_nodes.remove(node)
                return not end_nodes
            return False

        outputs = collections.Counter(map(id, self._outputs))

        def ref_count(node):
            return len(node.users) + outputs[id(node)]

        for node, value in zip(self._inputs, inputs):
            if ref_count(node) > 0:
                node2value[node] = [value, ref_count(node)]
            if node in self._watch_point:
                self._rst[node] = value
            if node in self._end_point and reached_end(node, value):
                return [end_values[n] for n in self._end_point]
        for expr in self._exprs:
            values = expr.interpret(*[node2value[i][0] for i in expr.inputs])
            for node in expr.inputs:
                node2value[node][1] -= 1
                if node2value[node][1] == 0:
                    node2value.pop(node)
            if values is None:
                continue
            if len(values) != len(expr.outputs):
                raise RuntimeError(f"{expr} gave {len(values)} outputs")
            for node, value in zip(expr.outputs, values):
                if ref_count(node) > 0:
                    node2value[node] = [value, ref_count(node)]
                if node in self._watch_point:
                    self._rst[node] = value
                if self._end_point and reached_end(node, value):
                    return [end_values[n] for n in self._end_point]
        return [node2value[n][0] for n in self._outputs]

    def eval(self, *inputs):
        r"""Runs the graph on Tensors for ``inputs[1:]`` (the module is ``inputs[0]``' owner)."""
        if len(inputs) != len(self._inputs) - 1:
            raise ValueError(f"the graph takes {len(self._inputs) - 1} inputs, got {len(inputs)}")
        return self.interpret(self._inputs[0].owner, *inputs)

    # ------------------------------------------------------------------ printing, copies
    def __repr__(self):
        return self.__format__()

    def __format__(self, format_spec=""):
        saved = Node._set_format_spec(format_spec)
        try:
            name = f"{self._name}.Graph" if self._name else ""
            return "{} ({}) {{\n\t{}\n\treturn {}\n}}".format(
                name,
                ", ".join(str(i) for i in self._inputs),
                "\n\t".join(str(e) for e in self._exprs),
                ", ".join(str(o) for o in self._outputs),
            )
        finally:
            Node._set_format_spec(saved)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.update(_watch_point=[], _end_point=[], _rst={})
        state["_top_graph"] = None
        return state

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self).__new__(type(self))
        memo[id(self)] = result
        for k, v in self.__dict__.items():
            if k != "_top_graph":
                setattr(result, k, copy.deepcopy(v, memo))
        result._top_graph = None
        return result


def _ref(obj):
    import weakref

    return weakref.ref(obj)
