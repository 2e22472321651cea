"""``Grad``: MegEngine's low-level gradient recorder, which code written against MegEngine's core
(and its tests) uses instead of :class:`~megengine.autodiff.GradManager`: a ``GradKey`` of the
C++ tape (``imperative/src/grad.cpp``) recording while the ``with`` block runs, with a callback
per tensor that receives its gradient."""

from .. import _imperative_rt as _rt

__all__ = ["Grad"]


class Grad:
    """Records the ops of a ``with`` block and computes gradients on demand.

    Args:
        name: a label, kept for MegEngine's signature.

    Examples:
        >>> import megengine as mge
        >>> from megengine.core.autodiff.grad import Grad
        >>> x = mge.Tensor([3.0])
        >>> got = {}
        >>> with Grad() as grad:
        ...     _ = grad.wrt(x, callback=lambda g: got.update(dx=g))
        ...     grad(x * x, mge.Tensor([1.0]))
        >>> got["dx"].numpy().tolist()
        [6.0]
    """

    def __init__(self, name=None):
        self.name = name
        self._key = _rt.GradKey()
        self._targets = []  # (tensor, callback)

    def wrt(self, *tensors, callback=None):
        """Marks tensors whose gradients ``__call__`` computes; ``callback(grad)`` receives each.

        Args:
            tensors: leaf tensors (ones recorded ops read, not results of recorded ops).
            callback: a function of one gradient Tensor, or None.

        Returns:
            self.

        Examples:
            >>> import megengine as mge
            >>> from megengine.core.autodiff.grad import Grad
            >>> isinstance(Grad().wrt(mge.Tensor([1.0])), Grad)
            True
        """
        for t in tensors:
            self._key.attach(t)
            self._targets.append((t, callback))
        return self

    def __call__(self, ys, dys):
        """Computes the gradients of ``sum(ys[i] * dys[i])`` and hands them to the callbacks
        (a tensor no path reaches gets no call).

        Args:
            ys: a Tensor or a sequence of Tensors.
            dys: their gradients, matching ``ys``.

        Returns:
            None

        Examples:
            >>> import megengine as mge
            >>> from megengine.core.autodiff.grad import Grad
            >>> x, out = mge.Tensor([2.0]), []
            >>> with Grad() as g:
            ...     _ = g.wrt(x, callback=out.append)
            ...     g(x * 5, mge.Tensor([1.0]))
            >>> out[0].numpy().tolist()
            [5.0]
        """
        ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
        dys = list(dys) if isinstance(dys, (list, tuple)) else [dys]
        if len(ys) != len(dys):
            raise ValueError(f"Grad: {len(ys)} outputs but {len(dys)} output gradients")
        grads = self._key.backward(ys, dys, [t for t, _ in self._targets], None)
        for (_, callback), g in zip(self._targets, grads):
            if callback is not None and g is not None:
                callback(g)

    def __enter__(self):
        self._key.activate()
        return self

    def __exit__(self, *exc):
        self._key.deactivate()
        self._key.release()
