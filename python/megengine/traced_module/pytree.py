"""Pytrees: the nested tuples, lists, dicts (and registered types) that a traced module takes
and returns, flattened into leaves and a :class:`TreeDef` that rebuilds them.

A TreeDef is hashable and compares by structure and by the values of its constant leaves
(ints, strings, None...), so that ``TracedModule.forward`` finds the graph recorded for the
same argument structure."""

import collections
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from functools import partial
from inspect import FullArgSpec
from typing import Any, NamedTuple

import numpy as np

from ..core.comp_node import CompNode
from ..core.tensor.dtype import QuantDtypeMeta
from ..distributed.group import Group
from ..module import Module
from ..quantization.utils import LSQParams, QParams, QuantMode
from ..tensor import Parameter, Tensor

__all__ = ["ArgsIndex", "LeafDef", "TreeDef", "register_supported_type", "tree_flatten"]


class ArgsIndex:
    """A placeholder leaf standing for the ``index``-th argument of a call.

    Args:
        index: the argument's position.
        name: what it prints as.

    Examples:
        >>> from megengine.traced_module.pytree import ArgsIndex
        >>> ArgsIndex(1, "x"), ArgsIndex(2).index
        (x, 2)
    """

    def __init__(self, index=0, name=""):
        self.index = index
        self.name = name

    def __repr__(self):
        return self.name


class NodeType(NamedTuple):
    flatten: Callable
    unflatten: Callable


# type -> NodeType: containers whose children are flattened
SUPPORTED_TYPE = {}
# exact types that are leaves
SUPPORTED_LEAF_TYPE = {
    Tensor,
    Parameter,
    str,
    int,
    float,
    bool,
    complex,
    bytes,
    bytearray,
    type(None),
    type(Ellipsis),
    ArgsIndex,
    # what QAT modules pass their quantizers, and a TracedModule's argspec (MegEngine's)
    QuantDtypeMeta,
    QuantMode,
    FullArgSpec,
    # a device argument (Tensor.to(x.device)) and a collective's group, as MegEngine's
    CompNode,
    Group,
}
# classes whose instances (or subclasses) are leaves
SUPPORTED_LEAF_CLS = [Module, np.dtype, np.ndarray, np.number, np.bool_, type]
# what users registered, kept in a pickled TracedModule's dump_info
USER_REGISTERED_LEAF_TYPE = []
USER_REGISTERED_CONTAINER_TYPE = []


def register_supported_type(
    type,
    flatten_fn: Callable[[Any], tuple[list, Any]] | None = None,
    unflatten_fn: Callable[[list, Any], Any] | None = None,
):
    r"""Registers ``type`` for the arguments and results of a traced module: a container (with
    ``flatten_fn`` and ``unflatten_fn``) or, without them, a constant leaf.

    Args:
        type: the type to register.
        flatten_fn: ``obj -> (children, context)``; the context must be hashable.
        unflatten_fn: ``(children, context) -> obj``.

    Returns:
        None.

    Examples:
        >>> import collections
        >>> from megengine.traced_module import register_supported_type
        >>> from megengine.traced_module.pytree import tree_flatten
        >>> Pair = collections.namedtuple("Pair", "a b")
        >>> leaves, tree = tree_flatten(Pair(1, [2, 3]))
        >>> leaves, tree.unflatten([4, 5, 6])
        ([1, 2, 3], Pair(a=4, b=[5, 6]))
        >>> class Box:
        ...     def __init__(self, v):
        ...         self.v = v
        >>> register_supported_type(Box, lambda b: ([b.v], None), lambda xs, _: Box(xs[0]))
        >>> tree_flatten(Box(7))[0]
        [7]
    """
    info = (type.__module__, type.__qualname__)
    if flatten_fn and unflatten_fn:
        USER_REGISTERED_CONTAINER_TYPE.append(info)
    else:
        USER_REGISTERED_LEAF_TYPE.append(info)
    _register_supported_type(type, flatten_fn, unflatten_fn)


def _register_supported_type(type, flatten_fn=None, unflatten_fn=None):
    if flatten_fn and unflatten_fn:
        SUPPORTED_TYPE[type] = NodeType(flatten_fn, unflatten_fn)
    else:
        SUPPORTED_LEAF_CLS.append(type)


def _dict_flatten(ordered, inp):
    items = inp.items() if ordered else sorted(inp.items(), key=lambda kv: kv[0])
    keys, values = [], []
    for key, value in items:
        keys.append(key)
        values.append(value)
    return values, tuple(keys)


def _dict_unflatten(dict_type, values, keys):
    return dict_type(zip(keys, values))


def _namedtuple_flatten(inp):
    return list(inp), None


def _namedtuple_unflatten(cls, values, _):
    return cls(*values)


_register_supported_type(list, lambda x: (x, None), lambda x, _: list(x))
_register_supported_type(tuple, lambda x: (x, None), lambda x, _: tuple(x))
_register_supported_type(dict, partial(_dict_flatten, False), partial(_dict_unflatten, dict))
_register_supported_type(
    defaultdict, partial(_dict_flatten, False), partial(_dict_unflatten, defaultdict)
)
_register_supported_type(
    OrderedDict, partial(_dict_flatten, True), partial(_dict_unflatten, OrderedDict)
)
_register_supported_type(
    slice, lambda x: ([x.start, x.stop, x.step], None), lambda x, _: slice(x[0], x[1], x[2])
)


def _qparams_slots(cls):
    return tuple(k for c in reversed(cls.__mro__) for k in c.__dict__.get("__slots__", ()))


def _qparams_flatten(qparams):
    keys = _qparams_slots(type(qparams))
    return [getattr(qparams, k, None) for k in keys], keys


def _qparams_unflatten(cls, values, keys):
    result = cls.__new__(cls)
    for k, v in zip(keys, values):
        setattr(result, k, v)
    return result


# a quantizer's qparams argument: its scale and zero point are Tensors the graph follows
_register_supported_type(QParams, _qparams_flatten, partial(_qparams_unflatten, QParams))
_register_supported_type(LSQParams, _qparams_flatten, partial(_qparams_unflatten, LSQParams))


def _node_classes():
    from .node import ModuleNode, Node, TensorNode

    return Node, ModuleNode, TensorNode


def _is_leaf(obj):
    from .node import Node

    obj_type = obj if isinstance(obj, type) else type(obj)
    return (
        obj_type in SUPPORTED_LEAF_TYPE
        or issubclass(obj_type, tuple(SUPPORTED_LEAF_CLS))
        or issubclass(obj_type, (Tensor, Node))
        or getattr(obj, "_is_traced_builder", False)
    )


def _leaf_type(leaf):
    _Node, ModuleNode, TensorNode = _node_classes()
    if isinstance(leaf, (Tensor, TensorNode)):
        return (Tensor, TensorNode, ArgsIndex)
    if isinstance(leaf, (Module, ModuleNode)) or getattr(leaf, "_is_traced_builder", False):
        return (Module, ModuleNode, ArgsIndex)
    if isinstance(leaf, type):  # a class (whose metaclass may not pickle)
        return (type, ArgsIndex)
    return (type(leaf), ArgsIndex)


def _is_const_leaf(leaf):
    Node, _, _ = _node_classes()
    return not (
        isinstance(leaf, (Tensor, Node, Module)) or getattr(leaf, "_is_traced_builder", False)
    )


def _flatten_fns(values):
    fns = SUPPORTED_TYPE.get(type(values))
    if fns is None and isinstance(values, tuple) and hasattr(type(values), "_fields"):
        # any namedtuple, rebuilt as its own class
        fns = NodeType(_namedtuple_flatten, partial(_namedtuple_unflatten, type(values)))
        SUPPORTED_TYPE[type(values)] = fns
    return fns


def tree_flatten(
    values,
    leaf_type: Callable = _leaf_type,
    is_leaf: Callable = _is_leaf,
    is_const_leaf: Callable = _is_const_leaf,
):
    r"""Flattens a pytree into its leaves and the :class:`TreeDef` that rebuilds it.

    Args:
        values: the pytree.
        leaf_type: the types a leaf may be replaced by in ``unflatten``.
        is_leaf: which objects are leaves (others must be registered containers).
        is_const_leaf: which leaves are constants, compared by value in the TreeDef.

    Returns:
        ``(leaves, treedef)``.

    Examples:
        >>> from megengine.traced_module.pytree import tree_flatten
        >>> leaves, tree = tree_flatten(((1, "a"), {"k": [2.0]}))
        >>> leaves
        [1, 'a', 2.0]
        >>> tree  # constant leaves print as MegEngine's: str()
        ((1, a), {'k':[2.0]})
        >>> tree.unflatten([7, "b", 3.0])
        ((7, 'b'), {'k': [3.0]})
    """
    fns = _flatten_fns(values)
    if fns is None:
        if not is_leaf(values):
            raise TypeError(
                f"traced_module does not support {type(values).__name__} objects ({values!r}): "
                "use Tensors, Python constants and containers, or register the type with "
                "megengine.traced_module.register_supported_type"
            )
        node = LeafDef(leaf_type(values))
        if is_const_leaf(values):
            node.const_val = values
        return [values], node
    leaves, children = [], []
    children_values, aux_data = fns.flatten(values)
    for v in children_values:
        v_leaves, treedef = tree_flatten(v, leaf_type, is_leaf, is_const_leaf)
        leaves.extend(v_leaves)
        children.append(treedef)
    return leaves, TreeDef(type(values), aux_data, children)


class TreeDef:
    r"""The structure of a pytree: its root's type, the context to rebuild it and the TreeDef of
    each child.

    Args:
        type: the root's type.
        aux_data: the context ``flatten_fn`` returned (dict keys...).
        children_defs: one TreeDef per child.

    Examples:
        >>> from megengine.traced_module.pytree import tree_flatten
        >>> _, tree = tree_flatten({"b": [1, 2], "a": 3})
        >>> tree, tree.num_leaves, tree.type.__name__
        ({'a':3, 'b':[1, 2]}, 3, 'dict')
        >>> tree == tree_flatten({"a": 3, "b": [1, 2]})[1]
        True
    """

    def __init__(self, type, aux_data, children_defs):
        self.type = type
        self.aux_data = aux_data
        self.children_defs = children_defs
        self.num_leaves = sum(ch.num_leaves for ch in children_defs)

    def unflatten(self, leaves):
        r"""Rebuilds the pytree with ``leaves`` in place of the flattened ones."""
        if len(leaves) != self.num_leaves:
            raise ValueError(f"{self!r} takes {self.num_leaves} leaves, got {len(leaves)}")
        start, children = 0, []
        for ch in self.children_defs:
            children.append(ch.unflatten(leaves[start : start + ch.num_leaves]))
            start += ch.num_leaves
        return _flatten_fns_of(self.type).unflatten(children, self.aux_data)

    def __hash__(self):
        return hash((self.type, self.aux_data, self.num_leaves, tuple(self.children_defs)))

    def __ne__(self, other):
        return not self.__eq__(other)

    def __eq__(self, other):
        return (
            isinstance(other, TreeDef)
            and self.type == other.type
            and self.aux_data == other.aux_data
            and self.num_leaves == other.num_leaves
            and self.children_defs == other.children_defs
        )

    def _args_kwargs_repr(self):
        if (
            len(self.children_defs) == 2
            and issubclass(self.children_defs[0].type, (list, tuple))
            and issubclass(self.children_defs[1].type, dict)
        ):
            args_def, kwargs_def = self.children_defs
            content = ", ".join(repr(i) for i in args_def.children_defs)
            if kwargs_def.aux_data:
                content += ", " + ", ".join(
                    f"{k}={v!r}" for k, v in zip(kwargs_def.aux_data, kwargs_def.children_defs)
                )
            return content
        return repr(self)

    def __repr__(self):
        fmt, sep = self.type.__name__ + "({})", "="
        if issubclass(self.type, list):
            fmt = "[{}]"
        elif issubclass(self.type, tuple) and not hasattr(self.type, "_fields"):
            fmt = "({})"
        elif issubclass(self.type, dict):
            fmt, sep = "{{{}}}", ":"
        if self.aux_data:
            content = ", ".join(
                repr(k) + sep + repr(v) for k, v in zip(self.aux_data, self.children_defs)
            )
        else:
            content = ", ".join(repr(ch) for ch in self.children_defs)
        return fmt.format(content)


def _resolve(module, qualname):
    from importlib import import_module

    obj = import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _flatten_fns_of(tp):
    fns = SUPPORTED_TYPE.get(tp)
    if fns is None:
        raise TypeError(f"{tp.__name__} is not a registered traced_module container")
    return fns


class LeafDef(TreeDef):
    """A leaf of a TreeDef: the types it may take and, for a constant, its value (which the
    TreeDef compares).

    Args:
        type: the class, or classes, the leaf may be.

    Examples:
        >>> import megengine as mge
        >>> from megengine.traced_module.pytree import tree_flatten
        >>> tree_flatten(mge.Tensor(1.0))[1], tree_flatten(2)[1].const_val
        (Tensor, 2)
    """

    def __init__(self, type):
        if not isinstance(type, collections.abc.Sequence):
            type = (type,)
        super().__init__(type, None, [])
        self.num_leaves = 1
        self.const_val = None

    def unflatten(self, leaves):
        if len(leaves) != 1:
            raise ValueError(f"a leaf takes one value, got {len(leaves)}")
        if not isinstance(leaves[0], self.type):
            raise TypeError(f"expected {self.type}, got {type(leaves[0]).__name__}")
        return leaves[0]

    def __eq__(self, other):
        if not isinstance(other, LeafDef) or self.type != other.type:
            return False
        if isinstance(self.const_val, np.ndarray) or isinstance(other.const_val, np.ndarray):
            return np.array_equal(self.const_val, other.const_val)
        return type(self.const_val) is type(other.const_val) and self.const_val == other.const_val

    def __hash__(self):
        if isinstance(self.const_val, np.ndarray):
            return hash((self.type, str(self.const_val)))
        try:
            return hash((self.type, self.const_val))
        except TypeError:
            return hash((self.type, repr(self.const_val)))

    def __getstate__(self):
        # classes by name: megengine.load stands Tensor classes in for tensors being rebuilt,
        # which must not replace the classes this leaf compares with
        state = dict(self.__dict__)
        state["type"] = tuple(
            (t.__module__, t.__qualname__) if issubclass(t, Tensor) else t for t in self.type
        )
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.type = tuple(_resolve(*t) if isinstance(t, tuple) else t for t in self.type)

    def __repr__(self):
        if self.const_val is not None or type(None) in self.type:
            return f"{self.const_val}"
        return self.type[0].__name__
