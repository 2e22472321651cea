"""``TracedModule.flatten``: one graph with every traced submodule's graph inlined at its
call, the submodules' attributes read from the top module by dotted paths."""

import copy
from itertools import chain

from .expr import CallMethod, GetAttr, Input
from .node import ModuleNode, TensorNode


def _replace_io(expr, repl):
    for i, node in enumerate(expr.inputs):
        if node in repl:
            expr.inputs[i] = repl[node]
    for i, node in enumerate(expr.outputs):
        if node in repl:
            expr.outputs[i] = repl[node]
            expr.outputs[i].expr = expr


def _inline(parent_graph, graph, call, module):
    """The exprs of ``graph`` (called by ``call`` in ``parent_graph``, or the top graph when
    ``call`` is None), its own traced calls inlined, its nodes renamed into the parent."""
    repl, node2obj, keep_names = {}, {}, []
    if call is not None:
        graph = copy.deepcopy(graph)
        node2obj[call.inputs[0]] = module
        repl = dict(zip(graph._inputs, call.inputs))
        for ind, out in enumerate(graph.outputs):
            call_out = call.outputs[ind]
            if isinstance(out.expr, Input):
                # the subgraph returns one of its inputs: readers of the call's output read
                # the argument itself
                for user in call_out.users:
                    for i, inp in enumerate(user.inputs):
                        if inp is call_out:
                            user.inputs[i] = repl[out]
                            repl[out].users.append(user)
                for i, parent_out in enumerate(parent_graph._outputs):
                    if parent_out is call_out:
                        parent_graph._outputs[i] = repl[out]
                continue
            repl[out] = call_out
            if isinstance(out, TensorNode):
                call_out._qualname = out._qualname
        for node, new in repl.items():
            new.users.extend(node.users)
        keep_names = list(chain(call.inputs, call.outputs))
    node2obj[graph._inputs[0]] = module
    prefix = call.inputs[0]._name if call is not None else ""
    flat = []
    for expr in graph._exprs:
        exprs = [expr]
        if call is not None:
            _replace_io(expr, repl)
        if isinstance(expr, GetAttr):
            node2obj[expr.outputs[0]] = expr.interpret(node2obj[expr.inputs[0]])[0]
        if isinstance(expr, CallMethod):
            target = expr.inputs[0]
            if isinstance(target, ModuleNode) and isinstance(target.expr, GetAttr):
                obj = node2obj[target]
                sub = getattr(obj, "argdef_graph_map", None)
                if sub is not None and not obj.is_qat:
                    exprs = _inline(graph, sub[expr.arg_def], expr, obj)
        if parent_graph is not None:
            for node in expr.outputs:
                name = node._name
                if node not in keep_names:
                    name = f"{prefix}_{name}"
                node._name = parent_graph._namespace.create_unique_name(name, node)
        flat.extend(exprs)
    if call is not None:
        for node in call.inputs:
            node.users.remove(call)
    return flat


def flatten_module(module):
    """A flattened deep copy of the TracedModule ``module``."""
    new = copy.deepcopy(module)
    graph = new.graph
    graph._exprs = _inline(None, graph, None, new)
    graph._re_associate_name()
    graph.compile()
    new._update_ref()
    graph._reset_ids()
    return new
