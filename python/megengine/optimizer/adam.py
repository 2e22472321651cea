"""Adam and AdamW."""

from ..functional.elemwise import sqrt, square
from .optimizer import Optimizer, _check_hyper, _update_state, _write


def _check_adam(fn, lr, betas, eps, weight_decay):
    _check_hyper(fn, "lr", lr)
    _check_hyper(fn, "eps", eps)
    _check_hyper(fn, "weight_decay", weight_decay)
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"{fn}: betas must be a pair of numbers, got {betas!r}")
    _check_hyper(fn, "betas[0]", betas[0], 0.0, 1.0, high_open=True)
    _check_hyper(fn, "betas[1]", betas[1], 0.0, 1.0, high_open=True)


class _AdamBase(Optimizer):
    _decoupled = False

    def __init__(self, params, lr, betas, eps, weight_decay):
        _check_adam(type(self).__name__, lr, betas, eps, weight_decay)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def _create_state(self, group):
        for p in group["params"]:
            self._add_state(p, "exp_avg")
            self._add_state(p, "exp_avg_sq")
            self._add_state(p, "step", 0.0)

    def _updates(self, group):
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        beta0, beta1 = group["betas"]
        coupled_decay = 0.0 if self._decoupled else weight_decay
        for p, st, pv, g in self._grads(group, coupled_decay):
            step = st["step"] + 1.0
            m = beta0 * st["exp_avg"] + (1.0 - beta0) * g
            v = beta1 * st["exp_avg_sq"] + (1.0 - beta1) * square(g)
            _update_state(st, step=step, exp_avg=m, exp_avg_sq=v)
            bias1 = 1.0 - beta0**step
            bias2 = 1.0 - beta1**step
            delta = (m / bias1) / (sqrt(v / bias2) + eps)
            if weight_decay != 0.0 and self._decoupled:
                delta = delta + weight_decay * pv
            _write(p, pv - lr * delta)


class Adam(_AdamBase):
    r"""Adam (Kingma and Ba, 2014), with L2 weight decay added to the gradient.

    Each step ``t`` (from 1), with ``g`` the gradient:

    .. code-block:: text

        g = g + weight_decay * pv
        m = beta0 * m + (1 - beta0) * g
        v = beta1 * v + (1 - beta1) * g * g
        p = p - lr * (m / (1 - beta0 ** t)) / (sqrt(v / (1 - beta1 ** t)) + eps)

    Args:
        params: Parameters, or dicts defining parameter groups.
        lr: learning rate.
        betas: decay rates ``(beta0, beta1)`` of the running averages of the gradient and
            of its square, each in [0, 1).
        eps: added to the denominator for numerical stability.
        weight_decay: L2 penalty added to the gradient.

    Examples:
        >>> import megengine as mge
        >>> import megengine.optimizer as optim
        >>> w = mge.Parameter([1.0, -1.0])
        >>> w.grad = mge.Tensor([3.0, -0.5])
        >>> _ = optim.Adam([w], lr=0.1).step()  # the first step moves each weight by ~lr
        >>> [round(x, 4) for x in w.numpy().tolist()]
        [0.9, -0.9]
    """

    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, lr, betas, eps, weight_decay)


class AdamW(_AdamBase):
    r"""AdamW (Loshchilov and Hutter, 2017): Adam with weight decay decoupled from the gradient.

    Each step ``t`` (from 1), with ``g`` the gradient:

    .. code-block:: text

        m = beta0 * m + (1 - beta0) * g
        v = beta1 * v + (1 - beta1) * g * g
        d = (m / (1 - beta0 ** t)) / (sqrt(v / (1 - beta1 ** t)) + eps)
        p = p - lr * (d + weight_decay * p)

    Args:
        params: Parameters, or dicts defining parameter groups.
        lr: learning rate.
        betas: decay rates ``(beta0, beta1)`` of the running averages of the gradient and
            of its square, each in [0, 1).
        eps: added to the denominator for numerical stability.
        weight_decay: decoupled weight decay factor.

    Examples:
        >>> import megengine as mge
        >>> import megengine.optimizer as optim
        >>> w = mge.Parameter([2.0])
        >>> w.grad = mge.Tensor([0.0])
        >>> _ = optim.AdamW([w], lr=0.1, weight_decay=0.5).step()  # zero gradient: decay only
        >>> round(w.item(), 4)  # 2 - 0.1 * 0.5 * 2
        1.9
    """

    _decoupled = True

    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, lr, betas, eps, weight_decay)
