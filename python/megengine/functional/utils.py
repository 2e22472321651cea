"""``megengine.functional.utils``: MegEngine 1.13 keeps ``_assert_equal`` here, and the old
homes of ``topk_accuracy`` and ``copy`` (``F.utils.topk_accuracy`` still works there)."""

from ..core._imperative_rt import MegEngineError
from ..core.tensor.array_method import as_tensor
from .elemwise import abs, maximum, minimum
from .metric import topk_accuracy
from .tensor import copy  # noqa: F401

__all__ = ["topk_accuracy"]


def _assert_equal(expect, actual, *, maxerr=0.0001, verbose=False):
    """Checks that two tensors are equal within ``maxerr`` and returns ``expect``.

    The error is MegEngine's: the largest ``|expect - actual| / max(min(|expect|, |actual|), 1)``
    (absolute below 1, relative above). NeoMeg checks it when called (eagerly); MegEngine
    also records the check in a traced graph, which NeoMeg does not.

    Args:
        expect: expected tensor value.
        actual: tensor to check, of ``expect``'s shape and dtype.
        maxerr: the largest error allowed.
        verbose: print the error found.

    Returns:
        ``expect``.

    Raises:
        RuntimeError: (``MegEngineError``) when the error exceeds ``maxerr``, or the shapes or
        dtypes differ.

    Examples:
        >>> import megengine.functional as F
        >>> from megengine import Tensor
        >>> x = Tensor([1, 2, 3], dtype="float32")
        >>> F.utils._assert_equal(x, Tensor([1, 2, 3.0001], dtype="float32")).numpy()
        array([1., 2., 3.], dtype=float32)
        >>> F.utils._assert_equal(x, Tensor([1, 2, 4], dtype="float32"))
        Traceback (most recent call last):
        ...
        megengine.core._imperative_rt.MegEngineError: AssertEqual: error 0.333333 exceeds maxerr 0.0001
    """
    e, a = as_tensor(expect), as_tensor(actual)
    # MegEngine's AssertEqual takes operands of one dtype and shape, unconverted
    if e._dtype_name != a._dtype_name:
        raise MegEngineError(
            f"AssertEqual: operands differ in dtype: {e._dtype_name} vs {a._dtype_name}"
        )
    if e.shape != a.shape:
        raise MegEngineError(f"AssertEqual: operands differ in shape: {e.shape} vs {a.shape}")
    if e.size == 0:
        return e
    ef, af = e.astype("float32"), a.astype("float32")
    err = float((abs(ef - af) / maximum(minimum(abs(ef), abs(af)), 1.0)).max().numpy())
    if verbose:
        print(f"AssertEqual: err={err:g} maxerr={maxerr:g}")
    # NaN error fails as MegEngine's comparison does
    if not err <= maxerr:
        raise MegEngineError(f"AssertEqual: error {err:g} exceeds maxerr {maxerr:g}")
    return e
