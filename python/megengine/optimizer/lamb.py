"""LAMB: Adam with a layer-wise trust ratio; LAMBFp16: LAMB on a float32 master copy."""

import numpy as np

from ..core.ops import builtin
from ..core.tensor.array_method import apply, cached_op
from ..functional.elemwise import sqrt, square
from .adam import _check_adam
from .optimizer import Optimizer, _update_state, _write


class LAMB(Optimizer):
    r"""LAMB (You et al., 2019): an Adam step scaled per parameter by ``||p|| / ||update||``.

    Each step ``t`` (from 1), with ``g`` the gradient:

    .. code-block:: text

        m = beta0 * m + (1 - beta0) * g
        v = beta1 * v + (1 - beta1) * g * g
        m_hat, v_hat = m / (1 - beta0 ** t), v / (1 - beta1 ** t)   (m, v if not bias_correction)
        u = m_hat / (sqrt(v_hat) + eps) + weight_decay * pv
        r = ||p|| / ||u|| if weight_decay != 0 or always_adapt, and both norms are > 0; else 1
        p = p - lr * r * u

    Args:
        params: Parameters, or dicts defining parameter groups.
        lr: learning rate.
        betas: decay rates ``(beta0, beta1)`` of the running averages of the gradient and
            of its square, each in [0, 1).
        eps: added to the denominator for numerical stability.
        bias_correction: divide the running averages by ``1 - beta ** t``.
        weight_decay: decoupled weight decay factor.
        always_adapt: apply the trust ratio to parameters whose weight decay is 0 too.

    Examples:
        >>> import megengine as mge
        >>> import megengine.optimizer as optim
        >>> w = mge.Parameter([3.0, 4.0])
        >>> w.grad = mge.Tensor([1.0, 1.0])
        >>> _ = optim.LAMB([w], lr=0.1, always_adapt=True).step()
        >>> [round(x, 4) for x in w.numpy().tolist()]  # u = [1, 1], r = 5 / sqrt(2)
        [2.6464, 3.6464]
    """

    def __init__(
        self,
        params,
        lr,
        betas=(0.9, 0.999),
        eps=1e-8,
        bias_correction=True,
        weight_decay=0.0,
        always_adapt=False,
    ):
        _check_adam(type(self).__name__, lr, betas, eps, weight_decay)
        # bias_correction and always_adapt are attributes, not group hyperparameters, as in
        # MegEngine (so the groups of a state dict have the same keys as MegEngine's)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)
        self.bias_correction = bias_correction
        self.always_adapt = always_adapt

    def _create_state(self, group):
        for p in group["params"]:
            self._add_state(p, "exp_avg")
            self._add_state(p, "exp_avg_sq")
            self._add_state(p, "step", 0.0)

    def _updates(self, group):
        for p in group["params"]:
            if p.grad is None:
                continue
            # nothing here is recorded by autograd
            _write(p, self._lamb_step(group, self._state[p], p.detach(), p.grad.detach()))

    def _lamb_step(self, group, st, pv, g):
        """Advances the moments in ``st`` by gradient ``g`` and returns the new value of ``pv``."""
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        beta0, beta1 = group["betas"]
        adapt = weight_decay != 0.0 or self.always_adapt
        step = st["step"] + 1.0
        m = beta0 * st["exp_avg"] + (1.0 - beta0) * g
        v = beta1 * st["exp_avg_sq"] + (1.0 - beta1) * square(g)
        _update_state(st, step=step, exp_avg=m, exp_avg_sq=v)
        if self.bias_correction:
            m, v = m / (1.0 - beta0**step), v / (1.0 - beta1**step)
        u = m / (sqrt(v) + eps)
        if weight_decay != 0.0:
            u = u + weight_decay * pv
        if adapt:
            p_norm = sqrt(square(pv).sum())
            u_norm = sqrt(square(u).sum())
            ok = (p_norm > 0) & (u_norm > 0)
            one = p_norm * 0.0 + 1.0
            cond = cached_op(builtin.Elemwise, mode="COND")
            (safe_u,) = apply(cond, ok, u_norm, one)
            (ratio,) = apply(cond, ok, p_norm / safe_u, one)
            u = ratio * u
        return pv - lr * u


class LAMBFp16(LAMB):
    r"""LAMB for float16 parameters: the update runs in float32 on a float32 master copy.

    Each parameter keeps, besides LAMB's state, ``param_fp32``: a float32 copy of its values.
    A step applies :class:`LAMB`'s update to that copy, with the moments in float32 and the
    gradient converted to float32, and writes the result back into the parameter in the
    parameter's dtype. Small updates that float16 would round away so accumulate in the copy.
    (MegEngine 1.13's ``LAMBFp16`` cannot be constructed: it passes a ``dtype`` its
    ``_add_state`` does not take. This one does what it was written to do; it also writes a
    float32 parameter back as float32, where MegEngine's would have turned it float16.)

    Args:
        params: Parameters, or dicts defining parameter groups.
        lr: learning rate.
        betas: decay rates ``(beta0, beta1)`` of the running averages of the gradient and
            of its square, each in [0, 1).
        eps: added to the denominator for numerical stability.
        bias_correction: divide the running averages by ``1 - beta ** t``.
        weight_decay: decoupled weight decay factor.
        always_adapt: apply the trust ratio to parameters whose weight decay is 0 too.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.optimizer as optim
        >>> w = mge.Parameter(np.array([3.0, 4.0], dtype="float16"))
        >>> opt = optim.LAMBFp16([w], lr=0.1, always_adapt=True)
        >>> w.grad = mge.Tensor(np.array([1.0, 1.0], dtype="float16"))
        >>> _ = opt.step()
        >>> w.dtype.name, opt._state[w]["param_fp32"].dtype.name
        ('float16', 'float32')
        >>> [round(x, 4) for x in opt._state[w]["param_fp32"].numpy().tolist()]
        [2.6464, 3.6464]
    """

    def _create_state(self, group):
        for p in group["params"]:
            self._add_state(p, "exp_avg", np.zeros(p.shape, "float32"))
            self._add_state(p, "exp_avg_sq", np.zeros(p.shape, "float32"))
            self._add_state(p, "step", 0.0)
            self._state[p]["param_fp32"] = p.detach().astype("float32")

    def _updates(self, group):
        for p in group["params"]:
            if p.grad is None:
                continue
            st = self._state[p]
            g = p.grad.detach().astype("float32")
            _update_state(st, param_fp32=self._lamb_step(group, st, st["param_fp32"], g))
            _write(p, st["param_fp32"])
