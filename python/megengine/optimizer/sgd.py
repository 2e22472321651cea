"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay."""

from .optimizer import Optimizer, _check_hyper, _update_state, _write


class SGD(Optimizer):
    r"""Stochastic gradient descent, optionally with (Nesterov) momentum and weight decay.

    Each step, with ``g`` the gradient and ``v`` the momentum buffer (zeros at first):

    .. code-block:: text

        g = g + weight_decay * pv
        v = momentum * v + g                  (momentum != 0)
        g = g + momentum * v if nesterov else v
        p = p - lr * g

    Args:
        params: Parameters, or dicts defining parameter groups.
        lr: learning rate.
        momentum: momentum factor (0 turns momentum off).
        nesterov: use Nesterov momentum (needs momentum > 0).
        weight_decay: L2 penalty added to the gradient.

    Examples:
        >>> import megengine as mge
        >>> import megengine.optimizer as optim
        >>> w = mge.Parameter([1.0])
        >>> opt = optim.SGD([w], lr=0.1, momentum=0.5)
        >>> for _ in range(2):
        ...     w.grad = mge.Tensor([1.0])
        ...     _ = opt.step()
        >>> round(w.item(), 4)  # 1 - 0.1 * 1 - 0.1 * 1.5
        0.75
    """

    def __init__(self, params, lr, momentum=0.0, nesterov=False, weight_decay=0.0):
        _check_hyper("SGD", "lr", lr)
        _check_hyper("SGD", "momentum", momentum)
        _check_hyper("SGD", "weight_decay", weight_decay)
        if nesterov and momentum <= 0:
            raise ValueError("SGD: nesterov momentum needs momentum > 0")
        # nesterov is an attribute, not a group hyperparameter, as in MegEngine (so the
        # groups of a state dict have the same keys as MegEngine's)
        defaults = {"lr": lr, "momentum": momentum, "weight_decay": weight_decay}
        super().__init__(params, defaults)
        self.nesterov = nesterov

    def _create_state(self, group):
        if group["momentum"] != 0.0:
            for p in group["params"]:
                self._add_state(p, "momentum_buffer")

    def _updates(self, group):
        lr, momentum = group["lr"], group["momentum"]
        weight_decay, nesterov = group["weight_decay"], self.nesterov
        for p in group["params"]:
            if p.grad is None:
                continue
            g, pv = p.grad.detach(), p.detach()  # nothing here is recorded by autograd
            if weight_decay != 0.0:
                g = g + weight_decay * pv
            if momentum != 0.0:
                state = self._state[p]
                v = momentum * state["momentum_buffer"] + g
                _update_state(state, momentum_buffer=v)
                g = g + momentum * v if nesterov else v
            _write(p, pv - lr * g)
