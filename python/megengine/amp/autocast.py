"""``amp.autocast``: the context manager and decorator that switches autocast on."""

import functools

from .. import config as _config
from ..core.tensor import amp


class autocast:
    r"""A class to control autocast mode for amp as a context manager or a decorator.

    Inside, convolutions (1-D, 2-D, transposed), matrix products and linear layers take their
    inputs in ``low_prec_dtype`` (accumulating in float32); batch normalisation takes its input
    in ``low_prec_dtype`` and its statistics and affine parameters in ``high_prec_dtype``; the
    Elemwise modes exp, log, sqrt, division, power, softplus and the trigonometric ones, means
    and log-softmax (so the cross-entropy loss) compute in ``high_prec_dtype``. Everything
    else runs in its inputs' dtype, promoted as usual. Each tensor is cast once per value
    (a parameter used twice is cast once); gradients reach float32 parameters in float32.
    On the CPU, the 16-bit cast of a 4-D activation for a convolution with 32 or more output
    channels is stored channels-last, which oneDNN's kernels run fastest on; ``Tensor.format``
    still reads ``"default"`` and values are unchanged.

    Args:
        enabled: Whether autocast mode is enabled.
        low_prec_dtype: Set amp autocast mode's lower precision dtype. It will change the
            target dtype in tensor casting for better speed and memory. Default: float16.
        high_prec_dtype: Set amp autocast mode's higher precision dtype. It will change the
            target dtype in tensor casting for better precision. Default: float32.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> from megengine.amp import autocast
        >>> x, w = mge.Tensor(np.ones((2, 3), "float32")), mge.Tensor(np.ones((4, 3), "float32"))
        >>> with autocast(low_prec_dtype="bfloat16"):
        ...     y = F.linear(x, w)
        ...     p = F.softmax(y)
        ...     loss = F.log(p).mean()
        >>> y._dtype_name, p._dtype_name, loss._dtype_name
        ('bfloat16', 'bfloat16', 'float32')
        >>> @autocast()
        ... def step(x):
        ...     return F.matmul(x, x.T)
        >>> step(x)._dtype_name
        'float16'
    """

    def __init__(
        self,
        enabled: bool = True,
        low_prec_dtype: str = "float16",
        high_prec_dtype: str = "float32",
    ):
        # Checked now, so that a bad dtype fails where autocast is built, not on entry.
        amp._dtype_name(low_prec_dtype, "low_prec_dtype")
        amp._dtype_name(high_prec_dtype, "high_prec_dtype")
        self.enabled = enabled
        self.high_prec_dtype = high_prec_dtype
        self.low_prec_dtype = low_prec_dtype
        self._saved = []

    def __enter__(self):
        if self.enabled:
            # A stack, so that one autocast object may be entered again while active.
            self._saved.append(
                (
                    amp._get_amp_dtype_autocast(),
                    amp._get_amp_high_prec_dtype(),
                    amp._get_amp_low_prec_dtype(),
                    _config._compute_mode,
                )
            )
            amp._set_amp_high_prec_dtype(self.high_prec_dtype)
            amp._set_amp_low_prec_dtype(self.low_prec_dtype)
            amp._set_amp_dtype_autocast(True)
            # MegEngine's autocast also asks float32 accumulation of every product.
            _config._compute_mode = "float32"
        return self

    def __exit__(self, *args):
        if self.enabled:
            enabled, high, low, compute_mode = self._saved.pop()
            amp._set_amp_dtype_autocast(enabled)
            amp._set_amp_high_prec_dtype(high)
            amp._set_amp_low_prec_dtype(low)
            _config._compute_mode = compute_mode

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return wrapper
