"""``megengine.autodiff.Function``: an operation with a hand-written backward.

Calling a Function runs its ``forward`` on the input tensors themselves, with recording suspended
(the ops inside are not recorded), and records the call as one op; when a GradManager's backward
reaches it, the tape calls its ``backward`` with the output gradients (``python/src/function.cpp``).
Because forward sees the inputs themselves, a backward that applies ops (or other Functions) to
inputs it kept is recorded by the outer managers: that is how higher-order gradients reach them.
"""

from ..core import _imperative_rt as _rt
from ..tensor import Tensor
from .grad_manager import _recording_suspended

__all__ = ["Function"]


class Function:
    """Base class of user-defined differentiable operations.

    Subclasses define ``forward(self, *inputs)``, returning a Tensor or a tuple of Tensors, and
    ``backward(self, *output_grads)``, returning one gradient (or None) per input. Calling the
    Function takes Tensors only (anything else is a TypeError, as in MegEngine). State that
    backward needs is kept on ``self``; use each instance for one call.

    Examples:
        >>> import megengine as mge
        >>> from megengine.autodiff import Function, GradManager
        >>> class Square(Function):
        ...     def forward(self, x):
        ...         self.x = x
        ...         return x * x
        ...     def backward(self, dy):
        ...         return dy * 2 * self.x
        >>> x = mge.Parameter([3.0])
        >>> gm = GradManager().attach(x)
        >>> with gm:
        ...     gm.backward(Square()(x))
        >>> x.grad.numpy().tolist()
        [6.0]
    """

    def forward(self, *inputs, **kwargs):
        """Computes the outputs.

        Args:
            inputs: the input Tensors (values only: ops here are not recorded).
            kwargs: what a subclass's own forward takes besides tensors (MegEngine's base
                signature; ``__call__`` passes tensors only).

        Returns:
            a Tensor or a tuple of Tensors.

        Examples:
            >>> import megengine as mge
            >>> from megengine.autodiff import Function
            >>> class Twice(Function):
            ...     def forward(self, x):
            ...         return x * 2
            >>> Twice()(mge.Tensor([1.0])).numpy().tolist()
            [2.0]
        """
        raise TypeError(f"{type(self).__name__} must define forward")

    def backward(self, *output_grads):
        """Computes the input gradients.

        Args:
            output_grads: one gradient Tensor per output; None for an output no gradient
                reached.

        Returns:
            one gradient per input: a Tensor of the input's shape, or None.

        Examples:
            >>> from megengine.autodiff import Function
            >>> Function.backward.__name__
            'backward'
        """
        raise TypeError(f"{type(self).__name__} must define backward")

    def __call__(self, *inputs):
        for x in inputs:
            if not isinstance(x, Tensor):
                # MegEngine's rule and message: a Function's inputs are tensors.
                raise TypeError(
                    f"op {type(self).__name__} expect type Tensor as inputs, got {type(x).__name__}"
                )
        tensors = list(inputs)
        outputs = _rt.apply_function(_Call(self, tensors), *tensors)
        return outputs[0] if len(outputs) == 1 else outputs


class _Call:
    """What the tape holds for one call: forward gets the caller's tensors (the op hands it
    detached copies, which a backward could not differentiate through), backward is the
    Function's."""

    def __init__(self, function, inputs):
        self.function = function
        self.inputs = inputs

    def forward(self, *detached):
        # The tape saves the inputs anyway (to count them), so holding them here costs nothing.
        with _recording_suspended():
            return self.function.forward(*self.inputs)

    def backward(self, *output_grads):
        return self.function.backward(*output_grads)
