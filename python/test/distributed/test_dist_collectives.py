"""Every collective on 2 and 3 CPU ranks (Gloo over loopback) against numpy, for several shapes
and dtypes, non-contiguous inputs, all-reduces of several of Gloo's segments, subgroups with
another root, and point-to-point."""

import numpy as np
import pytest
from dist_util import DTYPES, SHAPES, TIMEOUT, rank_input

import megengine as mge
import megengine.distributed as dist
import megengine.functional as F
from megengine.autodiff import GradManager


def _np(x):
    return None if x is None else x.numpy()


def _collectives(world):
    r = dist.get_rank()
    out = {}
    for dtype in DTYPES:
        for shape in SHAPES:
            x = mge.Tensor(rank_input(r, shape, dtype), dtype=dtype)
            key = (dtype, shape)
            out[("sum",) + key] = _np(F.distributed.all_reduce_sum(x))
            out[("max",) + key] = _np(F.distributed.all_reduce_max(x))
            out[("min",) + key] = _np(F.distributed.all_reduce_min(x))
            out[("reduce",) + key] = _np(F.distributed.reduce_sum(x))
            out[("bcast",) + key] = _np(F.distributed.broadcast(x))
            out[("allgather",) + key] = _np(F.distributed.all_gather(x))
            if shape:
                out[("gather",) + key] = _np(F.distributed.gather(x))
    for axis in (0, 1):
        shape = (2 * world, 3 * world)
        x = mge.Tensor(rank_input(r, shape, "float32", salt=1))
        out[("ag_axis", axis)] = _np(F.distributed.all_gather(x, axis=axis))
        out[("rs_axis", axis)] = _np(F.distributed.reduce_scatter_sum(x, axis=axis))
        out[("scatter_axis", axis)] = _np(F.distributed.scatter(x, axis=axis))
        out[("gather_axis", axis)] = _np(F.distributed.gather(x, axis=axis))
        for concat in (0, 1):
            y = F.distributed.all_to_all(x, split_axis=axis, concat_axis=concat)
            out[("a2a", axis, concat)] = _np(y)
    # Non-contiguous inputs: a transpose and a strided slice.
    base = mge.Tensor(rank_input(r, (4 * world, 6), "float32", salt=2))
    out["nc_sum"] = _np(F.distributed.all_reduce_sum(base.transpose(1, 0)))
    out["nc_gather"] = _np(F.distributed.all_gather(base[::2]))
    out["nc_rs"] = _np(F.distributed.reduce_scatter_sum(base[:, ::2]))
    # Large enough for several of Gloo's ring segments (the strided one reduced in place in its
    # contiguous copy); 120001 elements split unevenly between the ranks.
    big = mge.Tensor(rank_input(r, (400, 300), "int32", salt=3))
    out["big_sum"] = _np(F.distributed.all_reduce_sum(big.transpose(1, 0)))
    odd = mge.Tensor(rank_input(r, (120001,), "float32", salt=4))
    out["big_max"] = _np(F.distributed.all_reduce_max(odd))
    return out


def _numpy_reference(world):
    xs = lambda shape, dtype, salt=0: [rank_input(q, shape, dtype, salt) for q in range(world)]
    ref = {}
    for dtype in DTYPES:
        for shape in SHAPES:
            a = xs(shape, dtype)
            key = (dtype, shape)
            ref[("sum",) + key] = np.sum(a, axis=0).astype(dtype)
            ref[("max",) + key] = np.max(a, axis=0)
            ref[("min",) + key] = np.min(a, axis=0)
            ref[("reduce",) + key] = [np.sum(a, axis=0).astype(dtype)] + [None] * (world - 1)
            ref[("bcast",) + key] = a[0]
            ref[("allgather",) + key] = np.concatenate(
                [np.reshape(v, (-1,) + shape[1:]) for v in a]
            )
            if shape:
                ref[("gather",) + key] = [np.concatenate(a)] + [None] * (world - 1)
    for axis in (0, 1):
        shape = (2 * world, 3 * world)
        a = xs(shape, "float32", 1)
        total = np.sum(a, axis=0)
        ref[("ag_axis", axis)] = np.concatenate(a, axis=axis)
        ref[("rs_axis", axis)] = np.split(total, world, axis=axis)
        ref[("scatter_axis", axis)] = np.split(a[0], world, axis=axis)
        ref[("gather_axis", axis)] = [np.concatenate(a, axis=axis)] + [None] * (world - 1)
        for concat in (0, 1):
            parts = [np.split(v, world, axis=axis) for v in a]
            ref[("a2a", axis, concat)] = [
                np.concatenate([parts[src][dst] for src in range(world)], axis=concat)
                for dst in range(world)
            ]
    base = xs((4 * world, 6), "float32", 2)
    ref["nc_sum"] = np.sum(base, axis=0).T
    ref["nc_gather"] = np.concatenate([v[::2] for v in base])
    ref["nc_rs"] = np.split(np.sum([v[:, ::2] for v in base], axis=0), world)
    ref["big_sum"] = np.sum(xs((400, 300), "int32", 3), axis=0).astype("int32").T
    ref["big_max"] = np.max(xs((120001,), "float32", 4), axis=0)
    return ref


PER_RANK = ("reduce", "gather", "rs_axis", "scatter_axis", "gather_axis", "a2a", "nc_rs")


@pytest.mark.parametrize("world", [2, 3, 4])
def test_every_collective_matches_numpy(world):
    results = dist.launcher(n_gpus=world, timeout=TIMEOUT)(_collectives)(world)
    ref = _numpy_reference(world)
    assert len(results) == world
    for key, expect in ref.items():
        name = key if isinstance(key, str) else key[0]
        for rank, res in enumerate(results):
            want = expect[rank] if name in PER_RANK else expect
            got = res[key]
            if want is None:
                assert got is None, (key, rank)
                continue
            assert got.dtype == want.dtype, (key, rank, got.dtype, want.dtype)
            np.testing.assert_array_equal(got, want, err_msg=f"{key} rank {rank}")


def _split_shapes(world):
    # First axes that split evenly between the ranks: scatter, reduce_scatter and all_to_all.
    return [(world,), (2 * world, 3), (world, 3, 4)]


# Strided views (view ops: no copy) of a (4 * world, 6) input, and the axis each splits along.
VIEWS = {
    "slice": (lambda a: a[:, ::2], 0),
    "transpose": (lambda a: a.transpose(1, 0), 1),
}


def _splitting_and_strided(world):
    r = dist.get_rank()
    out = {}
    for dtype in DTYPES:
        for shape in _split_shapes(world):
            x = mge.Tensor(rank_input(r, shape, dtype, salt=8), dtype=dtype)
            key = (dtype, shape)
            out[("scatter",) + key] = _np(F.distributed.scatter(x))
            out[("rs",) + key] = _np(F.distributed.reduce_scatter_sum(x))
            out[("a2a",) + key] = _np(F.distributed.all_to_all(x))
    for dtype in ("float32", "int8"):
        base = mge.Tensor(rank_input(r, (4 * world, 6), dtype, salt=9), dtype=dtype)
        for name, (view, axis) in VIEWS.items():
            x = view(base)
            key = (dtype, name)
            out[("sum",) + key] = _np(F.distributed.all_reduce_sum(x))
            out[("max",) + key] = _np(F.distributed.all_reduce_max(x))
            out[("min",) + key] = _np(F.distributed.all_reduce_min(x))
            out[("reduce",) + key] = _np(F.distributed.reduce_sum(x))
            out[("bcast",) + key] = _np(F.distributed.broadcast(x))
            out[("allgather",) + key] = _np(F.distributed.all_gather(x, axis=axis))
            out[("gather",) + key] = _np(F.distributed.gather(x, axis=axis))
            out[("scatter",) + key] = _np(F.distributed.scatter(x, axis=axis))
            out[("rs",) + key] = _np(F.distributed.reduce_scatter_sum(x, axis=axis))
            out[("a2a",) + key] = _np(F.distributed.all_to_all(x, split_axis=axis, concat_axis=0))
    return out


def _splitting_and_strided_reference(world):
    ref = {}
    for dtype in DTYPES:
        for shape in _split_shapes(world):
            a = [rank_input(q, shape, dtype, salt=8) for q in range(world)]
            key = (dtype, shape)
            ref[("scatter",) + key] = np.split(a[0], world)
            ref[("rs",) + key] = np.split(np.sum(a, axis=0).astype(dtype), world)
            parts = [np.split(v, world) for v in a]
            ref[("a2a",) + key] = [
                np.concatenate([parts[src][dst] for src in range(world)]) for dst in range(world)
            ]
    for dtype in ("float32", "int8"):
        bases = [rank_input(q, (4 * world, 6), dtype, salt=9) for q in range(world)]
        for name, (view, axis) in VIEWS.items():
            a = [np.ascontiguousarray(view(b)) for b in bases]
            key = (dtype, name)
            total = np.sum(a, axis=0).astype(dtype)
            ref[("sum",) + key] = [total] * world
            ref[("max",) + key] = [np.max(a, axis=0)] * world
            ref[("min",) + key] = [np.min(a, axis=0)] * world
            ref[("reduce",) + key] = [total] + [None] * (world - 1)
            ref[("bcast",) + key] = [a[0]] * world
            ref[("allgather",) + key] = [np.concatenate(a, axis=axis)] * world
            ref[("gather",) + key] = [np.concatenate(a, axis=axis)] + [None] * (world - 1)
            ref[("scatter",) + key] = np.split(a[0], world, axis=axis)
            ref[("rs",) + key] = np.split(total, world, axis=axis)
            parts = [np.split(v, world, axis=axis) for v in a]
            ref[("a2a",) + key] = [
                np.concatenate([parts[src][dst] for src in range(world)]) for dst in range(world)
            ]
    return ref


@pytest.mark.parametrize("world", [2, 3])
def test_splitting_collectives_in_every_dtype_and_every_collective_on_strided_inputs(world):
    results = dist.launcher(n_gpus=world, timeout=TIMEOUT)(_splitting_and_strided)(world)
    ref = _splitting_and_strided_reference(world)
    assert set(results[0]) == set(ref)
    for key, per_rank in ref.items():
        for rank, res in enumerate(results):
            want, got = per_rank[rank], res[key]
            if want is None:
                assert got is None, (key, rank)
                continue
            assert got.dtype == want.dtype, (key, rank, got.dtype, want.dtype)
            np.testing.assert_array_equal(got, want, err_msg=f"{key} rank {rank}")


def _subgroups():
    r = dist.get_rank()
    x = mge.Tensor(np.array([r, 10 * r], dtype="float32"))
    out = {"rank": r}
    if r in (1, 2):
        # The group's first rank is its root: rank 2 here.
        g = dist.new_group([2, 1])
        out["group_rank"] = g.rank
        out["bcast"] = F.distributed.broadcast(x, g).numpy()
        out["sum"] = F.distributed.all_reduce_sum(x, group=[2, 1]).numpy()
        red = F.distributed.reduce_sum(x, g)
        out["reduce"] = None if red is None else red.numpy()
        out["gather"] = F.distributed.all_gather(x, g).numpy()  # in group rank order: 2, 1
        out["a2a"] = F.distributed.all_to_all(x, g).numpy()
        # The gradient all-reduce of a subgroup's data parallelism.
        w = mge.Parameter(np.ones(2, dtype="float32"))
        gm = GradManager().attach([w], callbacks=[dist.make_allreduce_cb("mean", g)])
        with gm:
            gm.backward((w * x).sum())
        out["grad"] = w.grad.numpy()
        dist.group_barrier(g)
    out["world"] = F.distributed.all_reduce_sum(x).numpy()
    return out


def test_subgroups_use_their_first_rank_as_root():
    results = dist.launcher(n_gpus=3, timeout=TIMEOUT)(_subgroups)()
    np.testing.assert_array_equal(results[0]["world"], [3, 30])
    for r in (1, 2):
        res = results[r]
        assert res["group_rank"] == (0 if r == 2 else 1)
        np.testing.assert_array_equal(res["bcast"], [2, 20])
        np.testing.assert_array_equal(res["sum"], [3, 30])
        if r == 2:
            np.testing.assert_array_equal(res["reduce"], [3, 30])
        else:
            assert res["reduce"] is None
        np.testing.assert_array_equal(res["gather"], [2, 20, 1, 10])
        # Group rank g's part of every member, in group rank order: [x_2[g], x_1[g]].
        g = res["group_rank"]
        np.testing.assert_array_equal(res["a2a"], [results[2]["rank"] * 10**g, 10**g])
        np.testing.assert_array_equal(res["grad"], [1.5, 15])  # the mean of x_1 and x_2
    assert "bcast" not in results[0]


def _p2p():
    r = dist.get_rank()
    if r == 0:
        F.distributed.remote_send(mge.Tensor(np.arange(6, dtype="int32").reshape(2, 3)), 1)
        F.distributed.remote_send(mge.Tensor(np.float16(2.5)), 1)
        return dist.get_backend(), F.distributed.remote_recv(1).numpy()
    a = F.distributed.remote_recv(0)
    b = F.distributed.remote_recv(0)
    F.distributed.remote_send(a.astype("float32")[:, 1], 0)  # non-contiguous
    return a.numpy(), b.numpy()


def test_remote_send_and_recv_pair_in_order():
    res0, res1 = dist.launcher(n_gpus=2, timeout=TIMEOUT)(_p2p)()
    assert res0[0] == "nccl"  # launcher's backend, as MegEngine; the CPU tensors went by Gloo
    np.testing.assert_array_equal(res0[1], np.array([1, 4], dtype="float32"))
    np.testing.assert_array_equal(res1[0], np.arange(6, dtype="int32").reshape(2, 3))
    assert res1[1].dtype == np.float16 and res1[1].shape == () and res1[1] == 2.5


def _bad_inputs():
    errors = []
    x = mge.Tensor(np.zeros((3, 2), dtype="float32"))
    for fn in (
        lambda: F.distributed.reduce_scatter_sum(x),  # 3 rows do not split in 2
        lambda: F.distributed.all_to_all(x),
        lambda: F.distributed.all_reduce_sum(np.zeros(3)),
        lambda: F.distributed.all_reduce_sum(x, group="world"),
        lambda: dist.new_group([0, 5]),
        lambda: F.distributed.remote_send(x, dist.get_rank()),
    ):
        try:
            fn()
            errors.append(None)
        except (TypeError, ValueError) as exc:
            errors.append(type(exc).__name__)
    return errors


def test_bad_inputs_raise_clear_errors():
    for errors in dist.launcher(n_gpus=2, timeout=TIMEOUT)(_bad_inputs)():
        assert errors == [
            "ValueError",
            "ValueError",
            "TypeError",
            "TypeError",
            "ValueError",
            "ValueError",
        ]


def _backend_and_synchronized():
    import time

    r = dist.get_rank()
    seen = [dist.backend]  # launcher's backend, "nccl" by default as MegEngine
    dist.backend = "gloo"  # MegEngine's module property: what get_backend reads
    seen.append(dist.get_backend())
    try:
        dist.backend = "mpi"
    except ValueError:
        seen.append("ValueError")

    @dist.synchronized
    def slow_on_rank_1():
        if r == 1:
            time.sleep(0.5)
        return r

    start = time.monotonic()
    out = slow_on_rank_1()
    return seen, out, time.monotonic() - start


def test_backend_property_and_synchronized():
    results = dist.launcher(n_gpus=2, timeout=TIMEOUT)(_backend_and_synchronized)()
    for r, (seen, out, waited) in enumerate(results):
        assert seen == ["nccl", "gloo", "ValueError"]
        assert out == r
        assert waited >= 0.45  # rank 0 returned only once rank 1 had finished too
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.backend  # noqa: B018 - reading it is the test
