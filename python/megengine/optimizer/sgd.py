"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay."""

from ..core.tensor.array_method import elemwise
from .optimizer import Optimizer, _check_hyper, _update_state, _write


def _mul_add(a, b, c):
    """a * b + c in one pass over memory (Elemwise FUSE_MUL_ADD3; b a Python number)."""
    return elemwise("FUSE_MUL_ADD3", a, b, c)


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
            # Each update a * b + c is one fused op: a step is memory-bound, and separate
            # multiplies and adds read and write every parameter-sized tensor twice as often.
            if weight_decay != 0.0:
                g = _mul_add(pv, weight_decay, g)
            if momentum != 0.0:
                state = self._state[p]
                v = _mul_add(state["momentum_buffer"], momentum, g)
                _update_state(state, momentum_buffer=v)
                g = _mul_add(v, momentum, g) if nesterov else v
            _write(p, _mul_add(g, -lr, pv))
