"""The queries of :class:`megengine.utils.network.Network`: :class:`NodeFilter` and its chained
filters over op and var nodes, :func:`as_varnode` and :func:`as_oprnode`, and the topological
order of what some vars depend on."""

import collections
import fnmatch
import re

from .network_node import Host2DeviceCopy, ImmutableTensor, NetworkNode, OpNode, VarNode

__all__ = [
    "NodeFilter",
    "NodeFilterCheckType",
    "NodeFilterHasInput",
    "NodeFilterName",
    "NodeFilterNotType",
    "NodeFilterType",
    "as_oprnode",
    "as_varnode",
]


def _example():
    """The vars of the docstring examples: inputs a and b, and o = (a + b) * 2 (int32, (2,))."""
    a = Host2DeviceCopy((2,), "int32", "a").outputs[0]
    b = Host2DeviceCopy((2,), "int32", "b").outputs[0]
    o = (a + b) * 2
    o.name = "o"
    return a, b, o


def _topo_oprs(dest_vars):
    """The op nodes ``dest_vars`` depend on, each after the nodes computing its inputs."""
    order, state = [], {}  # state: id -> 1 while its inputs are visited, 2 when placed
    for var in dest_vars:
        if var.owner is None:
            raise ValueError(f"{var!r} has no owner op node: it is not a var of a model")
        stack = [(var.owner, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                state[id(node)] = 2
                order.append(node)
                continue
            if state.get(id(node)) == 2:
                continue
            state[id(node)] = 1
            stack.append((node, True))
            for v in reversed(node.inputs):
                if v.owner is None:
                    raise ValueError(f"{v!r}, an input of {node!r}, has no owner op node")
                s = state.get(id(v.owner))
                if s == 1:  # expanded, not yet placed: on the path to this node
                    raise ValueError(f"cyclic graph: {node!r} depends on its own output")
                if s is None:
                    stack.append((v.owner, False))
    return order


def _dep_vars(dest_vars):
    out, seen = [], set()
    for node in _topo_oprs(dest_vars):
        for v in node.outputs:
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


def as_varnode(obj):
    """``obj`` as a :class:`~.network_node.VarNode`: a VarNode, an op node with one output, or
    an iterable of one of those.

    Args:
        obj: the object.

    Returns:
        a VarNode.

    Examples:
        >>> a, b, o = _example()
        >>> as_varnode(a.owner).name
        'a'
    """
    if isinstance(obj, VarNode):
        return obj
    if isinstance(obj, OpNode):
        if len(obj.outputs) != 1:
            raise ValueError(
                f"operator {obj!r} must have one output to be converted to VarNode; "
                f"got {len(obj.outputs)}"
            )
        return obj.outputs[0]
    if not isinstance(obj, collections.abc.Iterable):
        raise TypeError(f"{obj!r} is not compatible with VarNode")
    val = list(obj)
    if len(val) != 1:
        raise ValueError(f"can not convert a sequence of length {len(val)} to VarNode")
    return as_varnode(val[0])


def as_oprnode(obj):
    """``obj`` as an :class:`~.network_node.OpNode`: an op node, a var (its owner), or an
    iterable of one of those.

    Args:
        obj: the object.

    Returns:
        an OpNode.

    Examples:
        >>> a, b, o = _example()
        >>> as_oprnode([o]).params
        {'mode': 'MUL'}
    """
    if isinstance(obj, VarNode):
        return obj.owner
    if isinstance(obj, OpNode):
        return obj
    if not isinstance(obj, collections.abc.Iterable):
        raise TypeError(f"{obj!r} is not compatible with OpNode")
    val = list(obj)
    if len(val) != 1:
        raise ValueError(f"can not convert a sequence of length {len(val)} to OpNode")
    return as_oprnode(val[0])


class NodeFilter:
    """An iterator over network nodes whose filters chain: ``type``, ``not_type``,
    ``check_type``, ``param_provider``, ``data_provider``, ``name``, ``has_input``; and
    ``as_list``, ``as_unique``, ``as_dict``, ``as_count`` to consume it.

    Args:
        node_iter: an iterable of nodes; or a VarNode (an OpNode), for the op nodes it (its
            inputs) depend on, its own owner (itself) excluded.

    Examples:
        >>> a, b, o = _example()  # o = (a + b) * 2
        >>> NodeFilter.make_all_deps(o).data_provider().name("A").as_count()
        1
    """

    def __init__(self, node_iter):
        if isinstance(node_iter, VarNode):
            node_iter = _topo_oprs([node_iter])[:-1]
        elif isinstance(node_iter, OpNode):
            node_iter = _topo_oprs(node_iter.inputs)
        if not isinstance(node_iter, collections.abc.Iterable):
            raise TypeError(f"NodeFilter: {node_iter!r} is not iterable")
        if not isinstance(node_iter, NodeFilter) and type(self) is not NodeFilterCheckType:
            node_iter = NodeFilterCheckType(node_iter, NetworkNode)
        self._iter = node_iter

    @classmethod
    def make_all_deps(cls, *dest_vars):
        """A filter over the op nodes ``dest_vars`` depend on.

        Args:
            dest_vars: VarNodes.

        Returns:
            a :class:`NodeFilter`.

        Examples:
            >>> a, b, o = _example()  # o = (a + b) * 2
            >>> NodeFilter.make_all_deps(o).as_count()
            5
        """
        return cls(_topo_oprs(dest_vars))

    def __iter__(self):
        return iter(self._iter)

    def type(self, node_type):
        """Keeps the nodes of class ``node_type``.

        Args:
            node_type: a :class:`~.network_node.NetworkNode` subclass.

        Returns:
            a :class:`NodeFilter`.

        Examples:
            >>> import megengine.utils.network_node as N
            >>> a, b, o = _example()  # o = (a + b) * 2
            >>> NodeFilter.make_all_deps(o).type(N.Elemwise).as_count()
            2
        """
        return NodeFilterType(self, node_type)

    def check_type(self, node_type):
        """Passes the nodes on, raising TypeError at one that is not a ``node_type``.

        Args:
            node_type: a :class:`~.network_node.NetworkNode` subclass.

        Returns:
            a :class:`NodeFilter`.

        Examples:
            >>> import megengine.utils.network_node as N
            >>> a, b, o = _example()  # o = (a + b) * 2
            >>> NodeFilter.make_all_deps(o).check_type(N.OpNode).as_count()
            5
        """
        return NodeFilterCheckType(self, node_type)

    def not_type(self, node_type):
        """Drops the nodes of class ``node_type``.

        Args:
            node_type: a :class:`~.network_node.NetworkNode` subclass.

        Returns:
            a :class:`NodeFilter`.

        Examples:
            >>> import megengine.utils.network_node as N
            >>> a, b, o = _example()  # o = (a + b) * 2
            >>> NodeFilter.make_all_deps(o).not_type(N.Elemwise).as_count()
            3
        """
        return NodeFilterNotType(self, node_type)

    def param_provider(self):
        """Keeps the constants (:class:`~.network_node.ImmutableTensor`).

        Returns:
            a :class:`NodeFilter`.

        Examples:
            >>> a, b, o = _example()  # o = (a + b) * 2
            >>> NodeFilter.make_all_deps(o).param_provider().as_count()
            1
        """
        return self.type(ImmutableTensor)

    def data_provider(self):
        """Keeps the inputs (:class:`~.network_node.Host2DeviceCopy`).

        Returns:
            a :class:`NodeFilter`.

        Examples:
            >>> a, b, o = _example()  # o = (a + b) * 2
            >>> NodeFilter.make_all_deps(o).data_provider().as_count()
            2
        """
        return self.type(Host2DeviceCopy)

    def name(self, pattern, ignorecase=True):
        """Keeps the nodes whose name is ``pattern`` or matches it as a glob (``?``, ``*``).

        Args:
            pattern: the name or glob pattern.
            ignorecase: match regardless of case.

        Returns:
            a :class:`NodeFilter`.

        Examples:
            >>> a, b, o = _example()
            >>> [v.name for v in NodeFilter([a, b, o]).name("[ab]")]
            ['a', 'b']
        """
        return NodeFilterName(self, pattern, ignorecase)

    def has_input(self, var):
        """Keeps the op nodes that read ``var``.

        Args:
            var: a VarNode (or what :func:`as_varnode` takes).

        Returns:
            a :class:`NodeFilter`.

        Examples:
            >>> a, b, o = _example()  # o = (a + b) * 2
            >>> NodeFilter.make_all_deps(o).has_input(b).as_unique().params
            {'mode': 'ADD'}
        """
        return NodeFilterHasInput(self, var)

    def as_list(self):
        """The nodes as a list.

        Returns:
            a list.

        Examples:
            >>> a, b, o = _example()  # o = (a + b) * 2
            >>> len(NodeFilter.make_all_deps(o).as_list())
            5
        """
        return list(self)

    def as_unique(self):
        """The one node; ValueError when there is not exactly one.

        Returns:
            the node.

        Examples:
            >>> a, b, o = _example()
            >>> NodeFilter([a, b, o]).name("o").as_unique()
            VarNode:o
        """
        found = list(self)
        if len(found) != 1:
            raise ValueError(f"as_unique: {len(found)} nodes found, expected one")
        return found[0]

    def as_dict(self):
        """The nodes by name, in order (an ``OrderedDict``).

        Returns:
            an ``OrderedDict``.

        Examples:
            >>> a, b, o = _example()
            >>> list(NodeFilter([a, b, o]).as_dict())
            ['a', 'b', 'o']
        """
        return collections.OrderedDict((n.name, n) for n in self)

    def as_count(self):
        """The number of nodes.

        Returns:
            an int.

        Examples:
            >>> a, b, o = _example()
            >>> NodeFilter([a, b, o]).as_count()
            3
        """
        return sum(1 for _ in self)


class NodeFilterType(NodeFilter):
    """See :meth:`NodeFilter.type`.

    Args:
        node_iter: the nodes.
        node_type: the class to keep.

    Examples:
        >>> import megengine.utils.network_node as N
        >>> a, b, o = _example()  # o = (a + b) * 2
        >>> NodeFilterType(_topo_oprs([o]), N.Host2DeviceCopy).as_count()
        2
    """

    def __init__(self, node_iter, node_type):
        if not (isinstance(node_type, type) and issubclass(node_type, NetworkNode)):
            raise TypeError(f"bad node type: {node_type!r}")
        super().__init__(node_iter)
        self._node_type = node_type

    def __iter__(self):
        return (i for i in self._iter if isinstance(i, self._node_type))


class NodeFilterNotType(NodeFilterType):
    """See :meth:`NodeFilter.not_type`.

    Args:
        node_iter: the nodes.
        node_type: the class to drop.

    Examples:
        >>> import megengine.utils.network_node as N
        >>> a, b, o = _example()  # o = (a + b) * 2
        >>> NodeFilterNotType(_topo_oprs([o]), N.Host2DeviceCopy).as_count()
        3
    """

    def __iter__(self):
        return (i for i in self._iter if not isinstance(i, self._node_type))


class NodeFilterCheckType(NodeFilterType):
    """See :meth:`NodeFilter.check_type`.

    Args:
        node_iter: the nodes.
        node_type: the class every node must be.

    Examples:
        >>> import megengine.utils.network_node as N
        >>> a, b, o = _example()
        >>> NodeFilterCheckType([a.owner, a], N.OpNode).as_count()
        Traceback (most recent call last):
        ...
        TypeError: all nodes should be <class 'megengine.utils.network_node.OpNode'>; got VarNode:a
    """

    def __iter__(self):
        for i in self._iter:
            if not isinstance(i, self._node_type):
                raise TypeError(f"all nodes should be {self._node_type}; got {i!r}")
            yield i


class NodeFilterHasInput(NodeFilter):
    """See :meth:`NodeFilter.has_input`.

    Args:
        node_iter: the nodes.
        var: the var they must read.

    Examples:
        >>> a, b, o = _example()  # o = (a + b) * 2
        >>> NodeFilterHasInput(_topo_oprs([o]), a).as_count()
        1
    """

    def __init__(self, node_iter, var):
        var = as_varnode(var)
        super().__init__(node_iter)
        self.var = var

    def __iter__(self):
        for i in self._iter:
            if not isinstance(i, OpNode):
                raise TypeError(f"has_input() must be used with OpNode; got {i!r}")
            if any(self.var is v for v in i.inputs):
                yield i


class NodeFilterName(NodeFilter):
    """See :meth:`NodeFilter.name`.

    Args:
        node_iter: the nodes.
        pattern: the name or glob pattern.
        ignorecase: match regardless of case.

    Examples:
        >>> a, b, o = _example()
        >>> NodeFilterName([a, b, o], "O", True).as_count()
        1
    """

    def __init__(self, node_iter, pattern, ignorecase):
        super().__init__(node_iter)
        self.pattern = pattern
        self._re = self.make_re(pattern, ignorecase)

    @classmethod
    def make_re(cls, pattern, ignorecase=True):
        """The compiled regular expression of a glob pattern.

        Args:
            pattern: the glob pattern.
            ignorecase: match regardless of case.

        Returns:
            a compiled ``re`` pattern.

        Examples:
            >>> bool(NodeFilterName.make_re("conv*").match("Conv1.weight"))
            True
        """
        if not isinstance(pattern, str):
            raise TypeError(f"bad pattern: {pattern!r}")
        if not isinstance(ignorecase, bool):
            raise TypeError(f"ignorecase must be a bool, got {ignorecase!r}")
        return re.compile(fnmatch.translate(pattern), flags=re.IGNORECASE if ignorecase else 0)

    def __iter__(self):
        for i in self._iter:
            if i.name is not None and (self.pattern == i.name or self._re.match(i.name)):
                yield i
