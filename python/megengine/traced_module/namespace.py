"""The names of a graph's nodes: unique identifiers derived from what made each node
(``conv1_out`` for a module call, ``add_out`` for ``__add__``, ``relu_out`` for ``F.relu``),
with ``_1``, ``_2``... on repeats, as MegEngine names them."""

import builtins
import keyword
import re

from .expr import (
    get_suffix_name,
    is_apply_def,
    is_call_function,
    is_call_module,
    is_call_tensor_method,
    is_constant,
    is_getattr,
    is_input,
)
from .node import NameInUseError


def _is_builtin_name(name):
    return name in builtins.__dict__ or name in keyword.kwlist or name in {"inf", "nan", "NoneType"}


class NameSpace:
    """The names used in one graph, each mapped to its node (or None once released)."""

    def __init__(self, name, qualname):
        self.name = name
        self.qualname = qualname
        self._used_names = {}

    def create_unique_name(self, name, node=None):
        """``name`` made an identifier and unique here (a ``_<n>`` suffix), associated with
        ``node`` when given."""
        if not isinstance(name, str):
            raise TypeError("a name must be a string")
        if name in self._used_names and self._used_names[name] is node:
            return name
        name = re.sub("[^0-9a-zA-Z_]+", "_", name)
        if name[0].isdigit():
            name = f"_{name}"
        while self._used_names.get(name) is not None or _is_builtin_name(name):
            match = re.match(r"(.*)_(\d+)$", name)
            if match is None:
                name = name + "_1"
            else:
                base, num = match.group(1, 2)
                name = f"{base}_{int(num) + 1}"
        self._used_names.setdefault(name)
        if node is not None:
            self.associate_name_with_obj(name, node)
        return name

    def auto_naming_for_outputs(self, expr):
        """Names the outputs of ``expr`` (and sets their qualified names)."""
        suffix = "_out"
        if is_call_module(expr):
            call_node = expr.inputs[0]
            qualname = f"{call_node.qualname}.[out]"
            name = call_node.name
        elif is_call_tensor_method(expr):
            name = expr.method.strip("_")
            qualname = f"{self.qualname}.[{self.create_unique_name('method_' + name)}]"
        elif is_call_function(expr):
            name = expr.func.__name__
            qualname = f"{self.qualname}.[{self.create_unique_name('func_' + name)}]"
        elif is_apply_def(expr):
            # MegEngine names an Elemwise after its mode (mul_out), other ops after their class
            mode = getattr(expr.opdef, "mode", None)
            name = type(expr.opdef).__name__.lower()
            if name == "elemwise" and mode is not None:
                name = mode.name.lower()
            qualname = f"{self.qualname}.[{self.create_unique_name('def_' + name)}]"
        elif is_getattr(expr):
            qualname = f"{expr.inputs[0].qualname}.{expr.name}"
            name = get_suffix_name(self.qualname, qualname)
            suffix = ""
        elif is_constant(expr) or is_input(expr):
            name = expr.name if expr.name else "const_" + type(expr.value).__name__.lower()
            qualname = f"{self.qualname}.[{name}]"
            suffix = ""
        else:
            raise TypeError(f"cannot name the outputs of {type(expr).__name__}")
        for node in expr.outputs:
            node._name = self.create_unique_name(node._name if node._name else name + suffix, node)
            if node._qualname == "":
                node._qualname = qualname

    def merge(self, other):
        self._used_names.update(other.used_names)

    def associate_name_with_obj(self, name, node):
        if self._used_names.get(name) is not None:
            raise NameInUseError(f"the name {name} is already in use")
        self._used_names[name] = node

    def unassociate_name_with_obj(self, node):
        if node.name in self._used_names:
            self._used_names[node.name] = None

    @property
    def used_names(self):
        return self._used_names
