"""``TracedModuleBuilder``: what ``self`` is inside a forward being traced. It stands for one
module: reading an attribute records a GetAttr (a submodule becomes a builder of its own),
calling it records a CallMethod and, for a module that is not builtin, traces its forward into
a graph of its own; ``build()`` turns it into the TracedModule (or the builtin module)."""

import inspect

from ..module import Module
from ..module.qat.module import QATModule
from ..quantization.fake_quant import _FakeQuantize
from ..quantization.observer import Observer
from ..tensor import Tensor
from . import tracer
from .expr import CallMethod, GetAttr, Input, capture_constant
from .graph import InternalGraph
from .node import ModuleNode, TensorNode
from .pytree import ArgsIndex, tree_flatten
from .record import _is_tensor_leaf
from .utils import convert_kwargs_to_args

_BUILDER_ATTRS = frozenset(
    [
        "_mod",
        "_body",
        "_is_builtin",
        "_is_top",
        "_argdef_graph_map",
        "_argdef_outdef_map",
        "_attr_cache",
        "nodes",
        "build",
        "_record_wrapped_nodes",
        "_wrap_attr",
        "_wrap_member",
        "_is_traced_builder",
        "__class__",
        "__dict__",
        "__call__",
    ]
)


def _builtin_quantizers(qat_module):
    """Puts a :class:`~.fake_quant.FakeQuantize` holding the qparams in place of an observer
    or fake quantizer of a user class, in the QAT module itself (as MegEngine 1.13 does)."""
    from .fake_quant import FakeQuantize

    def builtin(m):
        return m is None or tracer.ModuleTracer.is_builtin(m)

    for kind in ("act", "weight"):
        if not getattr(qat_module, f"with_{kind}", False):
            continue
        observer = getattr(qat_module, f"{kind}_observer")
        fake_quant = getattr(qat_module, f"{kind}_fake_quant")
        if builtin(observer) and builtin(fake_quant):
            continue
        source = observer if hasattr(observer, "get_qparams") else fake_quant
        dtype = observer.dtype if hasattr(observer, "dtype") else fake_quant.dtype
        replacement = FakeQuantize(dtype)
        replacement.set_qparams(source.get_qparams())
        setattr(qat_module, f"{kind}_observer", None)
        setattr(qat_module, f"{kind}_fake_quant", replacement)


def _mark_constant(value):
    if isinstance(value, (Tensor, TracedModuleBuilder)) and tracer.get_node(value, None) is None:
        capture_constant(value)


class TracedModuleBuilder:
    """The stand-in for module ``mod`` while its owner's forward is traced."""

    _is_traced_builder = True

    def __init__(self, mod, is_top=False):
        if not isinstance(mod, Module):
            raise TypeError(f"can only trace a Module, got {type(mod).__name__}")
        d = self.__dict__
        d["_mod"] = mod
        d["_body"] = None
        d["_is_top"] = is_top
        # the top module is traced even when builtin (MegEngine fails there)
        # observers and fake quantizers are leaves whatever their class, as in MegEngine
        d["_is_builtin"] = not is_top and (
            isinstance(mod, (Observer, _FakeQuantize)) or tracer.ModuleTracer.is_builtin(mod)
        )
        if isinstance(mod, QATModule):
            with tracer.exclude_from_trace():
                _builtin_quantizers(mod)
        d["_argdef_graph_map"] = {}
        d["_argdef_outdef_map"] = {}
        d["_attr_cache"] = {}
        d["nodes"] = set()
        # a subclass of the module's class too, so that forward's super() and helper methods
        # work on the builder
        self.__class__ = type(
            "TracedModuleBuilder", (TracedModuleBuilder, type(mod)), {"__module__": __name__}
        )

    def _record_wrapped_nodes(self, node):
        self.nodes.add(node)

    def __getattribute__(self, name):
        if name in _BUILDER_ATTRS:
            return object.__getattribute__(self, name)
        d = object.__getattribute__(self, "__dict__")
        if name in d["_mod"].__dict__:
            return self._wrap_attr(name)
        return object.__getattribute__(self, name)

    def __getattr__(self, name):
        return getattr(self._mod, name)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)

    def __repr__(self):
        return repr(self._mod)

    def _wrap_attr(self, name):
        d = self.__dict__
        if name in d:  # set on the builder by forward itself
            return d[name]
        return self._wrap_member(name, self._mod.__dict__[name])

    def _wrap_member(self, path, value):
        node = tracer.get_node(self)
        if isinstance(value, Module):
            builder = self._attr_cache.get(path)
            if builder is None:
                builder = self._attr_cache[path] = TracedModuleBuilder(value)
            tracer.bind(builder, GetAttr.make(node, type=ModuleNode, attr_name=path))
            return builder
        if isinstance(value, Tensor):
            tracer.bind(value, GetAttr.make(node, type=TensorNode, attr_name=path))
            return value
        recording = _recording_version(value)
        if recording is not None:
            # a function kept in an attribute (self.act = F.relu) was looked up before the
            # trace patched it: its calls record too, or their results would be constants
            return recording
        if isinstance(value, (list, tuple)) and _holds_traced(value):
            items = [self._wrap_member(f"{path}.{i}", v) for i, v in enumerate(value)]
            return _same_sequence(value, items)
        if isinstance(value, dict) and _holds_traced(value):
            return {k: self._wrap_member(f"{path}.{k}", v) for k, v in value.items()}
        return value

    def __call__(self, *args, **kwargs):
        mod = self._mod
        args, kwargs = convert_kwargs_to_args(forward_spec(mod), args, kwargs, True)
        leaves, tree_def = tree_flatten(((self, *args), kwargs))
        for leaf in leaves:
            _mark_constant(leaf)
        call = CallMethod.make(tracer.get_node(self))
        call.add_inputs(leaves[1:])
        call.arg_def = tree_def
        if self._is_builtin or tree_def in self._argdef_graph_map:
            with tracer.exclude_from_trace():
                result = mod(*args, **kwargs)
            outputs, out_def = tree_flatten(result, is_leaf=_is_tensor_leaf)
            self.__dict__["_body"] = self._argdef_graph_map.get(tree_def)
        else:
            result, outputs, out_def = self._trace_forward(leaves, tree_def)
        call.out_def = out_def
        call.add_outputs(outputs)
        self._argdef_graph_map[tree_def] = self._body
        self._argdef_outdef_map[tree_def] = out_def
        return result

    def _trace_forward(self, leaves, tree_def):
        active = tracer.active_module_tracer()
        self_node = tracer.get_node(self)
        parent = active.current_scope()
        qualname = self_node._qualname
        body = InternalGraph(parent._namespace.create_unique_name(qualname), qualname)
        parent._namespace.associate_name_with_obj(body.name, body)
        self.__dict__["_body"] = body
        active.push_scope(body)
        tracer.bind(self, Input.make(ModuleNode, name="self", qualname=qualname))
        saved = [tracer.get_node(v, None) for v in leaves[1:]]
        names = _input_names(forward_spec(self._mod, bound=False), tree_def, len(leaves) - 1)
        leaves = _distinct_tensors(leaves)
        for i, value in enumerate(leaves[1:], 1):
            if isinstance(value, (Tensor, TracedModuleBuilder)):
                kind = TensorNode if isinstance(value, Tensor) else ModuleNode
                name = names[i]
                tracer.bind(value, Input.make(kind, name=name, qualname=f"{qualname}.[{name}]"))
        args, kwargs = tree_def.unflatten([self, *leaves[1:]])
        forward = type(self._mod).forward
        active.patcher.auto_patch(getattr(forward, "__globals__", {}))
        active.patcher.auto_patch_closure(forward)
        # forward's helpers may be methods of a base class written in another module (the QAT
        # BatchNorm folding): functions those import by name are recorded too
        for cls in type(self._mod).__mro__:
            if cls.__module__.split(".")[0] == "megengine":
                for value in vars(cls).values():
                    active.patcher.auto_patch(getattr(value, "__globals__", {}))
        result = forward(*args, **kwargs)
        outputs, out_def = tree_flatten(result, is_leaf=_is_tensor_leaf)
        for out in outputs:
            _mark_constant(out)
            body._add_output(tracer.get_node(out))
        tracer.bind(self, self_node)
        for value, node in zip(leaves[1:], saved):
            if node is not None:
                tracer.bind(value, node)
        active.pop_scope()
        return result, outputs, out_def

    def build(self):
        """The TracedModule of what was traced (the module itself when builtin)."""
        from .traced_module import TracedModule

        mod = self._mod
        if self._is_builtin:
            for node in self.nodes:
                node.module_type = type(mod)
            return mod
        if isinstance(mod, TracedModule) and not self._argdef_graph_map:
            return mod
        traced = TracedModule(
            self._is_top,
            self._argdef_graph_map,
            self._argdef_outdef_map,
            # flatten keeps a QAT module's call (its quantizers read the module)
            isinstance(mod, QATModule) or bool(getattr(mod, "is_qat", False)),
        )
        for graph in self._argdef_graph_map.values():
            graph.compile()
        traced.training = mod.training
        for key, value in mod.__dict__.items():
            built = _build_member(self, key, value)
            if built is not None:
                setattr(traced, key, built)
        if isinstance(mod, QATModule):
            # the quantizer slots a traced QAT module is read by (None where the module has
            # none), as MegEngine 1.13 keeps them
            traced.with_act = mod.with_act
            traced.with_weight = mod.with_weight
            for slot in ("act_fake_quant", "act_observer", "weight_fake_quant", "weight_observer"):
                if not hasattr(traced, slot):
                    setattr(traced, slot, None)
        if self._is_top:
            traced._update_ref()
        return traced


def _distinct_tensors(leaves):
    """``leaves`` with a copy in place of each repeat of a Tensor: the graph's inputs are bound
    by identity, and one object passed twice would stand for both (MegEngine then reads the
    last argument for both)."""
    seen, out = set(), []
    for value in leaves:
        if isinstance(value, Tensor):
            if id(value) in seen:
                with tracer.exclude_from_trace():
                    value = Tensor(value)
            seen.add(id(value))
        out.append(value)
    return out


def _same_sequence(value, items):
    if isinstance(value, list):
        return items
    # a namedtuple (a TracedModule's argspec among them) takes its fields one by one
    if hasattr(type(value), "_fields"):
        return type(value)(*items)
    return type(value)(items)


def _holds_traced(container):
    values = container.values() if isinstance(container, dict) else container
    return any(
        isinstance(v, (Module, Tensor, list, tuple, dict)) or _recording_version(v) is not None
        for v in values
    )


def _recording_version(value):
    """The recording stand-in of ``value`` when the trace in progress records calls of it (a
    function of ``megengine.functional`` or one registered with ``wrap``), else None."""
    if not callable(value) or isinstance(value, (Module, type)):
        return None
    patcher = tracer.active_module_tracer().patcher
    if (id(value), None) not in patcher.patched_ids:
        return None
    return patcher._wrapper(value)


def _build_member(builder, path, value):
    if isinstance(value, Module):
        sub = builder._attr_cache.get(path)
        return sub.build() if sub is not None else value
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (list, tuple)) and _holds_traced(value):
        items = [_build_member(builder, f"{path}.{i}", v) for i, v in enumerate(value)]
        if any(i is None for i in items):
            return None
        return _same_sequence(value, items)
    if isinstance(value, dict) and _holds_traced(value):
        items = {k: _build_member(builder, f"{path}.{k}", v) for k, v in value.items()}
        return None if any(i is None for i in items.values()) else items
    return None


def forward_spec(mod, bound=True):
    """What ``mod``'s calls are normalised by: a TracedModule's ``argspec`` (the signature of
    the forward it was traced from; its own forward takes ``*args, **kwargs``), else its
    forward (bound, or the class's when ``bound`` is False)."""
    from .traced_module import TracedModule

    if isinstance(mod, TracedModule) and mod.argspec is not None:
        return mod.argspec
    return mod.forward if bound else type(mod).forward


def _call_args(spec, args, kwargs):
    """``inspect.getcallargs`` for a function or a FullArgSpec."""
    if callable(spec):
        return inspect.getcallargs(spec, *args, **kwargs)
    kind = inspect.Parameter
    defaults = dict(
        zip(spec.args[len(spec.args) - len(spec.defaults or ()) :], spec.defaults or ())
    )
    params = [
        kind(n, kind.POSITIONAL_OR_KEYWORD, default=defaults.get(n, kind.empty)) for n in spec.args
    ]
    if spec.varargs:
        params.append(kind(spec.varargs, kind.VAR_POSITIONAL))
    kwonly = spec.kwonlydefaults or {}
    params += [
        kind(n, kind.KEYWORD_ONLY, default=kwonly.get(n, kind.empty)) for n in spec.kwonlyargs
    ]
    if spec.varkw:
        params.append(kind(spec.varkw, kind.VAR_KEYWORD))
    bound = inspect.Signature(params).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _input_names(forward, tree_def, count):
    """The names of the ``count`` flattened arguments: their parameter names, with ``_<i>``
    for the leaves of a structured one (``xs_0``, ``xs_1``); ``forward`` is a function or a
    FullArgSpec."""
    index_args, index_kwargs = tree_def.unflatten(
        [ArgsIndex(0), *[ArgsIndex(i + 1) for i in range(count)]]
    )
    names = {}
    for key, value in _call_args(forward, index_args, index_kwargs).items():
        if isinstance(value, ArgsIndex):
            names[value.index] = key
        else:
            leaves, _ = tree_flatten(value)
            for i, leaf in enumerate(leaves):
                if isinstance(leaf, ArgsIndex):
                    names[leaf.index] = f"{key}_{i}"
    return names
