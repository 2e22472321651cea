"""GradManager: records the ops applied to attached tensors and computes their gradients.

Each recording session is a C++ ``GradKey`` (``imperative/src/grad.cpp``): while it is active,
``apply`` keeps a tape node for every op whose inputs depend on an attached tensor; ``backward``
runs the backward rules in reverse and accumulates into ``tensor.grad``. Nested managers record
each other's backward passes, which gives higher-order gradients.
"""

import contextlib
import itertools
import weakref

import numpy as np

from ..core import _imperative_rt as _rt
from ..tensor import Tensor
from ..utils.future import Future

# Managers between record() and release(), and the one running backward: megengine.distributed
# attaches the stand-in inputs of collectives to them and registers its gradient callbacks.
_recording = weakref.WeakSet()
_backwarding = None
# record() stamps each session: a manager records the backward passes only of managers that
# started recording after it (MegEngine's order of visibility).
_record_order = itertools.count()


@contextlib.contextmanager
def _recording_suspended():
    """No recording manager records the ops run inside (a Function's forward)."""
    keys = [gm._key for gm in list(_recording) if gm._key is not None and gm._key.active]
    for key in keys:
        key.deactivate()
    try:
        yield
    finally:
        for key in keys:
            key.activate()


def _nested_recording():
    """Whether more than one manager records now: an outer one may then record an inner one's
    backward, for a gradient of a gradient."""
    return sum(1 for gm in list(_recording) if gm._key is not None and gm._key.active) > 1


_DIFFERENTIABLE = ("float32", "float16", "bfloat16")


class NonDifferentiableError(TypeError, AssertionError):
    """Attaching a tensor whose dtype has no gradients.

    A TypeError, and an AssertionError too: MegEngine asserts here, and code written for it
    catches that.

    Examples:
        >>> import megengine as mge
        >>> from megengine.autodiff import GradManager
        >>> try:
        ...     GradManager().attach(mge.Tensor([1, 2]))
        ... except AssertionError as e:
        ...     print(type(e).__name__)
        NonDifferentiableError
    """


def get_backwarding_grad_manager():
    """The GradManager whose backward is running (its gradient callbacks run inside it), or None.

    Returns:
        a GradManager or None.

    Examples:
        >>> from megengine.autodiff.grad_manager import get_backwarding_grad_manager
        >>> get_backwarding_grad_manager() is None
        True
    """
    return _backwarding


class GradManager:
    """Computes gradients of attached tensors.

    Examples:
        >>> import megengine as mge
        >>> from megengine.autodiff import GradManager
        >>> w = mge.Parameter([1.0, 2.0, 3.0])
        >>> gm = GradManager().attach([w])
        >>> with gm:
        ...     loss = (w * w).sum()
        ...     gm.backward(loss)
        >>> w.grad.numpy().tolist()
        [2.0, 4.0, 6.0]
    """

    def __init__(self):
        self._attached = []  # [(weakref to tensor, callbacks)], in attach order
        # While recording, per attached entry: the tensor as attached (GradKey.attach's handle),
        # whose gradient backward computes even if the object was since assigned to.
        self._leaves = []
        self._key = None
        self._group = ()  # the managers recording with this one as ``gm1 | gm2``
        # (tensor, gradient) pairs backward also starts from: outputs of collectives that this
        # rank gets no result of, whose backward rule must still run on every rank.
        self._extra_roots = []
        self._after_backward_callbacks = []

    def attach(self, tensors, callbacks=None):
        """Attaches tensors so that backward computes their gradients.

        Args:
            tensors: a Tensor or a list of Tensors (float dtypes).
            callbacks: a callable or a list of callables ``f(tensor, grad) -> grad`` run on each
                gradient as soon as backward has finished it (while backward goes on with the
                other gradients), before it is accumulated into ``tensor.grad``.

        Returns:
            this GradManager, so that ``gm = GradManager().attach(params)`` works.

        Examples:
            >>> import megengine as mge
            >>> from megengine.autodiff import GradManager
            >>> w = mge.Parameter([1.0])
            >>> gm = GradManager().attach(w)
            >>> len(gm.attached_tensors())  # held weakly: attaching keeps nothing alive
            1
        """
        if isinstance(tensors, Tensor):
            tensors = [tensors]
        if callbacks is None:
            callbacks = []
        elif callable(callbacks):
            callbacks = [callbacks]
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(f"GradManager.attach expects Tensors, got {type(t).__name__}")
            if np.dtype(t.dtype).name not in _DIFFERENTIABLE:
                raise NonDifferentiableError(
                    f"GradManager.attach: float dtypes only ({', '.join(_DIFFERENTIABLE)}), "
                    f"got dtype {np.dtype(t.dtype).name} (shape {tuple(t.shape)})"
                )
            for ref, cbs in self._attached:
                if ref() is t:
                    cbs.extend(callbacks)
                    break
            else:
                self._attached.append((weakref.ref(t), list(callbacks)))
                if self._key is not None:
                    self._leaves.append(self._key.attach(t))
        return self

    def attached_tensors(self):
        """The attached tensors that are still alive, in attach order.

        Returns:
            a list of Tensors.

        Examples:
            >>> import megengine as mge
            >>> from megengine.autodiff import GradManager
            >>> a, b = mge.Parameter([1.0]), mge.Parameter([2.0])
            >>> [t is a for t in GradManager().attach([a, b]).attached_tensors()]
            [True, False]
        """
        return [t for t in (ref() for ref, _ in self._attached) if t is not None]

    def record(self):
        """Starts recording (what ``with gm:`` does on entry).

        Examples:
            >>> from megengine.autodiff import GradManager
            >>> gm = GradManager()
            >>> gm.record(); gm.release()
        """
        if self._key is not None:
            raise RuntimeError("GradManager is already recording")
        self._key = _rt.GradKey()
        self._order = next(_record_order)
        self._leaves = [
            None if t is None else self._key.attach(t) for t in (r() for r, _ in self._attached)
        ]
        self._key.activate()
        _recording.add(self)

    def release(self):
        """Stops recording and drops the recorded graph (what ``with gm:`` does on exit).

        Examples:
            >>> from megengine.autodiff import GradManager
            >>> gm = GradManager()
            >>> gm.record(); gm.release(); gm.release()  # releasing twice is harmless
        """
        _recording.discard(self)
        self._extra_roots = []
        self._leaves = []
        if self._key is not None:
            self._key.deactivate()
            self._key.release()
            self._key = None

    def _register_after_backward_callback(self, callback):
        # Runs after the gradient callbacks, before their Futures are read (make_allreduce_cb
        # flushes its last buckets here).
        self._after_backward_callbacks.append(callback)
        return self

    def backward(self, y=None, dy=None):
        """Computes gradients of ``y`` and accumulates them into the attached tensors' ``.grad``.

        Args:
            y: a Tensor or a list of Tensors; None releases the recording without computing
                (unless a collective left this rank a backward to run: see
                megengine.distributed.functional).
            dy: gradients of ``y`` (same structure); ones when None.

        Examples:
            >>> import megengine as mge
            >>> from megengine.autodiff import GradManager
            >>> x = mge.Parameter([3.0])
            >>> gm = GradManager().attach(x)
            >>> with gm:
            ...     gm.backward(x * x * x)
            >>> x.grad.numpy().tolist()
            [27.0]
        """
        if self._key is None:
            raise RuntimeError("GradManager.backward called outside of recording (use `with gm:`)")
        if y is None and not self._extra_roots:
            self.release()
            return
        # With y None, a rank runs the backward of the collectives whose result it did not get
        # (MegEngine's ``gm.backward()`` on a reduce's non-root).
        ys = [] if y is None else list(y) if isinstance(y, (list, tuple)) else [y]
        if dy is None:
            dys = []
        else:
            dys = list(dy) if isinstance(dy, (list, tuple)) else [dy]
            dys = [d if isinstance(d, Tensor) else Tensor(d) for d in dys]
        if self._extra_roots:
            if not dys:
                dys = [Tensor(np.ones(t.shape, dtype=t.dtype), device=t.device) for t in ys]
            ys = ys + [t for t, _ in self._extra_roots]
            dys = dys + [g for _, g in self._extra_roots]
        attached, leaves = [], []
        for (ref, cbs), leaf in zip(self._attached, self._leaves):
            t = ref()
            if t is not None:
                attached.append((t, cbs))
                leaves.append(leaf)
        # Managers grouped with this one do not record its backward pass, nor do managers that
        # started recording after it; managers recording since before it do (higher order).
        others = {gm for gm in self._group if gm is not self}
        others.update(gm for gm in list(_recording) if gm._order > self._order)
        others = [gm._key for gm in others if gm._key is not None and gm._key.active]
        global _backwarding
        outer = _backwarding
        results = {}

        def ready(i, g):
            # As MegEngine, callbacks see each gradient as soon as it is final, while backward
            # goes on: make_allreduce_cb starts a full bucket's all-reduce here.
            t, callbacks = attached[i]
            for cb in callbacks:
                g = cb(t, g)
            results[i] = (t, g)

        try:
            _backwarding = self
            for key in others:
                key.deactivate()
            try:
                with_callbacks = any(cbs for _, cbs in attached)
                grads = self._key.backward(ys, dys, leaves, ready if with_callbacks else None)
            finally:
                for key in others:
                    key.activate()
            if not with_callbacks:
                results = {i: (attached[i][0], g) for i, g in enumerate(grads) if g is not None}
            results = [results[i] for i in sorted(results)]
            for cb in self._after_backward_callbacks:
                cb()
            for t, g in results:
                if isinstance(g, Future):
                    g = g.get()
                old = getattr(t, "grad", None)
                # Not detached: under an outer GradManager the gradient stays differentiable.
                # Accumulation is in place (MegEngine's `grad += g`), so a traced step that
                # accumulates writes each replay's sum back into the same .grad tensor.
                if old is None:
                    t.grad = g
                else:
                    old._assign(old + g)
        finally:
            _backwarding = outer
            self.release()

    def __enter__(self):
        self.record()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.release()

    def __or__(self, other):
        """``gm1 | gm2``: a group that records with both managers at once.

        Unlike nesting ``with gm1: with gm2:``, where the outer manager records the inner
        one's backward pass (for higher-order gradients), the managers of a group do not
        record each other's backward passes.

        Args:
            other: a GradManager or a group of them.

        Returns:
            a GradManagerGroup, to use in a ``with`` statement.

        Examples:
            >>> import megengine as mge
            >>> from megengine.autodiff import GradManager
            >>> a, b = mge.Parameter([2.0]), mge.Parameter([3.0])
            >>> gm_a, gm_b = GradManager().attach(a), GradManager().attach(b)
            >>> with gm_a | gm_b:
            ...     gm_a.backward(a * b)
            ...     gm_b.backward(a * b * b)
            >>> a.grad.numpy().tolist(), b.grad.numpy().tolist()
            ([3.0], [12.0])
        """
        if isinstance(other, GradManager):
            return GradManagerGroup([self, other])
        return NotImplemented

    __ror__ = __or__


class GradManagerGroup:
    """GradManagers that record together (``gm1 | gm2 | ...``), used as a context manager.

    Args:
        gms: the GradManagers, recorded in this order and released in reverse.

    Examples:
        >>> import megengine as mge
        >>> from megengine.autodiff import GradManager
        >>> w = mge.Parameter([1.0])
        >>> gm1, gm2 = GradManager().attach(w), GradManager().attach(w)
        >>> group = gm1 | gm2
        >>> with group:
        ...     gm1.backward(w * 4)
        >>> w.grad.numpy().tolist()
        [4.0]
    """

    def __init__(self, gms):
        self._gms = list(gms)

    def merge_with(self, other):
        """This group and ``other`` (a GradManager or a group) as one group.

        Args:
            other: a GradManager or a GradManagerGroup.

        Returns:
            a new GradManagerGroup.
        """
        if isinstance(other, GradManager):
            other = GradManagerGroup([other])
        elif not isinstance(other, GradManagerGroup):
            return NotImplemented
        return GradManagerGroup([*self._gms, *other._gms])

    __or__ = merge_with
    __ror__ = merge_with

    def __enter__(self):
        entered = []
        try:
            for gm in self._gms:
                gm.record()
                entered.append(gm)
        except Exception:
            for gm in reversed(entered):
                gm.release()
            raise
        for gm in self._gms:
            gm._group = tuple(self._gms)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        for gm in reversed(self._gms):
            gm.release()
            gm._group = ()
