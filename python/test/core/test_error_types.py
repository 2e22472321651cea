"""An op's bad input raises what both MegEngine and Python idiom lead a script to catch.

MegEngine 1.13 raises RuntimeError from its C++ core (an AsyncError, also a RuntimeError, where
the check runs in the worker) for most bad inputs: shapes that do not broadcast or multiply, a
reshape to another size, an axis out of range. Python code would raise ValueError (IndexError
for an index out of range). NeoMeg's errors for these are both (``MegEngineError`` is a
RuntimeError and a ValueError, ``MegEngineIndexError`` a RuntimeError and an IndexError), so
``except RuntimeError`` and ``except ValueError`` both catch them. The MegEngine column is what
MegEngine 1.13 raised for each case (observed, written here as known values)."""

import pickle

import numpy as np
import pytest
from megengine.core._imperative_rt import MegEngineError, MegEngineIndexError, MegEngineTypeError

import megengine as mge
import megengine.functional as F


def T(*shape):
    return mge.Tensor(np.ones(shape, "float32"))


# name: (call, MegEngine 1.13's exception, words of NeoMeg's message)
VALUE_CASES = {
    "add-broadcast": (lambda: T(2, 3) + T(4), "RuntimeError", "cannot be broadcast"),
    "mul-broadcast": (lambda: F.mul(T(2, 3), T(3, 2)), "RuntimeError", "cannot be broadcast"),
    "clip-broadcast": (lambda: F.clip(T(2, 3), T(4), T(4)), "RuntimeError", "cannot be broadcast"),
    "where-broadcast": (
        lambda: F.where(mge.Tensor([True, False]), T(3), T(3)),
        "RuntimeError",
        "cannot be broadcast",
    ),
    "matmul": (lambda: F.matmul(T(2, 3), T(4, 5)), "RuntimeError", "do not multiply"),
    "matmul-operator": (lambda: T(2, 3) @ T(4, 5), "RuntimeError", "do not multiply"),
    "matmul-batch": (lambda: F.matmul(T(2, 2, 3), T(3, 3, 4)), "AsyncError", "do not broadcast"),
    "linear": (lambda: F.nn.linear(T(2, 3), T(4, 5)), "RuntimeError", "does not match weight"),
    "dot": (lambda: F.dot(T(3), T(4)), "AsyncError", "lengths differ"),
    "reshape": (lambda: T(2, 3).reshape(4, 2), "RuntimeError", "cannot reshape"),
    "F.reshape": (lambda: F.reshape(T(2, 3), (5,)), "RuntimeError", "cannot reshape"),
    "reshape-two-unknowns": (lambda: T(2, 3).reshape(-1, -1), "RuntimeError", "-1"),
    "concat": (lambda: F.concat([T(2, 3), T(2, 4)]), "RuntimeError", "do not match"),
    "concat-axis": (lambda: F.concat([T(2, 3), T(2, 3)], axis=5), "AsyncError", "out of range"),
    "stack": (lambda: F.stack([T(2, 3), T(2, 4)]), "RuntimeError", "same shape"),
    "broadcast_to": (lambda: F.broadcast_to(T(2, 3), (4, 3)), "RuntimeError", "cannot broadcast"),
    "transpose": (lambda: F.transpose(T(2, 3), (0,)), "RuntimeError", "no permutation"),
    "squeeze": (lambda: F.squeeze(T(2, 3), 0), "RuntimeError", "not 1"),
    "expand_dims": (lambda: F.expand_dims(T(2, 3), 5), "RuntimeError", "out of range"),
    "sum-axis": (lambda: F.sum(T(2, 3), axis=5), "RuntimeError", "out of range"),
    "softmax-axis": (lambda: F.softmax(T(2, 3), axis=4), "AsyncError", "out of range"),
    "conv2d-channels": (
        lambda: F.conv2d(T(1, 3, 5, 5), T(4, 2, 3, 3)),
        "RuntimeError",
        "has 3 channels",
    ),
    "max_pool2d-rank": (lambda: F.max_pool2d(T(2, 3), 2), "RuntimeError", "must have 4 dims"),
    "batch_norm-stats": (
        lambda: F.nn.batch_norm(T(2, 3, 4, 4), T(1, 4, 1, 1), T(1, 4, 1, 1)),
        "AsyncError",
        "one element per channel",
    ),
    "cross_entropy-label": (
        lambda: F.loss.cross_entropy(T(2, 3), mge.Tensor([0, 1, 2])),
        "RuntimeError",
        "label",
    ),
    "one_hot-range": (lambda: F.one_hot(mge.Tensor([1, 5]), 3), "RuntimeError", "outside"),
    # MegEngine raises ValueError itself for these: still one
    "split": (lambda: F.split(T(2, 3), 4, axis=1), "ValueError", "cannot be split"),
    "setitem": (lambda: T(2, 3).__setitem__(0, T(4)), "ValueError", "does not broadcast"),
    "where-float-mask": (lambda: F.where(T(2), T(2), T(2)), "ValueError", "mask must be bool"),
    "cond_take-float-mask": (lambda: F.cond_take(T(2), T(2)), "ValueError", "mask must be bool"),
}


@pytest.mark.parametrize("case", sorted(VALUE_CASES))
def test_bad_op_input_is_a_runtime_error_and_a_value_error(case):
    call, megengine_raises, words = VALUE_CASES[case]
    with pytest.raises(RuntimeError, match=words) as e:
        call()
    assert isinstance(e.value, ValueError) and isinstance(e.value, MegEngineError)
    # what MegEngine raised is caught by the same except clause
    caught_by = ValueError if megengine_raises == "ValueError" else RuntimeError
    assert isinstance(e.value, caught_by)
    with pytest.raises(ValueError, match=words):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: T(2, 3)[5],
        lambda: T(2, 3)[:, -4],
        lambda: T(2, 3)[0, 0, 0],
        lambda: T(2, 3).__setitem__((2, 0), 1.0),
    ],
)
def test_an_index_out_of_range_is_a_runtime_error_and_an_index_error(call):
    # MegEngine 1.13 raised RuntimeError (AsyncError, or RuntimeError for [0, 0, 0]) for each
    with pytest.raises(RuntimeError) as e:
        call()
    assert isinstance(e.value, IndexError) and isinstance(e.value, MegEngineIndexError)


def test_an_index_tensor_out_of_range_in_the_kernel_too():
    # the kernel's check (dnn::IndexError): MegEngine 1.13 raised RuntimeError (AsyncError)
    with pytest.raises(IndexError, match="out of bounds") as e:
        F.nn.embedding(mge.Tensor([5]), T(3, 2))
    assert isinstance(e.value, RuntimeError)


# MegEngine 1.13 raised RuntimeError for each (TypeError for the `&` operator's Python check)
TYPE_CASES = {
    "logical_and-floats": (lambda: F.logical_and(T(1), T(1)), "takes bool or integer"),
    "and-operator-floats": (lambda: T(1) & T(1), "takes bool or integer"),
    "conv2d-int": (
        lambda: F.conv2d(mge.Tensor(np.ones((1, 1, 3, 3), "int32")), mge.Tensor([[[[1]]]])),
        "must be a float tensor",
    ),
    "embedding-float-index": (
        lambda: F.nn.embedding(mge.Tensor([0.5]), T(3, 2)),
        "must be an integer tensor",
    ),
}


@pytest.mark.parametrize("case", sorted(TYPE_CASES))
def test_a_dtype_an_op_does_not_take_is_a_runtime_error_and_a_type_error(case):
    call, words = TYPE_CASES[case]
    with pytest.raises(RuntimeError, match=words) as e:
        call()
    assert isinstance(e.value, TypeError) and isinstance(e.value, MegEngineTypeError)


def test_the_types_and_their_bases():
    assert issubclass(MegEngineError, RuntimeError) and issubclass(MegEngineError, ValueError)
    assert issubclass(MegEngineTypeError, RuntimeError)
    assert issubclass(MegEngineTypeError, TypeError)
    assert not issubclass(MegEngineTypeError, ValueError)
    assert issubclass(MegEngineIndexError, RuntimeError)
    assert issubclass(MegEngineIndexError, IndexError)
    assert not issubclass(MegEngineIndexError, ValueError)
    # exceptions pickle (multiprocessing data workers send them back)
    e = pickle.loads(pickle.dumps(MegEngineError("bad shape")))
    assert type(e) is MegEngineError and str(e) == "bad shape"


def test_iterating_a_tensor_still_stops():
    # iteration by __getitem__ ends at an IndexError; a RuntimeError as well must not break it
    assert [float(v) for v in mge.Tensor([1.0, 2.0])] == [1.0, 2.0]


def test_a_backward_gradient_of_another_shape_is_both():
    from megengine.autodiff import GradManager

    # MegEngine 1.13 raised RuntimeError (AsyncError) for x * 2 with dy of shape (4,); a dy
    # that broadcasts to y is taken (test_grad_manager)
    x = mge.Parameter(np.ones((2, 3), "float32"))
    gm = GradManager().attach(x)
    with pytest.raises(RuntimeError, match="gradient of shape") as e, gm:
        gm.backward(x * 2, T(4))
    assert isinstance(e.value, ValueError)
