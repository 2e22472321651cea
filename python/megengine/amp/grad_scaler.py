"""``amp.GradScaler``: loss scaling for mixed-precision training, as MegEngine 1.13's."""

from collections.abc import Iterable

from ..autodiff import GradManager
from ..core import _imperative_rt as _rt
from ..functional import full_like
from ..functional.math import _check_non_finite
from ..tensor import Tensor


class GradScaler:
    r"""A helper class that performs grad scaling to prevent from data overflow in
    :class:`~.autocast` mode.

    ``backward`` multiplies the loss gradient by ``scale_factor``; ``unscale`` divides the
    parameters' gradients by it and, when any of them holds an inf or NaN (checked by the
    CheckNonFinite op), drops them all (``grad = None``), so ``optimizer.step()`` leaves those
    parameters alone; ``update`` then multiplies ``scale_factor`` by ``backoff_factor`` and
    restarts the count, and otherwise multiplies it by ``growth_factor`` after every
    ``growth_interval`` finite steps in a row. ``growth_interval=0`` keeps the scale fixed
    and unscales without checking.

    In a :func:`~.jit.trace`'d step: with a fixed scale (``growth_interval=0``) the graph
    replays, and records again when ``scale_factor`` changes. Dynamic scaling decides on the
    host, from each step's gradients, whether the step runs and what the next scale is, which
    a compiled graph cannot replay: the trace warns and runs the step eagerly on every call
    (MegEngine's trace reruns the Python code on every call, so there it replays as usual).

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
        self.scale_factor = float(init_scale)
        self.growth_factor = float(growth_factor)
        self.backoff_factor = float(backoff_factor)
        self.growth_interval = growth_interval

        self._growth_tracker = 0
        self._found_non_finite = False

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
        self._note_scale_for_trace()
        if dy is None:
            dys = [full_like(y, self.scale_factor) for y in ys]
        elif isinstance(dy, (tuple, list)):
            dys = [dy_ * self.scale_factor for dy_ in dy]
        else:
            dys = [dy * self.scale_factor]

        gm.backward(y=ys, dy=dys)

        if unscale_grad:
            self.unscale(gm.attached_tensors())
            if update_scale:
                self.update()

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
        grad_tensors = list(grad_tensors)
        if self.growth_interval == 0:
            self._note_scale_for_trace()
            inv_scale = Tensor(1.0 / self.scale_factor)
            for tensor in grad_tensors:
                if tensor is None or getattr(tensor, "grad", None) is None:
                    continue
                tensor.grad *= inv_scale
            return self

        # A graph would replay the first call's outcome of the check below (steps with inf
        # gradients applied, the scale frozen): the trace runs this step eagerly instead.
        _rt._trace_fail(
            "GradScaler's dynamic loss scaling decides on the host, from each step's gradients, "
            "whether the step runs and what the next scale is (growth_interval=0 keeps a fixed "
            "scale, which replays)"
        )
        # Every grad is checked, whether or not an earlier one is non-finite, so that a traced
        # step records the same ops each time.
        grads = [x.grad for x in grad_tensors if x is not None and x.grad is not None]
        if self._check_gradients(grads, 1.0 / self.scale_factor):
            self._found_non_finite = True
            for tensor in grad_tensors:
                if tensor is None or getattr(tensor, "grad", None) is None:
                    continue
                tensor.grad = None
        return self

    def _scale(self):
        return self.scale_factor

    def _note_scale_for_trace(self):
        # A recording holds the scale as a constant of its graph: a call with another scale
        # records again.
        _rt._trace_note_guard(self._scale, self.scale_factor)

    def _check_gradients(self, grads, scale):
        if len(grads) == 0:
            return False
        return bool(_check_non_finite(grads, scale).numpy()[0])

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
            self.scale_factor = float(new_scale)
        else:
            if self._found_non_finite:
                self.scale_factor *= self.backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker >= self.growth_interval:
                    self.scale_factor *= self.growth_factor
                    self._growth_tracker = 0
        self._found_non_finite = False

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
