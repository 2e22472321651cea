"""group_start/group_end (Gloo, 2 and 4 processes): the batched point-to-point transfers issued
between them (megengine.distributed.functional's _remote_send_nobackward and
_remote_recv_nobackward, as in MegEngine) run together at group_end, so exchanges that one by one would wait for each other
complete; what they receive is checked against the senders' inputs, recomputed here."""

import numpy as np
import pytest
from dist_util import TIMEOUT, rank_input

import megengine as mge
import megengine.distributed as dist
import megengine.distributed.functional as DF
import megengine.functional as F

BIG = (256, 1024)  # 1 MiB of float32: more than a socket buffers, so a blocking send waits


def _exchange():
    r = dist.get_rank()
    peer = 1 - r
    mine = mge.Tensor(rank_input(r, BIG, "float32"))
    small = mge.Tensor(rank_input(r, (3, 4), "int8"))
    dist.group_start()
    DF._remote_send_nobackward(mine, peer)
    DF._remote_send_nobackward(small[:, 1], peer)  # non-contiguous
    got = DF._remote_recv_nobackward(peer, shape=BIG, dtype="float32")
    got_small = DF._remote_recv_nobackward(peer, shape=(3,), dtype=np.int8)
    # Not part of the group: a collective runs at once, as in MegEngine.
    total = F.distributed.all_reduce_sum(mge.Tensor(np.float32(r + 1))).numpy()
    before = got.numpy().copy(), got_small.numpy().copy()
    dist.group_end()
    return before, got.numpy(), got_small.numpy(), total


def test_group_exchanges_both_ways_where_sends_come_first():
    results = dist.launcher(n_gpus=2, timeout=TIMEOUT)(_exchange)()
    for r, (before, got, got_small, total) in enumerate(results):
        peer = 1 - r
        # Until group_end a recv's tensor is a placeholder of zeros; then it holds the value.
        np.testing.assert_array_equal(before[0], np.zeros(BIG, dtype="float32"))
        assert before[1].dtype == np.int8 and before[1].shape == (3,)
        np.testing.assert_array_equal(got, rank_input(peer, BIG, "float32"))
        assert got_small.dtype == np.int8
        np.testing.assert_array_equal(got_small, rank_input(peer, (3, 4), "int8")[:, 1])
        assert total == 3


def _exchange_without_group():
    peer = 1 - dist.get_rank()
    DF._remote_send_nobackward(mge.Tensor(rank_input(0, BIG, "float32")), peer)
    DF._remote_recv_nobackward(peer, shape=BIG, dtype="float32")


def test_the_same_exchange_without_a_group_times_out():
    # What the group is for: outside one, each send waits for the peer's recv, which comes only
    # after the peer's own send; every rank gets a CommError within its timeout.
    with pytest.raises(dist.CommError):
        dist.launcher(n_gpus=2, timeout=2)(_exchange_without_group)()


RING_DTYPES = ["float32", "int32", "float16", "int8", "bool"]


def _ring():
    r, n = dist.get_rank(), dist.get_world_size()
    nxt, prev = (r + 1) % n, (r + n - 1) % n
    got = {}
    dist.group_start()
    if r % 2:  # odd ranks list their recvs first: the order within a group does not matter
        for dt in RING_DTYPES:
            got[dt] = DF._remote_recv_nobackward(prev, shape=(2, 5), dtype=dt)
        got["back"] = DF._remote_recv_nobackward(nxt, shape=(4,), dtype="float32")
        got["empty"] = DF._remote_recv_nobackward(prev, shape=(0, 3), dtype="float32")
    for dt in RING_DTYPES:
        x = rank_input(r, (2, 5), "int32", salt=1) > 0 if dt == "bool" else None
        x = rank_input(r, (2, 5), dt, salt=1) if x is None else x
        DF._remote_send_nobackward(mge.Tensor(x), nxt)
    DF._remote_send_nobackward(mge.Tensor(rank_input(r, (4,), "float32")), prev)
    DF._remote_send_nobackward(mge.Tensor(np.zeros((0, 3), "float32")), nxt)
    if r % 2 == 0:
        for dt in RING_DTYPES:
            got[dt] = DF._remote_recv_nobackward(prev, shape=(2, 5), dtype=dt)
        got["back"] = DF._remote_recv_nobackward(nxt, shape=(4,), dtype="float32")
        got["empty"] = DF._remote_recv_nobackward(prev, shape=(0, 3), dtype="float32")
    dist.group_end()
    # A second group on the same pairs: its messages come after the first group's.
    dist.group_start()
    DF._remote_send_nobackward(mge.Tensor(np.int32([r, 7])), nxt)
    again = DF._remote_recv_nobackward(prev, shape=(2,), dtype="int32")
    dist.group_end()
    return {k: v.numpy() for k, v in got.items()}, again.numpy()


@pytest.mark.parametrize("world", [2, 4])
def test_group_shifts_around_a_ring_in_every_dtype(world):
    results = dist.launcher(n_gpus=world, timeout=TIMEOUT)(_ring)()
    for r, (got, again) in enumerate(results):
        prev, nxt = (r + world - 1) % world, (r + 1) % world
        for dt in RING_DTYPES:
            if dt == "bool":
                expect = rank_input(prev, (2, 5), "int32", salt=1) > 0
            else:
                expect = rank_input(prev, (2, 5), dt, salt=1)
            assert got[dt].dtype == np.dtype(dt)
            np.testing.assert_array_equal(got[dt], expect)
        np.testing.assert_array_equal(got["back"], rank_input(nxt, (4,), "float32"))
        assert got["empty"].shape == (0, 3)
        np.testing.assert_array_equal(again, np.int32([prev, 7]))


def _outside_a_group():
    r = dist.get_rank()
    if r == 0:
        DF._remote_send_nobackward(mge.Tensor(np.float16([1.5, -2])), 1)
        return None
    return DF._remote_recv_nobackward(0, shape=[2], dtype="float16").numpy()


def test_batched_pair_outside_a_group_transfers_at_once():
    _, got = dist.launcher(n_gpus=2, timeout=TIMEOUT)(_outside_a_group)()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.float16([1.5, -2]))


def test_unbalanced_and_nested_groups_raise():
    with pytest.raises(RuntimeError, match="no group is open"):
        dist.group_end()
    dist.group_start()
    with pytest.raises(RuntimeError, match="already open"):
        dist.group_start()
    dist.group_end()  # the first group stays open after the nested call's error, and ends here
    with pytest.raises(RuntimeError, match="no group is open"):
        dist.group_end()


def test_bad_batched_transfers_raise_clear_errors():
    x = mge.Tensor(np.zeros(3, "float32"))
    with pytest.raises(ValueError, match="shape and dtype"):
        DF._remote_recv_nobackward(1, shape=(3,))
    with pytest.raises(ValueError, match="itself"):
        DF._remote_send_nobackward(x, dist.get_rank())
    with pytest.raises(TypeError, match="Tensor"):
        DF._remote_send_nobackward(np.zeros(3), 1)
    with pytest.raises(TypeError, match="int"):
        DF._remote_recv_nobackward("1", shape=(3,), dtype="float32")
    with pytest.raises(RuntimeError, match="init_process_group"):
        DF._remote_send_nobackward(x, 1)


def _failing_group():
    r = dist.get_rank()
    F.distributed.all_reduce_sum(mge.Tensor(np.float32(r)))  # both ranks are connected
    dist.group_start()
    if r == 0:
        # Rank 1 never sends: rank 0's recv times out, and the group is closed all the same.
        DF._remote_recv_nobackward(1, shape=(2,), dtype="float32")
        try:
            dist.group_end()
            raised = None
        except dist.CommError:
            raised = "CommError"
        dist.group_start()  # a new group may start after the failed one
        dist.group_end()
        return raised
    dist.group_end()
    return "empty"


def test_a_failed_group_raises_comm_error_and_closes():
    assert dist.launcher(n_gpus=2, timeout=2)(_failing_group)() == ["CommError", "empty"]
