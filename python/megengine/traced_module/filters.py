"""Iterators over a graph's Exprs and Nodes (recursing into the graphs of called traced
modules) and the chainable filters that ``InternalGraph``'s queries return."""

import collections
import fnmatch
import re

from .expr import CallFunction, CallMethod
from .node import ModuleNode


def iter_exprs(graph, recursive=True, _visited=None):
    """The graph's Exprs: its Input exprs, then each expr, followed (recursively) by the
    exprs of the graph it calls."""
    visited = set() if _visited is None else _visited
    seen_inputs = set()
    for node in graph.inputs:
        if id(node) not in seen_inputs:
            seen_inputs.add(id(node))
            yield node.expr
    for expr in graph._exprs:
        yield expr
        sub = getattr(expr, "graph", None) if recursive else None
        if sub is not None and id(sub) not in visited:
            visited.add(id(sub))
            yield from iter_exprs(sub, recursive, visited)


def iter_nodes(graph, recursive=True):
    """The outputs of the graph's Exprs, in ``iter_exprs`` order, each once."""
    seen = set()
    for expr in iter_exprs(graph, recursive):
        for node in expr.outputs:
            if id(node) not in seen:
                seen.add(id(node))
                yield node


class BaseFilter:
    r"""An iterator of Exprs or Nodes with conversions (``as_list``, ``as_dict``,
    ``as_unique``, ``as_count``)."""

    def __init__(self, iterable):
        self._iter = iterable

    def __iter__(self):
        return iter(self._iter)

    def as_list(self):
        r"""The elements as a list."""
        return list(self)

    def as_dict(self):
        r"""An OrderedDict from ``_id`` to element."""
        return collections.OrderedDict((i._id, i) for i in self)

    def as_unique(self):
        r"""The only element (an AssertionError when there are none or several)."""
        rst = self.as_list()
        assert len(rst) == 1, f"{len(rst)} elements found"
        return rst[0]

    def as_count(self):
        r"""The number of elements."""
        return sum(1 for _ in self)


class ExprFilter(BaseFilter):
    r"""Exprs, filterable by function, method or id."""

    def call_function(self, func):
        return ExprFilterCallFunction(self, func)

    def call_method(self, method):
        return ExprFilterCallMethod(self, method)

    def expr_id(self, expr_id):
        return ExprFilterExprId(self, expr_id)


class NodeFilter(BaseFilter):
    r"""Nodes, filterable by module type, id or name."""

    def type(self, owner_type):
        return NodeFilterType(self, owner_type)

    def node_id(self, node_id):
        return NodeFilterNodeId(self, node_id)

    def name(self, name, ignorecase=True):
        return NodeFilterName(self, name, ignorecase)


class NodeFilterType(NodeFilter):
    r"""ModuleNodes whose module is an instance of ``owner_type``."""

    def __init__(self, node_iter, owner_type):
        super().__init__(node_iter)
        self.owner_type = owner_type

    def __iter__(self):
        for node in self._iter:
            if isinstance(node, ModuleNode) and isinstance(node.owner, self.owner_type):
                yield node


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple, set)) else [value]


class NodeFilterNodeId(NodeFilter):
    r"""Nodes of the given ids."""

    def __init__(self, node_iter, node_id):
        super().__init__(node_iter)
        self.node_id = _as_list(node_id)

    def __iter__(self):
        return (n for n in self._iter if n._id in self.node_id)


class NodeFilterName(NodeFilter):
    r"""Nodes whose full name (``<graph>_<node>``) matches a glob pattern."""

    def __init__(self, node_iter, pattern, ignorecase):
        super().__init__(node_iter)
        if not isinstance(pattern, str):
            raise TypeError(f"bad pattern: {pattern!r}")
        self.pattern = pattern
        self._re = re.compile(fnmatch.translate(pattern), re.IGNORECASE if ignorecase else 0)

    def __iter__(self):
        for node in self._iter:
            name = f"{node.top_graph._name}_{node._name}"
            if self.pattern == name or self._re.match(name):
                yield node


class ExprFilterCallFunction(ExprFilter):
    r"""CallFunction exprs (of ``func`` when given)."""

    def __init__(self, expr_iter, func=None):
        super().__init__(expr_iter)
        self.func = func

    def __iter__(self):
        for expr in self._iter:
            if isinstance(expr, CallFunction) and (self.func is None or expr.func == self.func):
                yield expr


class ExprFilterCallMethod(ExprFilter):
    r"""CallMethod exprs (of ``method`` when given)."""

    def __init__(self, expr_iter, method=None):
        super().__init__(expr_iter)
        self.method = method

    def __iter__(self):
        for expr in self._iter:
            if isinstance(expr, CallMethod) and (self.method is None or expr.method == self.method):
                yield expr


class ExprFilterExprId(ExprFilter):
    r"""Exprs of the given ids."""

    def __init__(self, expr_iter, expr_id):
        super().__init__(expr_iter)
        self.expr_id = _as_list(expr_id)

    def __iter__(self):
        return (e for e in self._iter if e._id in self.expr_id)
