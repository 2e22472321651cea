"""``Module``: the base class of every layer.

A module holds its Parameters, buffers (Tensors that are not Parameters, such as BatchNorm's
running statistics) and sub-modules as ordinary attributes, directly or inside lists, tuples and
dicts; ``parameters()``, ``state_dict()`` and the other walks discover them by scanning the
attributes in name order, as MegEngine's modules do.
"""

from collections import OrderedDict

import numpy as np

from ..core import _imperative_rt as _rt
from ..core.tensor.quant_dtype import is_quantize
from ..logger import get_logger
from ..tensor import Parameter, Tensor

__all__ = ["Module"]


class HookHandler:
    """What ``register_forward_hook`` returns: ``remove()`` unregisters the hook."""

    def __init__(self, hooks, hook_id):
        self._hooks = hooks
        self._id = hook_id

    def remove(self):
        """Unregisters the hook (a second call does nothing)."""
        self._hooks.pop(self._id, None)


def _expand(key, value):
    """(dotted name, leaf) for each Tensor or Module inside ``value``, lists/tuples/dicts
    expanded recursively."""
    if isinstance(value, (Tensor, Module)):
        yield key, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _expand(f"{key}.{i}", item)
    elif isinstance(value, dict):
        try:
            keys = sorted(value)
        except TypeError:
            keys = list(value)
        for k in keys:
            leaves = list(_expand(f"{key}.{k}", value[k]))
            # A name must round-trip through state_dict keys: True or 1 would read back as "True"
            # or "1". MegEngine asserts, with this message.
            if leaves and not isinstance(k, str):
                raise AssertionError(f"keys for Tensor and Module must be str, error key: {k}")
            yield from leaves


def _module_like(value):
    return isinstance(value, (Module, list, tuple, dict))


_INTERNAL = ("_forward_pre_hooks", "_forward_hooks", "_next_hook_id")


def _is_tensor(obj):
    return isinstance(obj, Tensor)


def _is_parameter(obj):
    return isinstance(obj, Parameter)


def _is_buffer(obj):
    return isinstance(obj, Tensor) and not isinstance(obj, Parameter)


def _is_module(obj):
    return isinstance(obj, Module)


class Module:
    """Base class of all layers: subclasses set Parameters and sub-modules as attributes in
    ``__init__`` and compute in ``forward``.

    Args:
        name: an optional name, shown by ``repr`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> class Scale(M.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.k = mge.Parameter(np.array([2.0], dtype=np.float32))
        ...     def forward(self, x):
        ...         return x * self.k
        >>> m = Scale()
        >>> m(mge.Tensor([1.0, 3.0])).numpy().tolist()
        [2.0, 6.0]
        >>> [name for name, _ in m.named_parameters()]
        ['k']
    """

    def __init__(self, name=None):
        self.name = name
        self.training = True
        self.quantize_disabled = False  # read by quantization passes; see disable_quantize
        self._forward_pre_hooks = OrderedDict()
        self._forward_hooks = OrderedDict()
        self._next_hook_id = 0

    def forward(self, inputs):
        """Computes the module's output; every subclass defines it (with its own arguments)."""
        raise NotImplementedError(f"{type(self).__name__} does not define forward")

    # ----------------------------------------------------------------- call and hooks
    def _register_hook(self, hooks, hook):
        if not callable(hook):
            raise TypeError(f"a hook must be callable, got {type(hook).__name__}")
        self._next_hook_id += 1
        hooks[self._next_hook_id] = hook
        return HookHandler(hooks, self._next_hook_id)

    def register_forward_pre_hook(self, hook):
        """Registers ``hook(module, inputs)``, run before ``forward``; when it returns something
        other than None, that becomes the inputs (a tuple, or one value).

        Args:
            hook: the callable.

        Returns:
            a handler whose ``remove()`` unregisters the hook.
        """
        return self._register_hook(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        """Registers ``hook(module, inputs, outputs)``, run after ``forward``; when it returns
        something other than None, that replaces the outputs.

        Args:
            hook: the callable.

        Returns:
            a handler whose ``remove()`` unregisters the hook.
        """
        return self._register_hook(self._forward_hooks, hook)

    def __call__(self, *inputs, **kwargs):
        if _rt._trace_active():
            # A traced call records this mode's ops: a replay needs the same mode.
            _rt._trace_note_guard(self._is_training, self.training)
        # (the hook loops copy their dicts, which a hook may change: only when there are hooks)
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                modified = hook(self, inputs)
                if modified is not None:
                    inputs = modified if isinstance(modified, tuple) else (modified,)
        outputs = self.forward(*inputs, **kwargs)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                modified = hook(self, inputs, outputs)
                if modified is not None:
                    outputs = modified
        return outputs

    def _is_training(self):
        return self.training

    # ----------------------------------------------------------------- discovery
    def __setattr__(self, name, value):
        # MegEngine's repr lists the sub-modules in the order their attributes became
        # module-like (a Module, list, tuple or dict): a slot first set to None and later to a
        # Module (a QAT module's observers) comes after the others, so its key moves to the end.
        d = self.__dict__
        if name in d and _module_like(value) and not _module_like(d[name]):
            del d[name]
        object.__setattr__(self, name, value)

    def _direct(self, ordered=True):
        """(name, leaf) for the Tensors and Modules this module holds itself: attributes by
        name (MegEngine's order), or in assignment order when not ``ordered``."""
        attrs = vars(self)
        for key in sorted(attrs) if ordered else list(attrs):
            if key in _INTERNAL:
                continue
            yield from _expand(key, attrs[key])

    def _flatten(
        self,
        *,
        recursive=True,
        with_key=False,
        with_parent=False,
        prefix=None,
        predicate=lambda _: True,
        seen=None,
    ):
        """The walk behind every discovery method, as MegEngine's: the Tensors and Modules this
        module holds (attributes in name order), each object once, sub-modules right after the
        module that holds them.

        Args:
            recursive: scan the sub-modules too.
            with_key: yield the dotted name with each object.
            with_parent: yield the module that holds each object with it.
            prefix: prepended (with a dot) to the names.
            predicate: which objects to yield; the others are still scanned.
            seen: ids of the objects already visited, shared by the whole walk.

        Returns:
            an iterator of objects, or of tuples ``(name, obj)``, ``(obj, parent)`` or
            ``(name, obj, parent)``.
        """
        if seen is None:
            seen = {id(self)}
        start = "" if prefix is None else prefix + "."
        for key, leaf in self._direct():
            if id(leaf) in seen:
                continue
            seen.add(id(leaf))
            if predicate(leaf):
                if with_key and with_parent:
                    yield start + key, leaf, self
                elif with_key:
                    yield start + key, leaf
                elif with_parent:
                    yield leaf, self
                else:
                    yield leaf
            if recursive and isinstance(leaf, Module):
                yield from leaf._flatten(
                    recursive=recursive,
                    with_key=with_key,
                    with_parent=with_parent,
                    prefix=start + key if with_key else None,
                    predicate=predicate,
                    seen=seen,
                )

    def named_tensors(self, prefix=None, recursive=True, **kwargs):
        """The Tensors (Parameters and buffers) with their dotted names.

        Args:
            prefix: prepended to every name (with a dot).
            recursive: include the sub-modules' tensors.
            kwargs: ``with_parent`` and ``seen``, as for ``_flatten``.

        Returns:
            an iterator of (name, Tensor).
        """
        yield from self._flatten(
            with_key=True, prefix=prefix, predicate=_is_tensor, recursive=recursive, **kwargs
        )

    def tensors(self, recursive=True, **kwargs):
        """The Tensors (Parameters and buffers) of the module.

        Args:
            recursive: include the sub-modules' tensors.
            kwargs: ``with_parent`` and ``seen``, as for ``_flatten``.

        Returns:
            an iterator of Tensors.
        """
        yield from self._flatten(
            with_key=False, predicate=_is_tensor, recursive=recursive, **kwargs
        )

    def named_parameters(self, prefix=None, recursive=True, **kwargs):
        """The Parameters with their dotted names (``"conv1.weight"``).

        Args:
            prefix: prepended to every name (with a dot).
            recursive: include the sub-modules' parameters.
            kwargs: ``requires_grad`` is accepted and ignored, as in MegEngine (tensors carry
                no requires_grad flag); ``with_parent`` and ``seen`` as for ``_flatten``.

        Returns:
            an iterator of (name, Parameter).
        """
        kwargs.pop("requires_grad", None)
        yield from self._flatten(
            with_key=True, prefix=prefix, predicate=_is_parameter, recursive=recursive, **kwargs
        )

    def parameters(self, recursive=True, **kwargs):
        """The Parameters of the module (what an optimizer and a GradManager take).

        Args:
            recursive: include the sub-modules' parameters.
            kwargs: ``requires_grad`` is accepted and ignored, as in MegEngine;
                ``with_parent`` and ``seen`` as for ``_flatten``.

        Returns:
            an iterator of Parameters.
        """
        kwargs.pop("requires_grad", None)
        yield from self._flatten(
            with_key=False, predicate=_is_parameter, recursive=recursive, **kwargs
        )

    def named_buffers(self, prefix=None, recursive=True, **kwargs):
        """The Tensors that are not Parameters (running statistics) with their dotted names.

        Args:
            prefix: prepended to every name (with a dot).
            recursive: include the sub-modules' buffers.
            kwargs: ``with_parent`` and ``seen``, as for ``_flatten``.

        Returns:
            an iterator of (name, Tensor).
        """
        yield from self._flatten(
            with_key=True, prefix=prefix, predicate=_is_buffer, recursive=recursive, **kwargs
        )

    def buffers(self, recursive=True, **kwargs):
        """The Tensors that are not Parameters.

        Args:
            recursive: include the sub-modules' buffers.
            kwargs: ``with_parent`` and ``seen``, as for ``_flatten``.

        Returns:
            an iterator of Tensors.
        """
        yield from self._flatten(
            with_key=False, predicate=_is_buffer, recursive=recursive, **kwargs
        )

    def named_children(self, **kwargs):
        """The direct sub-modules with their attribute names (``"layers.0"`` for a list).

        Args:
            kwargs: ``prefix``, ``with_parent`` and ``seen``, as for ``_flatten``.

        Returns:
            an iterator of (name, Module).
        """
        yield from self._flatten(with_key=True, predicate=_is_module, recursive=False, **kwargs)

    def children(self, **kwargs):
        """The direct sub-modules.

        Args:
            kwargs: ``with_parent`` and ``seen``, as for ``_flatten``.

        Returns:
            an iterator of Modules.
        """
        yield from self._flatten(with_key=False, predicate=_is_module, recursive=False, **kwargs)

    def named_modules(self, prefix=None, **kwargs):
        """This module (named ``prefix``, or ``""``) and every sub-module, depth first.

        Args:
            prefix: the name of this module, prepended to the others'.
            kwargs: ``recursive``, ``with_parent`` (this module's parent is None), and
                ``seen``, as for ``_flatten``.

        Returns:
            an iterator of (name, Module), or (name, Module, parent) with ``with_parent``.
        """
        name = "" if prefix is None else prefix
        yield (name, self, None) if kwargs.get("with_parent") else (name, self)
        yield from self._flatten(with_key=True, prefix=prefix, predicate=_is_module, **kwargs)

    def modules(self, **kwargs):
        """This module and every sub-module, depth first.

        Args:
            kwargs: ``recursive``, ``with_parent`` (this module's parent is None), and
                ``seen``, as for ``_flatten``.

        Returns:
            an iterator of Modules, or of (Module, parent) with ``with_parent``.
        """
        yield (self, None) if kwargs.get("with_parent") else self
        yield from self._flatten(with_key=False, predicate=_is_module, **kwargs)

    def disable_quantize(self, value=True):
        """Sets ``quantize_disabled`` on this module and every sub-module, which MegEngine's
        quantization passes read to leave a module in float; returns the module, so it also
        serves as a decorator.

        Args:
            value: the flag to set.

        Returns:
            this module.

        Examples:
            >>> import megengine.module as M
            >>> m = M.Sequential(M.Linear(2, 2), M.ReLU()).disable_quantize()
            >>> [sub.quantize_disabled for sub in m.modules()]
            [True, True, True]
        """

        def mark(module):
            module.quantize_disabled = value

        self.apply(mark)
        return self

    def replace_param(self, params, start_pos, seen=None):
        """Replaces Parameters by position, as MegEngine's ParamPack does: the Parameters this
        module holds directly as attributes, and those of its sub-modules, are numbered from
        ``start_pos`` in attribute-name order; each whose number is a key of ``params`` is
        replaced by that value (of the same shape).

        Args:
            params: a dict from position to the new Parameter.
            start_pos: the position of this module's first Parameter.
            seen: ids of the objects already visited (the walk shares it).

        Returns:
            the number of Parameters numbered under this module.

        Examples:
            >>> import numpy as np
            >>> import megengine.module as M
            >>> from megengine import Parameter
            >>> m = M.Linear(2, 3)
            >>> m.replace_param({1: Parameter(np.ones((3, 2), "float32"))}, 0)
            2
            >>> m.weight.numpy().tolist()
            [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
        """
        offset = 0
        if seen is None:
            seen = {id(self)}
        attrs = vars(self)
        for key in sorted(attrs):
            value = attrs[key]
            if id(value) in seen:
                continue
            seen.add(id(value))
            if isinstance(value, Parameter):
                new = params.get(start_pos + offset)
                if new is not None:
                    if tuple(new.shape) != tuple(value.shape):
                        raise ValueError(
                            f"replace_param: {key} has shape {tuple(value.shape)}, the "
                            f"replacement at position {start_pos + offset} {tuple(new.shape)}"
                        )
                    setattr(self, key, new)
                offset += 1
            elif isinstance(value, Module):
                offset += value.replace_param(params, start_pos + offset, seen)
        return offset

    def apply(self, fn):
        """Calls ``fn(module)`` on this module and every sub-module.

        Args:
            fn: the function.
        """
        for m in self.modules():
            fn(m)

    def train(self, mode=True, recursive=True):
        """Sets training mode (Dropout drops, BatchNorm uses and updates batch statistics).

        Args:
            mode: True for training, False for evaluation.
            recursive: set the sub-modules too.
        """
        if not recursive:
            self.training = bool(mode)
            return
        # each module's own train(), as MegEngine: an Observer's also switches it on or off
        for m in list(self.modules()):
            m.train(mode, recursive=False)

    def eval(self):
        """Sets evaluation mode on this module and every sub-module (``train(False)``)."""
        self.train(False)

    def zero_grad(self):
        """Drops the gradients of every Parameter (sets ``.grad`` to None)."""
        for p in self.parameters():
            p.grad = None

    # ----------------------------------------------------------------- state
    def state_dict(self, rst=None, prefix="", keep_var=False):
        """Every Parameter and buffer as name -> numpy array (``"bn.running_mean"``).

        Args:
            rst: a dict to fill (a new OrderedDict when None).
            prefix: prepended to every name.
            keep_var: keep the Tensors themselves instead of numpy copies.

        Returns:
            the OrderedDict.
        """
        if rst is None:
            rst = OrderedDict()
        self._state_dict(rst, prefix, keep_var, set())
        return rst

    def _state_dict(self, rst, prefix, keep_var, seen):
        # As MegEngine: this module's own tensors first, then each sub-module's (each module
        # once, so that a reference back up the tree ends the walk).
        seen.add(id(self))
        for name, t in self.named_tensors(recursive=False):
            if keep_var:
                rst[prefix + name] = t
            else:
                rst[prefix + name] = t.numpy().reshape(-1) if self._flat_state else t.numpy()
        for name, child in self.named_children():
            if id(child) not in seen:
                child._state_dict(rst, prefix + name + ".", keep_var, seen)

    def load_state_dict(self, state_dict, strict=True):
        """Loads values saved by ``state_dict`` into this module's tensors, in place (each
        Tensor keeps its identity, so optimizers and GradManagers holding it see the values).

        Args:
            state_dict: name -> numpy array or Tensor; or a callable ``f(name, tensor)`` that
                returns the value for a name (or None to leave it).
            strict: raise KeyError when a key of the module is missing from state_dict, or a
                key of state_dict names nothing in the module; when False, load the keys
                both have and log a warning naming the others.

        Raises:
            KeyError: missing or unexpected keys with strict.
            ValueError: a value whose shape differs from the tensor's.
        """
        own = self.state_dict(keep_var=True)  # the keys state_dict gives, as MegEngine
        if callable(state_dict) and not isinstance(state_dict, dict):
            closure = state_dict
            unused = []
        else:
            if not isinstance(state_dict, dict):
                raise TypeError(
                    f"load_state_dict expects a dict or a callable, got {type(state_dict).__name__}"
                )
            state_dict = dict(state_dict)
            for name, module in self.named_modules():
                module._translate_state(name + "." if name else "", state_dict)
            closure = lambda name, _t: state_dict.get(name)
            unused = [k for k in state_dict if k not in own]
        not_loaded = []
        updates = []
        for name, t in own.items():
            value = closure(name, t)
            if value is None:
                not_loaded.append(name)
                continue
            arr = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
            if tuple(arr.shape) != tuple(t.shape):
                raise ValueError(
                    f"load_state_dict: {name!r} has shape {tuple(t.shape)} in the module, "
                    f"got {tuple(arr.shape)}"
                )
            updates.append((name, t, arr))
        if strict and (unused or not_loaded):
            parts = []
            if not_loaded:
                parts.append(f"missing keys {not_loaded}")
            if unused:
                parts.append(f"unexpected keys {unused}")
            raise KeyError(f"load_state_dict (strict=True): {'; '.join(parts)}")
        # MegEngine says what strict=False passed over, in a warning each.
        if unused:
            get_logger(__name__).warning(
                f"load_state_dict (strict=False): unused keys {sorted(unused)}"
            )
        if not_loaded:
            get_logger(__name__).warning(
                f"load_state_dict (strict=False): missing keys {sorted(not_loaded)}"
            )
        for _, t, arr in updates:
            # A channels-last tensor (amp.convert_module_format) stays channels-last.
            fmt = "nhwc" if t._channels_last and not t._auto_layout else "default"
            # As in MegEngine a quantized value keeps the checkpoint's dtype (its scale), and a
            # quantized tensor takes the value's: a runtime dtype name is no constructor dtype.
            dtype = t._dtype_name
            if is_quantize(arr.dtype) or is_quantize(t.dtype):
                dtype = arr.dtype
            t._reset(Tensor(arr, dtype=dtype, device=t.device, format=fmt))

    # MegEngine's state_dict gives the tensors of its normalisation modules (BatchNorm's are
    # (1, C, 1, 1)) flattened, and its load_state_dict takes any shape of the same size there.
    _flat_state = False

    def _translate_state(self, prefix, state):
        """Rewrites, in place, entries of a state dict being loaded whose form differs from
        this module's tensors (the keys under ``prefix`` are this module's); a hook for
        modules whose MegEngine checkpoints hold their values in another layout."""
        if not self._flat_state:
            return
        for name, t in self.named_tensors(recursive=False):
            value = state.get(prefix + name)
            if value is None:
                continue
            value = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
            if value.shape != tuple(t.shape) and value.size == int(np.prod(t.shape)):
                state[prefix + name] = value.reshape(t.shape)

    # ----------------------------------------------------------------- printing
    def _module_info_string(self):
        """The constructor arguments shown inside the parentheses of ``repr``."""
        return ""

    def __repr__(self):
        # MegEngine's layout: one line when there is only the constructor info, else the info
        # and the sub-modules (in assignment order) on indented lines.
        # A module held under several names is shown under each, as MegEngine does.
        lines = [line for line in self._module_info_string().split("\n") if line]
        children = [
            f"({key}): " + repr(leaf).replace("\n", "\n  ")
            for key, leaf in self._direct(ordered=False)
            if isinstance(leaf, Module)
        ]
        head = type(self).__name__ + "("
        if not children and len(lines) <= 1:
            return head + "".join(lines) + ")"
        return head + "\n  " + "\n  ".join(lines + children) + "\n)"
