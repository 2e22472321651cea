"""Adagrad and Adadelta."""

from ..functional.elemwise import sqrt, square
from .optimizer import Optimizer, _check_hyper, _update_state, _write


class Adagrad(Optimizer):
    r"""Adagrad (Duchi et al., 2011): per-element learning rates from the sum of squared gradients.

    Each step ``t`` (from 1), with ``g`` the gradient and ``s`` the sum (zeros at first):

    .. code-block:: text

        g = g + weight_decay * pv
        s = s + g * g
        p = p - lr / (1 + (t - 1) * lr_decay) * g / sqrt(s + eps)

    Args:
        params: Parameters, or dicts defining parameter groups.
        lr: learning rate.
        lr_decay: learning-rate decay per step.
        eps: added inside the square root for numerical stability.
        weight_decay: L2 penalty added to the gradient.

    Examples:
        >>> import megengine as mge
        >>> import megengine.optimizer as optim
        >>> w = mge.Parameter([1.0])
        >>> w.grad = mge.Tensor([2.0])
        >>> _ = optim.Adagrad([w], lr=0.5, eps=0.0).step()  # 1 - 0.5 * 2 / sqrt(4)
        >>> w.numpy().tolist()
        [0.5]
    """

    def __init__(self, params, lr=1e-2, lr_decay=0.0, eps=1e-10, weight_decay=0.0):
        _check_hyper("Adagrad", "lr", lr)
        _check_hyper("Adagrad", "lr_decay", lr_decay)
        _check_hyper("Adagrad", "eps", eps)
        _check_hyper("Adagrad", "weight_decay", weight_decay)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def _create_state(self, group):
        for p in group["params"]:
            self._add_state(p, "square_avg")
            self._add_state(p, "step", 0.0)

    def _updates(self, group):
        lr, lr_decay = group["lr"], group["lr_decay"]
        eps, weight_decay = group["eps"], group["weight_decay"]
        for p, st, pv, g in self._grads(group, weight_decay):
            step = st["step"] + 1.0
            s = st["square_avg"] + square(g)
            _update_state(st, step=step, square_avg=s)
            clr = lr / (1.0 + (step - 1.0) * lr_decay)
            _write(p, pv - clr * g / sqrt(s + eps))


class Adadelta(Optimizer):
    r"""Adadelta (Zeiler, 2012): steps scaled by running averages of squared gradients and
    squared updates.

    Each step, with ``g`` the gradient and ``s``, ``a`` the running averages (zeros at first):

    .. code-block:: text

        g = g + weight_decay * pv
        s = rho * s + (1 - rho) * g * g
        d = sqrt(a + eps) / sqrt(s + eps) * g
        a = rho * a + (1 - rho) * d * d
        p = p - lr * d

    Args:
        params: Parameters, or dicts defining parameter groups.
        lr: coefficient that scales the update.
        rho: decay rate of the running averages, in [0, 1].
        eps: added inside the square roots for numerical stability.
        weight_decay: L2 penalty added to the gradient.

    Examples:
        >>> import megengine as mge
        >>> import megengine.optimizer as optim
        >>> w = mge.Parameter([1.0])
        >>> w.grad = mge.Tensor([1.0])
        >>> _ = optim.Adadelta([w], lr=1.0, rho=0.75, eps=0.25).step()
        >>> w.numpy().tolist()  # d = sqrt(0.25) / sqrt(0.25 + 0.25) = 0.7071...
        [0.2928...]
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0):
        _check_hyper("Adadelta", "lr", lr)
        _check_hyper("Adadelta", "rho", rho, 0.0, 1.0)
        _check_hyper("Adadelta", "eps", eps)
        _check_hyper("Adadelta", "weight_decay", weight_decay)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def _create_state(self, group):
        for p in group["params"]:
            self._add_state(p, "square_avg")
            self._add_state(p, "acc_delta")
            self._add_state(p, "step", 0.0)

    def _updates(self, group):
        lr, rho = group["lr"], group["rho"]
        eps, weight_decay = group["eps"], group["weight_decay"]
        for p, st, pv, g in self._grads(group, weight_decay):
            s = rho * st["square_avg"] + (1.0 - rho) * square(g)
            d = sqrt((st["acc_delta"] + eps) / (s + eps)) * g
            acc_delta = rho * st["acc_delta"] + (1.0 - rho) * square(d)
            _update_state(st, acc_delta=acc_delta, square_avg=s, step=st["step"] + 1.0)
            _write(p, pv - lr * d)
