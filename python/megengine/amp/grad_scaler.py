"""``amp.GradScaler``: loss scaling for mixed-precision training, as MegEngine 1.13's."""

from collections.abc import Iterable

from ..autodiff import GradManager
from ..core import _imperative_rt as _rt
from ..core.tensor import step_gate as _step_gate
from ..functional import broadcast_to, where, zeros_like
from ..functional.math import _check_non_finite
from ..tensor import Tensor


def _tensor(x):
    return x if isinstance(x, Tensor) else Tensor(x)


def _as(scalar, t):
    """A 0-d float32 ``scalar`` in ``t``'s dtype, on ``t``'s device."""
    if scalar.device != t.device:
        scalar = scalar._copy_to(t.device)
    return scalar if t._dtype_name == "float32" else scalar.astype(t._dtype_name)


class GradScaler:
    r"""A helper class that performs grad scaling to prevent from data overflow in
    :class:`~.autocast` mode.

    ``backward`` multiplies the loss gradient by ``scale_factor``; ``unscale`` divides the
    parameters' gradients by it and, when any of them holds an inf or NaN (checked by the
    CheckNonFinite op), drops them all (``grad = None``), so ``optimizer.step()`` leaves those
    parameters alone; ``update`` then multiplies ``scale_factor`` by ``backoff_factor`` and
    restarts the count, and otherwise multiplies it by ``growth_factor`` after every
    ``growth_interval`` finite steps in a row. ``growth_interval=0`` keeps the scale fixed
    and unscales without checking. The scale and the count are kept in tensors (float32 and
    int32; ``scale_factor`` and ``_growth_tracker`` read them as Python numbers), so a scale
    that is not a power of two rounds to float32, where MegEngine keeps a Python float.

    In a :func:`~.jit.trace`'d step the whole scaled step is part of the graph, with no
    decision on the host: the found-inf flag stays a tensor, ``unscale`` keeps the unscaled
    gradients (non-finite ones included) and marks them with the flag, the optimizer's
    ``step`` in the same traced function keeps each marked parameter and its state (momentum,
    Adam's moments and step count) where the flag is set, and ``update`` computes the next scale
    and count with elementwise ops. Every replay thus gives what the eager step gives
    (parameters, optimizer state, scale), overflowing steps included; the gradients of a
    skipped step are left in ``.grad`` instead of None until ``clear_grad``. A traced function
    that unscales without stepping the optimizer cannot replay that way (the eager step after a
    replay would see non-finite gradients): the trace warns and runs it eagerly on every call.
    Reading ``scale_factor`` inside a traced function takes its value as a constant: the trace
    records again when the scale changes.

    Args:
        init_scale: Initial scale factor.
        growth_factor: Factor that the scale is multiplied by in actual
            :meth:`update` stage. If growth_factor is 0, scale_factor will not update.
        backoff_factor: Factor that the scale is multiplied by when encountering
            overflow grad.
        growth_interval: The interval between two scale update stages.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> import megengine.module as M
        >>> import megengine.optimizer as optim
        >>> from megengine.amp import GradScaler, autocast
        >>> from megengine.autodiff import GradManager
        >>> model = M.Linear(3, 2)
        >>> gm = GradManager().attach(model.parameters())
        >>> opt = optim.SGD(model.parameters(), lr=0.1)
        >>> scaler = GradScaler(init_scale=8.0)
        >>> @autocast()
        ... def train_step(image, label):
        ...     with gm:
        ...         logits = model(image)
        ...         loss = F.nn.cross_entropy(logits, label)
        ...         scaler.backward(gm, loss)
        ...     opt.step().clear_grad()
        ...     return loss
        >>> loss = train_step(mge.Tensor(np.ones((4, 3), "float32")), mge.Tensor([0, 1, 0, 1]))
        >>> loss._dtype_name, scaler.scale_factor
        ('float32', 8.0)
    """

    def __init__(
        self,
        init_scale: float = 2.0**4,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
    ):
        # Tensors, not Python numbers, so that a traced step reads and updates them in its
        # graph; they exist before any trace, which therefore binds them (not constants).
        self._scale_t = Tensor(float(init_scale), dtype="float32")
        self._tracker_t = Tensor(0, dtype="int32")
        self._version = 0  # counts assignments from Python (a fixed scale's trace guard)
        self.growth_factor = float(growth_factor)
        self.backoff_factor = float(backoff_factor)
        self.growth_interval = growth_interval
        # Whether an unscale since the last update found a non-finite gradient: a tensor too,
        # so that an update outside the traced step that unscaled reads each replay's flag.
        self._found_t = Tensor(False)

    @property
    def scale_factor(self) -> float:
        """The current loss scale, a Python float (read from the scale tensor)."""
        value = self._read_scale()
        if _rt._trace_active():
            # A traced function that reads the scale holds it as a constant of its graph.
            _rt._trace_note_guard(self._read_scale, value)
        return value

    @scale_factor.setter
    def scale_factor(self, value):
        self._scale_t._reset(Tensor(float(value), dtype="float32", device=self._scale_t.device))
        self._version += 1

    @property
    def _growth_tracker(self) -> int:
        return int(self._tracker_t.item())

    @_growth_tracker.setter
    def _growth_tracker(self, value):
        self._tracker_t._reset(Tensor(int(value), dtype="int32", device=self._tracker_t.device))
        self._version += 1

    def _read_scale(self):
        # A trace that reads the scale notes a guard (scale_factor), so it records again when
        # the scale changes: the read need not end its recording.
        return float(self._scale_t._numpy_untraced().item())

    def _read_version(self):
        return self._version

    def backward(
        self,
        gm: GradManager,
        y: Tensor | list[Tensor] | None = None,
        dy: Tensor | list[Tensor] | None = None,
        *,
        unscale_grad: bool = True,
        update_scale: bool = "if_unscale_grad",
    ):
        r"""A wrapper of GradManager's :meth:`~.GradManager.backward`, used to scale
        ``y``'s grad and unscale parameters' grads.

        Args:
            gm: The to be wrapped GradManager.
            y: Same as GradManager backward's ``y``.
            dy: Same as GradManager backward's ``dy``. Will be multiplied
                by ``scale_factor``.
            unscale_grad: Whether do :meth:`unscale` at the same time. Could be
                ``False`` if needs to accumulate grads.
            update_scale: Same as :meth:`unscale`'s ``update``. Will be ignored
                if ``unscale_grad`` is ``False``.

        Returns:
            None

        Examples:
            >>> import megengine as mge
            >>> from megengine.amp import GradScaler
            >>> from megengine.autodiff import GradManager
            >>> w = mge.Parameter([1.0, 2.0])
            >>> gm = GradManager().attach([w])
            >>> scaler = GradScaler(init_scale=4.0)
            >>> with gm:
            ...     scaler.backward(gm, (w * w).sum())
            >>> w.grad.numpy().tolist()
            [2.0, 4.0]
        """
        # These checks should be consistent with GradManager's
        if y is None:
            ys = []
        elif isinstance(y, (tuple, list)):
            ys = y
        else:
            ys = [y]
        self._note_fixed_scale()
        if dy is None:
            dys = [broadcast_to(_as(self._scale_t, y), y.shape) for y in ys]
        else:
            dys = [_tensor(d) for d in (dy if isinstance(dy, (tuple, list)) else [dy])]
            dys = [d * _as(self._scale_t, d) for d in dys]

        gm.backward(y=ys, dy=dys)

        if unscale_grad:
            self.unscale(gm.attached_tensors())
            if update_scale:
                self.update()

    def _note_fixed_scale(self):
        # A fixed scale is only read by a traced step, which makes it a constant under
        # capture_as_const: a trace records again after a Python assignment (scale_factor =,
        # load_state_dict). A dynamic scale is updated by the step, so always read.
        if self.growth_interval == 0 and _rt._trace_active():
            _rt._trace_note_guard(self._read_version, self._version)

    def unscale(self, grad_tensors: Iterable[Tensor]):
        r"""Unscale all ``grad_tensors``'s grad.

        Args:
            grad_tensors: Tensors needed to unscale grads. Should be all tensors
                that are affected by ``target`` tensor in GradManager's backward.

        Returns:
            this GradScaler.

        Examples:
            >>> import megengine as mge
            >>> from megengine.amp import GradScaler
            >>> w = mge.Parameter([1.0])
            >>> w.grad = mge.Tensor([float("nan")])
            >>> scaler = GradScaler()
            >>> w.grad is None, scaler.unscale([w]) is scaler, w.grad is None
            (False, True, True)
        """
        tensors = [
            t for t in grad_tensors if t is not None and getattr(t, "grad", None) is not None
        ]
        if self.growth_interval == 0:
            self._note_fixed_scale()
            self._unscale_grads(tensors)
            return self
        if not tensors:
            return self
        # Every grad is checked, whether or not an earlier one is non-finite, so that a traced
        # step records the same ops each time.
        found = _check_non_finite([t.grad for t in tensors]).reshape(()) != 0
        if found.device != self._found_t.device:
            found = found._copy_to(self._found_t.device)
        self._found_t._reset(self._found_t | found)
        if _rt._trace_active():
            # No host decision: the graph keeps every gradient, and the optimizer's step keeps
            # the parameters where the flag is set.
            self._unscale_grads(tensors)
            for t in tensors:
                _step_gate.mark(t, found)
        elif found.item():
            for t in tensors:
                t.grad = None
        else:
            self._unscale_grads(tensors)
        return self

    def _unscale_grads(self, tensors):
        inv_scale = 1.0 / self._scale_t
        for t in tensors:
            g = t.grad
            t.grad._reset(g * _as(inv_scale, g))

    def update(self, new_scale: float | None = None):
        r"""Update the scale factor according to whether encountered overflow grad.
        If ``new_scale`` is provided, internal update mechanism will be ignored.

        Args:
            new_scale: the new scale factor; None applies the growth/backoff rule.

        Returns:
            None

        Examples:
            >>> from megengine.amp import GradScaler
            >>> scaler = GradScaler(init_scale=4.0, growth_interval=2)
            >>> scaler.update(); scaler.scale_factor
            4.0
            >>> scaler.update(); scaler.scale_factor
            8.0
        """
        if self.growth_interval == 0:
            return

        if new_scale is not None:
            self.scale_factor = new_scale
        else:
            # MegEngine's rule, as elementwise ops: an overflow backs off and restarts the
            # count; growth_interval finite steps in a row grow the scale.
            found, scale, count = self._found_t, self._scale_t, self._tracker_t + 1
            scale = where(found, scale * self.backoff_factor, scale)
            count = where(found, zeros_like(count), count)
            grow = count >= self.growth_interval
            self._scale_t._reset(where(grow, scale * self.growth_factor, scale))
            self._tracker_t._reset(where(grow, zeros_like(count), count))
        self._found_t._reset(Tensor(False, device=self._found_t.device))

    def state_dict(self):
        """The scaler's state, for :meth:`load_state_dict`.

        Returns:
            a dict of ``scale_factor``, ``growth_factor``, ``backoff_factor``,
            ``growth_interval`` and ``_growth_tracker``.

        Examples:
            >>> from megengine.amp import GradScaler
            >>> GradScaler(init_scale=2.0).state_dict()["scale_factor"]
            2.0
        """
        return {
            "scale_factor": self.scale_factor,
            "growth_factor": self.growth_factor,
            "backoff_factor": self.backoff_factor,
            "growth_interval": self.growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state):
        """Restores the state :meth:`state_dict` gave.

        Args:
            state: a dict as :meth:`state_dict` returns.

        Returns:
            None

        Examples:
            >>> from megengine.amp import GradScaler
            >>> s = GradScaler()
            >>> s.load_state_dict(GradScaler(init_scale=3.0).state_dict()); s.scale_factor
            3.0
        """
        self.scale_factor = state["scale_factor"]
        self.growth_factor = state["growth_factor"]
        self.backoff_factor = state["backoff_factor"]
        self.growth_interval = state["growth_interval"]
        self._growth_tracker = state["_growth_tracker"]
