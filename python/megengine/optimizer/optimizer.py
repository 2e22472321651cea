"""The ``Optimizer`` base class: parameter groups, per-parameter state, ``step`` and
``clear_grad``, and the state dict that a checkpoint saves.

Subclasses implement ``_create_state(group)`` (allocate each parameter's state tensors) and
``_updates(group)`` (one update of the group's parameters). Updates run as tensor ops on the
parameters' device and write parameters in place with ``Tensor._reset``, so a parameter keeps
its identity and its GradManager attachment.
"""

import copy
import warnings

import numpy as np

from ..core import _imperative_rt as _rt
from ..core.tensor import step_gate
from ..core.tensor.memory_format import to_channels_last
from ..functional.tensor import where
from ..tensor import Parameter, Tensor


def _write(param, value):
    """Writes ``value`` into ``param`` in place, keeping the parameter's dtype and its
    channels-last storage (``amp.convert_module_format``: a gradient comes back row-major)."""
    if value._dtype_name != param._dtype_name:
        value = value.astype(param._dtype_name)
    if param._channels_last and not value._channels_last:
        value = to_channels_last(value)
    param._reset(value)


def _update_state(state, **values):
    """Gives each named state tensor its new value in place (``Tensor._reset``), as MegEngine's
    in-place ``v *= m; v += g`` does: a state tensor keeps its identity, so a traced step
    (``megengine.jit.trace``) writes each replay's value back into it."""
    for name, value in values.items():
        old = state.get(name)
        if isinstance(old, Tensor) and isinstance(value, Tensor):
            old._reset(value)
        else:
            state[name] = value


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


def _check_hyper(fn, name, value, low=0.0, high=None, high_open=False):
    """Raises ValueError (naming the optimizer and argument) for a value outside [low, high]."""
    if not isinstance(value, (int, float, np.number)) or isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be a number, got {type(value).__name__}")
    if value < low or (high is not None and (value >= high if high_open else value > high)):
        bound = f"[{low}, {high})" if high_open else f"[{low}, {high}]" if high else f">= {low}"
        raise ValueError(f"{fn}: invalid {name}: {value} (must be in {bound})")


class Optimizer:
    """Base class of the optimizers: holds parameter groups and per-parameter state.

    Args:
        params: an iterable of Parameters, or of dicts each holding ``"params"`` (the group's
            Parameters) and any hyperparameter that overrides ``defaults`` for that group.
        defaults: the default hyperparameters of every group (``{"lr": 0.1, ...}``).

    Examples:
        >>> import megengine as mge
        >>> import megengine.optimizer as optim
        >>> w = mge.Parameter([1.0, 2.0])
        >>> opt = optim.SGD([w], lr=0.5)
        >>> w.grad = mge.Tensor([2.0, -2.0])
        >>> opt.step().clear_grad()  # step returns the optimizer
        >>> w.numpy().tolist(), w.grad
        ([0.0, 3.0], None)
    """

    def __init__(self, params, defaults):
        self._state = {}
        self._defaults = defaults
        if isinstance(params, (Tensor, dict)):
            params = [params]
        else:
            try:
                params = list(params)
            except TypeError:
                raise TypeError(
                    f"{type(self).__name__}: params must be Parameters, dicts or an iterable of "
                    f"them, got {type(params).__name__}"
                ) from None
        if not params:
            raise ValueError(f"{type(self).__name__} got an empty parameter list")
        if all(isinstance(p, dict) for p in params):
            groups = params
        elif any(isinstance(p, dict) for p in params):
            raise TypeError(f"{type(self).__name__}: params mixes Parameters and group dicts")
        else:
            groups = [{"params": params}]
        self.param_groups = []
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        """Adds a group of parameters with its own hyperparameters.

        Args:
            param_group: a dict with ``"params"`` (a Parameter or an iterable of them) and
                hyperparameters; those it omits take the optimizer's defaults.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> opt = optim.SGD([mge.Parameter([1.0])], lr=0.1)
            >>> opt.add_param_group({"params": [mge.Parameter([2.0])], "lr": 0.01})
            >>> [g["lr"] for g in opt.param_groups]
            [0.1, 0.01]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param group must be a dict, got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError("param group has no 'params' entry")
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Parameter):
                raise TypeError(
                    f"{type(self).__name__} can only optimize Parameters, got {type(p).__name__}"
                )
        group = dict(param_group)
        group["params"] = params
        for name, default in self._defaults.items():
            if default is required and name not in group:
                raise ValueError(f"param group does not give required hyperparameter {name!r}")
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params) or seen & {id(p) for p in params}:
            raise ValueError("a parameter appears in more than one parameter group (or twice)")
        self.param_groups.append(group)
        self._create_state(group)

    def _add_state(self, param, name, initializer=None):
        """Creates state tensor ``name`` of ``param`` (zeros of its shape unless given), laid out
        as the parameter (channels-last for a channels-last one), so that updates combine
        tensors of one layout."""
        if initializer is None:
            value = Tensor(np.zeros(param.shape, dtype=param.dtype), device=param.device)
        else:
            value = Tensor(initializer, dtype="float32", device=param.device)
        if param._channels_last and value.shape == param.shape:
            value = to_channels_last(value)
        self._state.setdefault(param, {})[name] = value

    def _grads(self, group, weight_decay=0.0):
        """(param, its state, its value, its gradient plus ``weight_decay`` x value) for each
        parameter of ``group`` that has a gradient; values and gradients detached, so that
        nothing an update computes is recorded by autograd."""
        for p in group["params"]:
            if p.grad is None:
                continue
            g, pv = p.grad.detach(), p.detach()
            if weight_decay != 0.0:
                g = g + weight_decay * pv
            yield p, self._state[p], pv, g

    def _create_state(self, group):
        pass

    def _updates(self, group):
        raise NotImplementedError

    def step(self):
        """Updates every parameter that has a gradient, group by group.

        Returns:
            this optimizer, so that ``opt.step().clear_grad()`` works.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> w = mge.Parameter([1.0])
            >>> w.grad = mge.Tensor([4.0])
            >>> optim.SGD([w], lr=0.25).step() is not None, w.numpy().tolist()
            (True, [0.0])
        """
        for group in self.param_groups:
            if not isinstance(group["lr"], (int, float, np.number)):
                raise TypeError(
                    f"{type(self).__name__}: lr must be a number, got {type(group['lr']).__name__}"
                )
            kept = self._snapshot_marked(group)
            self._updates(group)
            self._restore_where_found(kept)
        if _rt._trace_active():
            # The hyperparameters are Python numbers, constants of a traced step's graph: a
            # replay needs the same ones (a scheduler's change makes the trace record again).
            _rt._trace_note_guard(self._hyperparameters, self._hyperparameters())
        return self

    def _snapshot_marked(self, group):
        """The values before the step of each parameter whose gradient a traced GradScaler
        marked with its found-inf flag (``core/tensor/step_gate.py``), and of its state."""
        kept = []
        for p in group["params"]:
            flag = step_gate.take(p)
            if flag is not None:
                state = self._state.get(p, {})
                old = {k: v.detach() for k, v in state.items() if isinstance(v, Tensor)}
                kept.append((p, flag, p.detach(), old))
        return kept

    def _restore_where_found(self, kept):
        # Where the flag is set the step did not happen: MegEngine's eager GradScaler drops
        # those gradients, which a graph cannot decide, so it selects the old values instead.
        for p, flag, old_p, old_state in kept:
            _write(p, where(flag, old_p, p.detach()))
            state = self._state.get(p, {})
            for k, old in old_state.items():
                _write(state[k], where(flag, old, state[k].detach()))

    def _hyperparameters(self):
        return tuple(
            tuple((k, v) for k, v in group.items() if k != "params") for group in self.param_groups
        ) + (getattr(self, "nesterov", None),)

    def clear_grad(self):
        """Sets every parameter's gradient to None.

        Returns:
            None

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> w = mge.Parameter([1.0])
            >>> w.grad = mge.Tensor([1.0])
            >>> optim.SGD([w], lr=0.1).clear_grad()
            >>> w.grad is None
            True
        """
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def zero_grad(self):
        """Sets every existing gradient to zeros, in place (deprecated: use :meth:`clear_grad`).

        Returns:
            None

        Examples:
            >>> import warnings
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> w = mge.Parameter([1.0, 2.0])
            >>> w.grad = mge.Tensor([3.0, 4.0])
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore", DeprecationWarning)
            ...     optim.SGD([w], lr=0.1).zero_grad()
            >>> w.grad.numpy().tolist()
            [0.0, 0.0]
        """
        warnings.warn(
            "Optimizer.zero_grad is deprecated since MegEngine 1.0: use clear_grad instead",
            DeprecationWarning,
            stacklevel=2,
        )
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    zeros = np.zeros(p.grad.shape, p.grad.dtype)
                    p.grad._reset(Tensor(zeros, device=p.grad.device))

    def backward(self, loss):
        """Not an optimizer's job in MegEngine: gradients come from ``autodiff.GradManager``.

        Args:
            loss: ignored.

        Returns:
            never; raises NotImplementedError, as MegEngine does.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> try:
            ...     optim.SGD([mge.Parameter([1.0])], lr=0.1).backward(None)
            ... except NotImplementedError as e:
            ...     print(e)
            use autodiff.GradManager instead
        """
        raise NotImplementedError("use autodiff.GradManager instead")

    def bcast_param(self):
        """Not an optimizer's job in MegEngine: parameters are broadcast across processes with
        ``distributed.bcast_list_``.

        Returns:
            never; raises NotImplementedError, as MegEngine 1.13 does in every process,
            distributed or not.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> try:
            ...     optim.SGD([mge.Parameter([1.0])], lr=0.1).bcast_param()
            ... except NotImplementedError as e:
            ...     print(e)
            use distributed.bcast_list_ instead
        """
        raise NotImplementedError("use distributed.bcast_list_ instead")

    def state_dict(self, keep_var=False):
        """The optimizer's hyperparameters and state, with parameters named by their index.

        Args:
            keep_var: keep the state as Tensors instead of numpy arrays.

        Returns:
            a dict ``{"param_groups": [...], "state": {index: {name: value}}}``.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> opt = optim.SGD([mge.Parameter([1.0, 2.0])], lr=0.1, momentum=0.9)
            >>> sd = opt.state_dict()
            >>> sd["param_groups"][0]["params"], sd["state"][0]["momentum_buffer"].tolist()
            ([0], [0.0, 0.0])
        """
        index = {}
        for group in self.param_groups:
            for p in group["params"]:
                index.setdefault(p, len(index))
        state = {}
        for p, st in self._state.items():
            if p in index:
                state[index[p]] = {
                    k: (v if keep_var else v.numpy()) if isinstance(v, Tensor) else copy.copy(v)
                    for k, v in st.items()
                }
        groups = []
        for group in self.param_groups:
            g = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            g["params"] = [index[p] for p in group["params"]]
            groups.append(g)
        return {"param_groups": groups, "state": state}

    def load_state_dict(self, state):
        """Restores hyperparameters and state saved by :meth:`state_dict`.

        Args:
            state: a dict returned by ``state_dict`` of an optimizer of the same kind whose
                groups have the same sizes.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> a = optim.SGD([mge.Parameter([1.0])], lr=0.5)
            >>> b = optim.SGD([mge.Parameter([1.0])], lr=0.1)
            >>> b.load_state_dict(a.state_dict())
            >>> b.param_groups[0]["lr"]
            0.5
        """
        if not isinstance(state, dict) or set(state) != {"param_groups", "state"}:
            raise ValueError("optimizer state dict must have exactly 'param_groups' and 'state'")
        saved_groups = state["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"loaded state dict has {len(saved_groups)} parameter groups, "
                f"the optimizer has {len(self.param_groups)}"
            )
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    f"parameter group {i} has {len(group['params'])} parameters, the loaded "
                    f"one {len(saved['params'])}"
                )
            if set(group) != set(saved):
                raise ValueError(
                    f"parameter group {i} has keys {sorted(group)}, the loaded one {sorted(saved)}"
                )
        updates = []
        for group, saved in zip(self.param_groups, saved_groups):
            for p, idx in zip(group["params"], saved["params"]):
                st = state["state"].get(idx)
                if st is None:
                    continue
                new = {}
                for k, v in st.items():
                    if isinstance(v, (Tensor, np.ndarray)):
                        arr = np.asarray(v.numpy() if isinstance(v, Tensor) else v)
                        old = self._state.get(p, {}).get(k)
                        if isinstance(old, Tensor) and old.shape != arr.shape:
                            raise ValueError(
                                f"state {k!r} of parameter {idx} has shape {arr.shape}, "
                                f"expected {old.shape}"
                            )
                        v = Tensor(arr, device=p.device)
                    new[k] = v
                updates.append((p, new))
        for p, new in updates:
            self._state.setdefault(p, {}).update(new)
        for group, saved in zip(self.param_groups, saved_groups):
            for k, v in saved.items():
                if k != "params":
                    group[k] = copy.deepcopy(v)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(group):
                if k != "params":
                    lines.append(f"    {k}: {group[k]}")
        return "\n".join(lines) + "\n)"
