"""Hands a traced ``amp.GradScaler``'s found-inf flag to the optimizer step that follows it.

Eagerly, ``GradScaler.unscale`` skips a step whose gradients are not finite by dropping them
(``grad = None``), as MegEngine does. A recorded graph cannot make that choice on the host, so
while ``jit.trace`` records, the scaler marks each gradient with the flag (a 0-d bool tensor)
and ``Optimizer.step`` keeps a marked parameter and its state where the flag is set. The mark
lives on the gradient object: it follows in-place changes (``clip_grad_norm``) and is gone with
the gradient (``clear_grad``). A recording that leaves marks no step took cannot replay (each
replay would hand an eager step non-finite gradients with no mark): ``jit.trace`` asks
``untaken`` when its recording ends.
"""

_ATTR = "_amp_found_inf"

# (parameter, gradient) pairs marked since the recording began and not taken yet.
_marked = []


def mark(param, flag):
    """Marks ``param.grad`` with ``flag``, or-ing with a mark it already has."""
    grad = param.grad
    old = getattr(grad, _ATTR, None)
    if old is not None:
        flag = old | flag
    setattr(grad, _ATTR, flag)
    _marked.append((param, grad))


def take(param):
    """The mark of ``param.grad`` (None if unmarked), removed from the gradient."""
    grad = getattr(param, "grad", None)
    flag = getattr(grad, _ATTR, None)
    if flag is not None:
        delattr(grad, _ATTR)
    return flag


def untaken():
    """Whether a parameter still holds a gradient marked since ``reset`` and not taken."""
    return any(p.grad is g and getattr(g, _ATTR, None) is not None for p, g in _marked)


def reset():
    """Forgets the marks made so far (their gradients keep them), at a recording's ends."""
    _marked.clear()
