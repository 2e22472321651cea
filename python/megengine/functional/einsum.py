"""``F.einsum``: Einstein summation composed from differentiable ops.

Each operand's repeated labels become a diagonal (integer indexing), labels no later step needs
are summed out (Reduce), and operands are contracted pairwise, left to right, as one
``BatchedMatrixMul`` over (shared kept labels, left-only labels, contracted labels, right-only
labels). Every step is an ordinary op, so gradients come from their backward rules.
"""

import string

import numpy as np

from ..core._imperative_rt import MegEngineError
from ..core.tensor.array_method import Tensor, _promote, as_tensor
from .math import matmul
from .tensor import arange, broadcast_to, reshape, transpose

__all__ = ["einsum"]

_LABELS = set(string.ascii_letters)


def _parse(equation, operands):
    """Splits ``equation`` into per-operand label strings and the output labels, expanding
    ``...`` into labels of their own (upper-case-free private characters)."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
        explicit = True
    else:
        lhs, out, explicit = eq, "", False
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise MegEngineError(
            f"einsum: equation {equation!r} has {len(terms)} operands, got {len(operands)} tensors"
        )
    ell_ndim = 0
    for term, x in zip(terms, operands):
        named = len(term.replace("...", ""))
        if "..." in term:
            ell_ndim = max(ell_ndim, x.ndim - named)
        elif named != x.ndim:
            raise MegEngineError(
                f"einsum: term {term!r} names {named} dimensions, but its operand has shape "
                f"{x.shape}"
            )
    # Ellipsis dimensions get labels outside a-zA-Z, aligned from the right as in broadcasting.
    ell = [chr(0x100 + i) for i in range(ell_ndim)]
    parsed = []
    for term, x in zip(terms, operands):
        if term.count("...") > 1 or term.replace("...", "").strip(string.ascii_letters):
            raise MegEngineError(f"einsum: bad term {term!r} in {equation!r}")
        if "..." in term:
            n = x.ndim - len(term.replace("...", ""))
            if n < 0:
                raise MegEngineError(f"einsum: term {term!r} does not fit operand shape {x.shape}")
            term = term.replace("...", "".join(ell[ell_ndim - n :]))
        parsed.append(term)
    if explicit:
        if out.count("...") > 1 or out.replace("...", "").strip(string.ascii_letters):
            raise MegEngineError(f"einsum: bad output {out!r} in {equation!r}")
        out = out.replace("...", "".join(ell))
        seen = set("".join(parsed))
        for c in out:
            if c not in seen:
                raise MegEngineError(f"einsum: output label {c!r} appears in no operand")
        if len(set(out)) != len(out):
            raise MegEngineError(f"einsum: output {out!r} repeats a label")
    else:
        # NumPy's implicit mode: ellipsis labels first, then labels seen once, sorted.
        counts = {}
        for c in "".join(parsed):
            counts[c] = counts.get(c, 0) + 1
        out = "".join(ell) + "".join(
            sorted(c for c, k in counts.items() if k == 1 and c in _LABELS)
        )
    return parsed, out


def _diagonal(x, labels):
    """Takes the diagonal over each label repeated within one operand."""
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(c)
        j = labels.index(c, i + 1)
        n = x.shape[i]
        if x.shape[j] != n:
            raise MegEngineError(
                f"einsum: label {c!r} has sizes {n} and {x.shape[j]} within one operand"
            )
        rest = [k for k in range(x.ndim) if k not in (i, j)]
        x = transpose(x, rest + [i, j])
        x = reshape(x, [x.shape[k] for k in range(len(rest))] + [n * n])
        x = x[..., arange(n, dtype="int32") * (n + 1)]  # elements (k, k)
        labels = "".join(labels[k] for k in rest) + c
    return x, labels


def _sum_out(x, labels, keep):
    """Sums over the labels not in ``keep``."""
    axes = [k for k, c in enumerate(labels) if c not in keep]
    if axes:
        x = x.sum(axis=axes)
        labels = "".join(c for c in labels if c in keep)
    return x, labels


def _contract(a, la, b, lb, keep):
    """a (labels la) times b (labels lb), summing shared labels not in ``keep``."""
    size = {}
    for t, ls in ((a, la), (b, lb)):
        for c, n in zip(ls, t.shape):
            if c in size and size[c] != n and 1 not in (size[c], n):
                raise MegEngineError(f"einsum: label {c!r} has sizes {size[c]} and {n}")
            size[c] = max(size.get(c, n), n)
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]

    def arrange(t, ls, order):
        t = transpose(t, [ls.index(c) for c in order]) if list(ls) != order else t
        want = tuple(size[c] for c in order)
        return broadcast_to(t, want) if t.shape != want else t

    def prod(cs):
        return int(np.prod([size[c] for c in cs], dtype=np.int64))

    a3 = reshape(arrange(a, la, batch + left + summed), (prod(batch), prod(left), prod(summed)))
    b3 = reshape(arrange(b, lb, batch + summed + right), (prod(batch), prod(summed), prod(right)))
    out = matmul(a3, b3)
    labels = "".join(batch + left + right)
    return reshape(out, tuple(size[c] for c in labels)), labels


def einsum(equation, *operands):
    """Einstein summation over ``operands`` as ``equation`` describes (NumPy's notation).

    Args:
        equation: labels per operand separated by commas, optionally ``->`` and the output
            labels (``"ij,jk->ik"``); ``...`` stands for broadcast dimensions. Without ``->``
            the output holds the labels seen once, sorted. A label repeated within one
            operand takes its diagonal (``"ii->i"``).
        operands: input tensors (or array-likes), one per term; they are promoted to one dtype.

    Returns:
        the resulting Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.einsum("ij,jk->ik", [[1.0, 2.0]], [[3.0], [4.0]]).numpy().tolist()
        [[11.0]]
        >>> F.einsum("ii", [[1.0, 2.0], [3.0, 4.0]]).numpy().tolist()
        5.0
    """
    if (
        len(operands) == 1
        and isinstance(operands[0], (list, tuple))
        and all(isinstance(o, Tensor) for o in operands[0])
    ):
        operands = tuple(operands[0])  # einsum(eq, [a, b]) as well as einsum(eq, a, b)
    if not operands:
        raise MegEngineError("einsum: needs at least one operand")
    xs = [as_tensor(o) for o in operands]
    dtypes = {x._dtype_name for x in xs}
    if len(dtypes) > 1:
        xs = _promote(xs)
    terms, out = _parse(equation, xs)
    xs_labels = [_diagonal(x, t) for x, t in zip(xs, terms)]

    def needed_after(i):
        return set(out).union(*(set(t) for _, t in xs_labels[i + 1 :]))

    # Sum each label out as soon as no later operand or the output needs it.
    x, lx = _sum_out(*xs_labels[0], needed_after(0))
    for i in range(1, len(xs_labels)):
        keep = needed_after(i)
        y, ly = _sum_out(*xs_labels[i], keep | set(lx))
        x, lx = _contract(x, lx, y, ly, keep)
    x, lx = _sum_out(x, lx, set(out))
    if lx != out:
        x = transpose(x, [lx.index(c) for c in out])
    return x
