"""Metrics (``F.topk_accuracy``), from the TopK operator."""

from ..core import _imperative_rt as _rt
from ..core._imperative_rt import MegEngineError, MegEngineTypeError
from ..core.ops import builtin
from ..core.tensor.array_method import as_tensor, cached_op, elemwise, reduce, reshape

__all__ = ["topk_accuracy"]


def topk_accuracy(logits, target, topk=1):
    """Fraction of samples whose target is among the ``k`` highest-scoring classes.

    Args:
        logits: scores of shape (N, C).
        target: class labels of shape (N,): integers, or floats (a hit where one equals the
            class).
        topk: k, or a sequence of ks to compute several accuracies at once.

    Returns:
        a scalar float32 Tensor, or a list of them (one per k) when topk is a sequence.

    Examples:
        >>> import megengine.functional as F
        >>> logits = [[0.1, 0.7, 0.2], [0.5, 0.3, 0.2]]
        >>> F.topk_accuracy(logits, [1, 2]).numpy().tolist()
        0.5
        >>> [a.numpy().tolist() for a in F.topk_accuracy(logits, [1, 2], topk=(1, 2, 3))]
        [0.5, 0.5, 1.0]
    """
    fname = "topk_accuracy"
    x, t = as_tensor(logits), as_tensor(target)
    # MegEngine compares the classes with the target's values: a float target counts where it
    # equals a class (1.0 is class 1; 1.5 is none)
    is_float = t._dtype_name in ("float32", "float16", "bfloat16")
    if not is_float and t._dtype_name not in ("int8", "uint8", "int16", "int32"):
        raise MegEngineTypeError(
            f"{fname}: target must be an integer or float tensor, got dtype {t._dtype_name}"
        )
    if x.ndim != 2 or t.shape != (x.shape[0],):
        raise MegEngineError(f"{fname}: logits {x.shape} must be (N, C) and target {t.shape} (N,)")
    single = isinstance(topk, int)
    ks = (topk,) if single else tuple(int(k) for k in topk)
    n, c = x.shape
    if not ks or not all(1 <= k <= c for k in ks):
        raise MegEngineError(f"{fname}: topk {topk} must be in [1, {c}] for logits {x.shape}")
    kmax = max(ks)
    op = cached_op(builtin.TopK, mode="VALUE_IDX_SORTED", k=-kmax)
    _, idx = _rt.apply(op, x.detach())
    if is_float:
        hit = elemwise("EQ", idx.astype("float32"), reshape(t.astype("float32"), (n, 1)))
    else:
        hit = elemwise("EQ", idx, reshape(t.astype("int32"), (n, 1)))
    hit = hit.astype("float32")
    # hit[i, j]: the j-th best class of sample i is its target; at most one j per row.
    cum = _rt.apply(cached_op(builtin.Cumsum, axis=1, exclusive=False, reverse=False), hit)[0]
    accs = []
    for k in ks:
        col = _rt.apply(cached_op(builtin.IndexingMultiAxisVec, axes=(1,)), cum, _index(k - 1))
        accs.append(reduce(col[0], "sum") / max(n, 1))
    return accs[0] if single else accs


def _index(i):
    return as_tensor(i, "int32")
