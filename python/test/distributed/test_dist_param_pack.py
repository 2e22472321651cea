"""MegEngine's packing helpers (dist.helper.param_pack_split/_concat, get_offsets,
pack_allreduce_split) against numpy: MegEngine's values for the same calls (a scalar's shape
becomes (1,), gaps between offsets are zeros), and the packed all-reduce over 2 ranks."""

import numpy as np
import pytest
from dist_util import TIMEOUT, rank_input

import megengine as mge
import megengine.distributed as dist
from megengine.device import get_device_count

SHAPES = [(), (3, 3), (2,), (0, 4)]


def test_offsets_pack_one_after_the_other():
    assert dist.helper.get_offsets(SHAPES) == [0, 1, 1, 10, 10, 12, 12, 12]
    assert dist.helper.get_offsets([]) == []


def test_split_and_concat_invert_each_other():
    xs = [rank_input(i, s, "float32") for i, s in enumerate(SHAPES)]
    offsets = dist.helper.get_offsets(SHAPES)
    packed = dist.helper.param_pack_concat([mge.Tensor(x) for x in xs], None, offsets)
    np.testing.assert_array_equal(packed.numpy(), np.concatenate([x.reshape(-1) for x in xs]))
    parts = dist.helper.param_pack_split(packed, offsets, SHAPES)
    assert [p.shape for p in parts] == [(1,), (3, 3), (2,), (0, 4)]  # () gives (1,), as MegEngine
    for part, x in zip(parts, xs):
        np.testing.assert_array_equal(part.numpy(), x.reshape(part.shape))


def test_concat_fills_gaps_with_zeros_in_the_inputs_dtype():
    a, b = mge.Tensor(np.int32([5])), mge.Tensor(np.int32([7, 8]))
    packed = dist.helper.param_pack_concat([a, b], mge.Tensor([0, 1, 3, 5]), [0, 1, 3, 5])
    assert packed.dtype == np.int32
    np.testing.assert_array_equal(packed.numpy(), np.int32([5, 0, 0, 7, 8]))


def test_bad_offsets_raise():
    x = mge.Tensor(np.arange(10, dtype="float32"))
    with pytest.raises(ValueError, match="offsets"):
        dist.helper.param_pack_split(x, [0, 1], [(1,), (2,)])  # too few offsets
    with pytest.raises(ValueError, match="needs 4"):
        dist.helper.param_pack_split(x, [0, 3], [(2, 2)])
    with pytest.raises(ValueError, match="input has 10"):
        dist.helper.param_pack_split(x, [0, 12], [(12,)])
    with pytest.raises(ValueError, match="not decrease"):
        dist.helper.param_pack_split(x, [2, 4, 0, 2], [(2,), (2,)])
    with pytest.raises(ValueError, match="has 10"):
        dist.helper.param_pack_concat([x], None, [0, 9])
    with pytest.raises(ValueError, match="no tensors"):
        dist.helper.param_pack_concat([], None, [])


def test_get_device_count_by_fork_is_deprecated_get_device_count():
    with pytest.warns(DeprecationWarning, match="get_device_count"):
        assert dist.helper.get_device_count_by_fork("cpu") == get_device_count("cpu")


SPLIT = [(2, 3), (), (4,)]


def _packed_all_reduce(method):
    r = dist.get_rank()
    xs = [mge.Tensor(rank_input(r, s, "float32", salt=i)) for i, s in enumerate(SPLIT)]
    out = dist.helper.pack_allreduce_split(xs, SPLIT, dist.WORLD, method)
    return [o.numpy() for o in out]


@pytest.mark.parametrize("method", ["sum", "mean"])
def test_pack_allreduce_split_reduces_every_tensor(method):
    results = dist.launcher(n_gpus=2, timeout=TIMEOUT)(_packed_all_reduce)(method)
    for i, shape in enumerate(SPLIT):
        total = sum(rank_input(r, shape, "float32", salt=i) for r in range(2))
        expect = (total / 2 if method == "mean" else total).reshape(shape or (1,))
        for res in results:
            np.testing.assert_array_equal(res[i], expect)
