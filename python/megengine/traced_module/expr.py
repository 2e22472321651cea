"""Exprs: the operations of a traced graph, each reading input Nodes (and constant arguments)
and producing output Nodes.

``Input`` marks a graph input, ``GetAttr`` reads a module's attribute, ``CallMethod`` calls a
module (``method == "__call__"``) or a Tensor method, ``CallFunction`` a function of
``megengine.functional`` (or one registered with ``wrap``), ``Apply`` an op, and ``Constant``
holds a Tensor or builtin Module that is no module attribute. Each can ``interpret`` itself on
values: that is how a TracedModule runs."""

import inspect
import weakref
from importlib import import_module

from ..core import _imperative_rt as _rt
from ..module import Module
from ..tensor import Parameter, Tensor
from . import tracer
from ._graph_item import _GraphItem
from .node import ModuleNode, TensorNode
from .pytree import _is_const_leaf, _is_leaf, tree_flatten
from .utils import convert_kwargs_to_args

__all__ = ["Apply", "CallFunction", "CallMethod", "Constant", "Expr", "GetAttr", "Input"]


def get_suffix_name(prefix, name):
    """``name`` without the dotted ``prefix`` ("" when equal, None when not a prefix)."""
    if prefix == name:
        return ""
    if name.startswith(prefix + "."):
        return name[len(prefix) + 1 :]
    return None


def is_call_module(expr, module_cls=None):
    """Whether ``expr`` calls a module (of class ``module_cls`` when given)."""
    return (
        isinstance(expr, CallMethod)
        and bool(expr.inputs)
        and isinstance(expr.inputs[0], ModuleNode)
        and expr.method == "__call__"
        and (module_cls is None or isinstance(expr.inputs[0].owner, module_cls))
    )


def is_call_tensor_method(expr, method=None):
    """Whether ``expr`` calls a Tensor method (one of ``method`` when given)."""
    if isinstance(method, str):
        method = (method,)
    return (
        isinstance(expr, CallMethod)
        and not is_call_module(expr)
        and (method is None or expr.method in method)
    )


def is_call_function(expr, func=None):
    """Whether ``expr`` calls a function (one of ``func`` when given)."""
    if func is not None and not isinstance(func, (list, tuple, set)):
        func = (func,)
    return isinstance(expr, CallFunction) and (func is None or expr.func in func)


def is_constant(expr):
    return isinstance(expr, Constant)


def is_getattr(expr):
    return isinstance(expr, GetAttr)


def is_apply_def(expr, opdef=None):
    return isinstance(expr, Apply) and (opdef is None or isinstance(expr.opdef, opdef))


def is_input(expr):
    return isinstance(expr, Input)


class Expr(_GraphItem):
    r"""An operation on Nodes: ``inputs`` (Nodes), ``const_val`` (the other arguments, with
    their positions), ``arg_def`` (the TreeDef rebuilding the call's ``(args, kwargs)``),
    ``outputs`` (Nodes) and ``out_def`` (the TreeDef rebuilding its result).

    Examples:
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> class Net(M.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = M.Linear(2, 2)
        ...         self.k = mge.Parameter([2.0, 3.0])
        ...     def forward(self, x):
        ...         return F.relu(self.fc(x)).sum(axis=1) * self.k[0] + mge.Tensor(1.0)
        >>> graph = tm.trace_module(Net(), mge.Tensor([[1.0, -1.0]])).graph
        >>> [type(e).__name__ for e in graph.exprs()]
        ['Input', 'Input', 'GetAttr', 'CallMethod', 'CallFunction', 'CallMethod', 'GetAttr', 'CallMethod', 'CallMethod', 'Constant', 'CallMethod']
        >>> expr = graph.get_function_by_type(F.relu).as_unique()
        >>> expr.args, expr.kwargs, expr.outputs
        ((fc_out,), {}, [relu_out])
    """

    inputs = None
    outputs = None
    const_val = None
    arg_def = None
    out_def = None
    _total_id = 0

    def __init__(self):
        self._take_id(Expr)
        self._disable_remove = False
        self.inputs = []
        self.outputs = []
        self.const_val = []

    def enable_remove(self):
        """Lets ``graph.compile()`` remove this expr when nothing reads its outputs."""
        self._disable_remove = False

    def disable_remove(self):
        """Keeps this expr through ``graph.compile()`` even when nothing reads its outputs."""
        self._disable_remove = True

    def add_inputs(self, vals):
        for val in vals if isinstance(vals, (list, tuple)) else (vals,):
            node = tracer.get_node(val, None)
            if isinstance(node, (TensorNode, ModuleNode)):
                self.inputs.append(node)
                node.users.append(self)
            else:
                if isinstance(val, (Module, Tensor)) or not (_is_leaf(val) and _is_const_leaf(val)):
                    raise TypeError(f"{type(val).__name__} cannot be a constant argument")
                self.const_val.append((len(self.inputs) + len(self.const_val), val))

    def add_outputs(self, outputs):
        self.outputs = []
        if outputs is None:
            return
        scope = tracer.active_module_tracer().current_scope()
        for value in outputs if isinstance(outputs, (list, tuple)) else (outputs,):
            if not isinstance(value, Tensor):
                raise TypeError(f"an output must be a Tensor, got {type(value).__name__}")
            node = TensorNode(self)
            tracer.bind(value, node)
            self.outputs.append(node)
        scope._namespace.auto_naming_for_outputs(self)

    def unflatten_args(self, inputs):
        if self.arg_def is None:
            raise ValueError(f"{type(self).__name__} expr has no args/kwargs")
        inputs = list(inputs)
        for idx, val in self.const_val:
            inputs.insert(idx, val)
        return self.arg_def.unflatten(inputs)

    @property
    def args(self):
        r"""The positional arguments of the call, Nodes in place of Tensors and Modules."""
        return self.unflatten_args(self.inputs)[0]

    @property
    def kwargs(self):
        r"""The keyword arguments of the call."""
        return self.unflatten_args(self.inputs)[1]

    def _get_func(self):
        raise NotImplementedError

    @property
    def named_args(self):
        r"""The call's arguments by parameter name."""
        return inspect.getcallargs(self._get_func(), *self.args, **self.kwargs)

    @property
    def _support_set_args_kwargs(self):
        return False

    def set_args_kwargs(self, *args, **kwargs):
        r"""Replaces the call's arguments (Nodes of the same graph, or constants)."""
        if not self._support_set_args_kwargs:
            raise TypeError(f"cannot set the args of a {type(self).__name__} expr")
        args, kwargs = convert_kwargs_to_args(self._get_func(), args, kwargs)
        leaves, arg_def = tree_flatten((args, kwargs))
        old = self.inputs
        self.inputs, self.const_val = [], []
        for val in leaves:
            if isinstance(val, (TensorNode, ModuleNode)):
                self.inputs.append(val)
            else:
                self.const_val.append((len(self.inputs) + len(self.const_val), val))
        for n in old:
            if n not in self.inputs:
                n.users.remove(self)
        for n in self.inputs:
            if n not in old:
                n.users.append(self)
        self.arg_def = arg_def

    def set_arg(self, name, val):
        r"""Replaces the argument of parameter ``name`` by ``val``."""
        kwargs = self.kwargs
        if name in kwargs:
            kwargs[name] = val
            self.set_args_kwargs(*self.args, **kwargs)
            return
        spec = inspect.getfullargspec(self._get_func())
        if name not in spec.args:
            raise ValueError(f"{self._get_func()} has no argument {name}")
        args = list(self.args)
        args[spec.args.index(name)] = val
        self.set_args_kwargs(*args, **kwargs)

    def replace_inputs(self, repl_dict):
        r"""Replaces input Nodes: ``{old: new}``, each new one made before this expr."""
        graph = self.top_graph
        for node, repl in list(repl_dict.items()):
            if type(node) is not type(repl):
                raise TypeError(
                    f"cannot replace a {type(node).__name__} by a {type(repl).__name__}"
                )
            if node not in self.inputs:
                raise ValueError(f"{node} is not an input of {self}")
            if not isinstance(repl.expr, Input) and graph._exprs.index(
                repl.expr
            ) >= graph._exprs.index(self):
                raise ValueError(f"{repl} must be made before {self}")
            self.inputs[self.inputs.index(node)] = repl
            node.users.remove(self)
            repl.users.append(self)
        repl_dict.clear()

    @property
    def return_val(self):
        return self.out_def.unflatten(self.outputs)

    @property
    def top_graph(self):
        r"""The graph that holds this expr."""
        return self._top_graph() if self._top_graph else None


class Input(Expr):
    r"""Marks an input of a graph: ``self`` (a ModuleNode) or an argument (a TensorNode).

    Args:
        type: the class of the output node (TensorNode or ModuleNode).
        name: the input's name.
        qualname: its qualified name.

    Examples:
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> class Net(M.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = M.Linear(2, 2)
        ...         self.k = mge.Parameter([2.0, 3.0])
        ...     def forward(self, x):
        ...         return F.relu(self.fc(x)).sum(axis=1) * self.k[0] + mge.Tensor(1.0)
        >>> graph = tm.trace_module(Net(), mge.Tensor([[1.0, -1.0]])).graph
        >>> [str(e) for e in graph.exprs() if type(e).__name__ == "Input"]
        ['%0:\tself = Input()', '%1:\tx = Input()']
    """

    def __init__(self, type, name="args", qualname=""):
        super().__init__()
        self.outputs = [type(self, name=name, qualname=qualname)]
        self.name = name

    @classmethod
    def make(cls, *args, **kwargs):
        graph = tracer.active_module_tracer().current_scope()
        expr = cls(*args, **kwargs)
        graph._namespace.auto_naming_for_outputs(expr)
        graph._add_input(expr.outputs[0])
        return expr.outputs[0]

    def __repr__(self):
        return f"%{self._id}:\t{self.outputs[0]} = Input()"


class GetAttr(Expr):
    r"""Reads attribute ``name`` (a dotted path: ``"layer1.conv1"``) of a module.

    Args:
        module: the ModuleNode of the module read.
        type: the class of the output node.
        attr_name: the attribute's name or dotted path.
        name: the output node's name ("" to derive it).

    Examples:
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> class Net(M.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = M.Linear(2, 2)
        ...         self.k = mge.Parameter([2.0, 3.0])
        ...     def forward(self, x):
        ...         return F.relu(self.fc(x)).sum(axis=1) * self.k[0] + mge.Tensor(1.0)
        >>> graph = tm.trace_module(Net(), mge.Tensor([[1.0, -1.0]])).graph
        >>> [e.name for e in graph.exprs() if type(e).__name__ == "GetAttr"]
        ['fc', 'k']
    """

    def __init__(self, module, type, attr_name, name=""):
        super().__init__()
        self.inputs = [module]
        module.users.append(self)
        self.name = attr_name
        self.outputs = [type(self, name=name, qualname=f"{module.qualname}.{attr_name}")]

    @classmethod
    def make(cls, *args, **kwargs):
        graph = tracer.active_module_tracer().current_scope()
        expr = cls(*args, **kwargs)
        graph._namespace.auto_naming_for_outputs(expr)
        graph._insert(expr)
        return expr.outputs[0]

    def interpret(self, *inputs):
        obj = inputs[0]
        for part in self.name.split("."):
            obj = obj[int(part)] if isinstance(obj, (list, tuple)) else _getattr_or_item(obj, part)
        return (obj,)

    def __repr__(self):
        out_type = "Tensor"
        if isinstance(self.outputs[0], ModuleNode):
            out_type = self.outputs[0].module_type.__name__
        return f'%{self._id}:\t{self.outputs[0]} = getattr({self.inputs[0]}, "{self.name}") -> ({out_type})'


def _getattr_or_item(obj, part):
    if isinstance(obj, dict):
        return obj[part]
    return getattr(obj, part)


def _is_class_ref(value):
    return isinstance(value, tuple) and len(value) == 3 and value[0] == "__class__"


class CallMethod(Expr):
    r"""Calls ``method`` of its first input: a module's ``__call__`` or a Tensor method.

    Args:
        node: the Node whose method is called.
        method: the method's name.

    Examples:
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> class Net(M.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = M.Linear(2, 2)
        ...         self.k = mge.Parameter([2.0, 3.0])
        ...     def forward(self, x):
        ...         return F.relu(self.fc(x)).sum(axis=1) * self.k[0] + mge.Tensor(1.0)
        >>> graph = tm.trace_module(Net(), mge.Tensor([[1.0, -1.0]])).graph
        >>> [e.method for e in graph.get_method_by_type()]
        ['__call__', 'sum', '__getitem__', '__mul__', '__add__']
    """

    def __init__(self, node, method="__call__"):
        super().__init__()
        if isinstance(node, type):
            # Tensor(...) / Parameter(...): the class is a constant first argument
            self.const_val = [(0, Parameter if issubclass(node, Parameter) else Tensor)]
        else:
            node.users.append(self)
            self.inputs = [node]
        self.arg_def = tree_flatten(((node,), {}))[1]
        self.method = method

    @classmethod
    def make(cls, *args, **kwargs):
        expr = cls(*args, **kwargs)
        tracer.active_module_tracer().current_scope()._insert(expr)
        return expr

    @property
    def graph(self):
        r"""The graph of the called traced module, or None."""
        if isinstance(self.inputs[0], ModuleNode):
            owner = self.inputs[0].owner
            graphs = getattr(owner, "argdef_graph_map", None)
            if graphs:
                return graphs.get(self.arg_def)
        return None

    def interpret(self, *inputs):
        args, kwargs = self.unflatten_args(inputs)
        obj = args[0]
        if isinstance(obj, type):  # Tensor.__new__: a copy
            outputs = obj(*args[1:], **kwargs)
        else:
            outputs = getattr(obj, self.method)(*args[1:], **kwargs)
        if self.method == "__setitem__":
            outputs = obj
        if outputs is None:
            return None
        return tree_flatten(outputs, is_leaf=lambda x: isinstance(x, Tensor))[0]

    def __getstate__(self):
        state = super().__getstate__()
        # the class of Tensor(...) by name: megengine.load stands in for Tensor classes
        state["const_val"] = [
            (i, ("__class__", v.__module__, v.__qualname__) if isinstance(v, type) else v)
            for i, v in self.const_val
        ]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.const_val = [
            (i, getattr(import_module(v[1]), v[2]) if _is_class_ref(v) else v)
            for i, v in self.const_val
        ]

    def _get_func(self):
        first = self.args[0]
        if isinstance(first, type):
            return first.__init__
        if isinstance(first, ModuleNode):
            return first.module_type.forward
        return getattr(Tensor, self.method)

    @property
    def _support_set_args_kwargs(self):
        first = self.args[0]
        return isinstance(first, (TensorNode, type)) or first.module_type is not Module

    def __repr__(self):
        args = ", ".join(str(i) for i in self.args[1:])
        kwargs = ", ".join(f"{k}={v}" for k, v in self.kwargs.items())
        outputs = self.out_def.unflatten(self.outputs) if self.out_def else self.outputs
        method = "" if self.method == "__call__" else f".{self.method}"
        lhs = f"{outputs} = " if outputs else ""
        return f"%{self._id}:\t{lhs}{self.args[0]}{method}({args}, {kwargs})"


_PLAIN = (bool, int, float, str, list, tuple, type(None))


class Apply(Expr):
    r"""Runs an op (``megengine.core.ops.builtin``) on its inputs, eagerly:
    ``interpret(*tensors)`` is ``apply(opdef, *tensors)``.

    Args:
        opdef: the op.

    Examples:
        >>> import megengine as mge
        >>> from megengine.core.ops import builtin
        >>> from megengine.traced_module.expr import Apply
        >>> expr = Apply(builtin.Elemwise(mode="add"))
        >>> expr.interpret(mge.Tensor([1.0]), mge.Tensor([2.0]))[0].numpy()
        array([3.], dtype=float32)
    """

    def __init__(self, opdef):
        super().__init__()
        self.opdef = opdef

    @classmethod
    def make(cls, *args, **kwargs):
        expr = cls(*args, **kwargs)
        tracer.active_module_tracer().current_scope()._insert(expr)
        return expr

    def interpret(self, *inputs):
        return list(_rt.apply(self.opdef, *inputs))

    def __getstate__(self):
        # ops do not pickle: their class and param fields do (enum members by name)
        state = super().__getstate__()
        cls = type(self.opdef)
        fields = {}
        for key in dir(cls):
            if key != "name" and isinstance(getattr(cls, key, None), property):
                value = getattr(self.opdef, key)
                fields[key] = value if isinstance(value, _PLAIN) else value.name
        state["opdef"] = (cls.__module__, cls.__qualname__, fields)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        module, qualname, fields = self.opdef
        self.opdef = getattr(import_module(module), qualname)(**fields)

    def __repr__(self):
        outs = ", ".join(str(i) for i in self.outputs)
        ins = ", ".join(str(i) for i in self.inputs)
        return f"%{self._id}:\t{outs} = {self.opdef}({ins})"


class CallFunction(Expr):
    r"""Calls a function (of ``megengine.functional``, or registered with ``wrap``).

    Args:
        func: the function.

    Examples:
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> class Net(M.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = M.Linear(2, 2)
        ...         self.k = mge.Parameter([2.0, 3.0])
        ...     def forward(self, x):
        ...         return F.relu(self.fc(x)).sum(axis=1) * self.k[0] + mge.Tensor(1.0)
        >>> graph = tm.trace_module(Net(), mge.Tensor([[1.0, -1.0]])).graph
        >>> [e.func.__name__ for e in graph.get_function_by_type()]
        ['relu']
    """

    def __init__(self, func):
        super().__init__()
        if not callable(func):
            raise TypeError(f"{func!r} is not callable")
        self.func = func

    @classmethod
    def make(cls, *args, **kwargs):
        expr = cls(*args, **kwargs)
        tracer.active_module_tracer().current_scope()._insert(expr)
        return expr

    def interpret(self, *inputs):
        args, kwargs = self.unflatten_args(inputs)
        func = self.func
        if tracer.is_tracing_module():
            func = tracer.active_module_tracer().patcher._wrapper(func)
        outputs = func(*args, **kwargs)
        if outputs is None:
            return None
        return tree_flatten(outputs, is_leaf=lambda x: isinstance(x, Tensor))[0]

    def _get_func(self):
        return self.func

    @property
    def _support_set_args_kwargs(self):
        return True

    def __repr__(self):
        args = ", ".join(str(i) for i in self.args)
        kwargs = ", ".join(f"{k}={v}" for k, v in self.kwargs.items())
        outputs = self.out_def.unflatten(self.outputs) if self.out_def else self.outputs
        lhs = f"{outputs} = " if outputs else ""
        name = self.func.__module__.rsplit(".")[-1] + "." + self.func.__name__
        return f"%{self._id}:\t{lhs}{name}({args}, {kwargs})"

    def __getstate__(self):
        state = super().__getstate__()
        state["func"] = (self.func.__module__, self.func.__qualname__)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if isinstance(self.func, tuple):
            obj = import_module(self.func[0])
            for part in self.func[1].split("."):
                obj = getattr(obj, part)
            self.func = obj


class Constant(Expr):
    r"""A Tensor (or builtin Module) that the graph reads and no module holds: made in
    forward, or captured from outside.

    Args:
        c: the Tensor or Module.
        name: the output node's name ("" to derive it).
        qualname: its qualified name.

    Examples:
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> import megengine.module as M
        >>> import megengine.traced_module as tm
        >>> class Net(M.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = M.Linear(2, 2)
        ...         self.k = mge.Parameter([2.0, 3.0])
        ...     def forward(self, x):
        ...         return F.relu(self.fc(x)).sum(axis=1) * self.k[0] + mge.Tensor(1.0)
        >>> graph = tm.trace_module(Net(), mge.Tensor([[1.0, -1.0]])).graph
        >>> [e.value.numpy() for e in graph.exprs() if type(e).__name__ == "Constant"]
        [array(1., dtype=float32)]
    """

    def __init__(self, c, name="", qualname=""):
        super().__init__()
        if not isinstance(c, (Tensor, Module)):
            raise TypeError(f"a Constant holds a Tensor or Module, got {type(c).__name__}")
        self.value = c
        self.name = name
        node_cls = TensorNode if isinstance(c, Tensor) else ModuleNode
        self.outputs = [node_cls(self, name=name, qualname=qualname)]
        if isinstance(c, Module):
            self.outputs[0].module_type = type(c)
            self.outputs[0]._owner = weakref.ref(c)

    @classmethod
    def make(cls, *args, **kwargs):
        expr = cls(*args, **kwargs)
        graph = tracer.active_module_tracer().current_scope()
        graph._namespace.auto_naming_for_outputs(expr)
        graph._insert(expr)
        return expr.outputs[0]

    def interpret(self, *inputs):
        return (self.value,)

    def __repr__(self):
        name = self.name if self.name is not None else type(self.value)
        kind = "Tensor" if isinstance(self.outputs[0], TensorNode) else "Module"
        return f"%{self._id}:\t{self.outputs[0]} = Constant({name}) -> ({kind})"


def capture_constant(value):
    """Binds ``value`` (a Tensor or Module with no node) to a new Constant's node."""
    node = Constant.make(value)
    tracer.bind(value, node)
    return node
