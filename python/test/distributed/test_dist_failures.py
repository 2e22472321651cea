"""Fail-fast: a rank that raises, is killed, never joins or leaves early makes every other
rank (and the launching parent) fail within the timeout, never hang; nothing is left running."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from dist_util import TIMEOUT, free_port, launch_by_environment

import megengine as mge
import megengine.distributed as dist
import megengine.functional as F


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _record_pid(folder):
    with open(os.path.join(folder, f"{os.getpid()}.pid"), "w"):
        pass


def _pids(folder):
    return [int(name.split(".")[0]) for name in os.listdir(folder)]


def _raises(folder):
    _record_pid(folder)
    x = mge.Tensor(np.ones(3, dtype="float32"))
    F.distributed.all_reduce_sum(x)
    if dist.get_rank() == 1:
        raise ValueError("rank one gives up")
    # Rank 0 now waits for a peer that will never come: the launcher must stop it.
    F.distributed.all_reduce_sum(x)
    return "unreachable"


def test_a_raising_rank_stops_the_others_and_its_error_reaches_the_parent(tmp_path):
    start = time.monotonic()
    with pytest.raises(ValueError, match="rank one gives up") as info:
        dist.launcher(n_gpus=2, timeout=TIMEOUT)(_raises)(str(tmp_path))
    assert time.monotonic() - start < TIMEOUT / 2
    cause = str(info.value.__cause__)
    assert "rank 1 raised" in cause and "_raises" in cause  # the child's traceback
    pids = _pids(tmp_path)
    assert len(pids) == 2 and not any(_alive(p) for p in pids)
    assert _children() == []


def _killed(folder):
    _record_pid(folder)
    if dist.get_rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    F.distributed.all_reduce_sum(mge.Tensor(np.ones(3, dtype="float32")))


def test_a_killed_rank_stops_the_others(tmp_path):
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="subprocess 1 was killed by signal 9"):
        dist.launcher(n_gpus=2, timeout=TIMEOUT)(_killed)(str(tmp_path))
    assert time.monotonic() - start < TIMEOUT / 2
    assert not any(_alive(p) for p in _pids(tmp_path))
    assert _children() == []


def _children():
    """This process's child processes (zombies included): none once a launch has failed."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == os.getpid():
            found.append((int(entry), fields[0]))
    return found


def _never_called():
    return "unreachable"


def test_a_rank_that_never_joins_times_out():
    # world_size 3, but only ranks 0 and 1 are started here.
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"of 3 waited 1 s .* for rank 2, which never joined"):
        dist.launcher(n_gpus=2, world_size=3, timeout=1)(_never_called)()
    assert time.monotonic() - start < 6
    assert _children() == []


def _subgroup_without_rank_2():
    if dist.get_rank() == 1:  # rank 2 never comes to the group's first collective
        group = dist.new_group([1, 2])
        F.distributed.all_reduce_sum(mge.Tensor(np.ones(2, dtype="float32")), group=group)


def test_a_subgroup_member_that_never_comes_is_named_with_its_process():
    with pytest.raises(dist.StoreTimeout) as info:
        dist.launcher(n_gpus=3, timeout=1)(_subgroup_without_rank_2)()
    msg = str(info.value)
    assert "rank 0 of 2 waited 1 s" in msg and "for rank 1 of the group" in msg, msg
    assert "are processes [1, 2]" in msg, msg


def _leaves_early():
    x = mge.Tensor(np.ones(3, dtype="float32"))
    F.distributed.all_reduce_sum(x)  # both ranks are connected now
    if dist.get_rank() == 1:
        return "left"
    F.distributed.all_reduce_sum(x)  # rank 1's sockets are closed: an error, not a hang


def test_a_peer_that_disappears_fails_the_collective():
    start = time.monotonic()
    with pytest.raises(dist.CommError, match="all_reduce failed on rank 0 of 2"):
        dist.launcher(n_gpus=2, timeout=TIMEOUT)(_leaves_early)()
    assert time.monotonic() - start < TIMEOUT / 2


def test_results_come_back_in_rank_order_and_unpicklable_ones_are_errors():
    assert dist.launcher(n_gpus=3, timeout=TIMEOUT)(dist.get_rank)() == [0, 1, 2]
    with pytest.raises(TypeError, match="cannot be pickled"):
        dist.launcher(n_gpus=2, timeout=TIMEOUT)(lambda: lambda: 0)()


def test_launcher_and_init_reject_bad_arguments():
    with pytest.raises(ValueError, match="n_gpus"):
        dist.launcher(_never_called, n_gpus=0)
    with pytest.raises(ValueError, match="assign a port"):
        dist.launcher(_never_called, n_gpus=1, world_size=2, rank_start=1)
    with pytest.raises(TypeError):
        dist.init_process_group("localhost", "1234", 2, 0, 0)
    with pytest.raises(ValueError, match="backend"):
        dist.init_process_group("localhost", 1234, 2, 0, 0, backend="mpi")
    with pytest.raises(ValueError, match="rank 2"):
        dist.init_process_group("localhost", 1234, 2, 2, 0)
    assert not dist.is_distributed()


@pytest.mark.skipif(mge.get_device_count("gpu") > 0, reason="a GPU is present")
def test_a_gpu_device_without_a_gpu_is_a_clear_error():
    for device_type in ("gpu", "cuda"):
        with pytest.raises(RuntimeError, match="no GPU is present.*device_type='cpu'"):
            dist.init_process_group("localhost", 1234, 1, 0, 0, device_type=device_type)
    with pytest.raises(NotImplementedError, match="ROCm"):
        dist.init_process_group("localhost", 1234, 1, 0, 0, backend="rccl")
    assert not dist.is_distributed()


_ENV_SCRIPT = """
import numpy as np, megengine as mge, megengine.distributed as dist
import megengine.functional as F
dist.init_process_group(timeout=10)
x = mge.Tensor(np.full(2, dist.get_rank() + 1, dtype="float32"))
y = F.distributed.all_reduce_sum(x)
print(dist.get_rank(), dist.get_world_size(), y.numpy().tolist(), mge.get_default_device(), y.device)
"""


def test_environment_variables_of_external_launchers_are_honoured():
    # as on two hosts: LOCAL_RANK is the device index, not the rank
    outs = launch_by_environment(_ENV_SCRIPT, 2, lambda rank: {"LOCAL_RANK": 1 - rank})
    assert outs == ["0 2 [3.0, 3.0] cpu1 cpu1:0", "1 2 [3.0, 3.0] cpu0 cpu0:0"]


# A rank of an external launch (no launcher parent to stop the others): ``fails`` is what rank
# ``who`` does: "raise" or "kill" after the ranks have communicated once, "kill_before" (killed
# after init_process_group, before the first collective), "skip" (never calls the collective,
# and exits later), or "die_at:N" (killed right after its N-th store write of the group's
# rendezvous: 1 its arrival, then "rank_1" and its address; Gloo's keys).
_FAILING_SCRIPT = """
import os, signal, sys, time, numpy as np, megengine as mge, megengine.distributed as dist
import megengine.functional as F
from megengine.distributed import server
fails, who = sys.argv[1], int(sys.argv[2])
timeout = float(os.environ["TIMEOUT"])
me = int(os.environ["RANK"])
if fails.startswith("die_at:") and me == who:
    writes, die_at = [0], int(fails.split(":")[1])
    set_ = server.Client.set
    def set_then_die(self, key, value):
        set_(self, key, value)
        if key.startswith("__gloo/"):
            writes[0] += 1
            if writes[0] == die_at:
                os.kill(os.getpid(), signal.SIGKILL)
    server.Client.set = set_then_die
dist.init_process_group(timeout=timeout)
x = mge.Tensor(np.ones(2, dtype="float32"))
if me == who and fails == "kill_before":
    os.kill(os.getpid(), signal.SIGKILL)
if me == who and fails == "skip":
    time.sleep(3 * timeout)
    sys.exit(0)
start = time.monotonic()
try:
    F.distributed.all_reduce_sum(x)
finally:
    print(f"first collective {time.monotonic() - start:.3f}", flush=True)
if me == who and fails == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if me == who and fails == "raise":
    raise ValueError("rank gives up")
F.distributed.all_reduce_sum(x)
print("finished")
"""


def _launch_external(ranks, args, timeout, world_size=2, script=None, guard=60):
    """Runs `script` (_FAILING_SCRIPT by default) as `ranks` of a job launched through the
    environment variables, the group's timeout `timeout` s; waits at most `guard` s for each
    (a hang guard) and returns rank -> (exit code, stdout, stderr, seconds since the start)."""
    script = _FAILING_SCRIPT if script is None else script
    port = free_port()
    procs = {}
    for rank in ranks:
        env = dict(
            os.environ,
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            WORLD_SIZE=str(world_size),
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            TIMEOUT=str(timeout),
        )
        procs[rank] = subprocess.Popen(
            [sys.executable, "-c", script, *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    start = time.monotonic()
    outs = {}
    try:
        for rank, p in procs.items():
            out, err = p.communicate(timeout=guard)
            outs[rank] = (p.returncode, out, err, time.monotonic() - start)
    finally:
        for p in procs.values():
            p.kill()
            p.wait()
    return outs


def _first_collective_seconds(out):
    return float(re.search(r"first collective ([0-9.]+)", out).group(1))


@pytest.mark.parametrize(
    "fails, who, error",
    [
        ("raise", 1, "CommError"),
        ("kill", 1, "CommError"),
        ("kill", 0, "CommError|ConnectionError"),  # the rank that hosts the store
    ],
)
def test_without_launcher_a_rank_that_raises_or_is_killed_fails_the_others(fails, who, error):
    # Without a launcher nobody stops the survivor: its next collective must fail on its own,
    # well before the group's timeout, and the process must exit.
    outs = _launch_external([0, 1], [fails, str(who)], timeout=30)
    code, _, err, _ = outs[who]
    assert code == (-signal.SIGKILL if fails == "kill" else 1), err
    other = 1 - who
    code, out, err, elapsed = outs[other]
    assert code == 1 and "finished" not in out, (code, out, err)
    assert re.search(rf"\b({error}): ", err), err
    assert elapsed < 15, elapsed


def test_without_launcher_a_killed_rank_of_three_fails_both_others():
    outs = _launch_external([0, 1, 2], ["kill", "1"], timeout=30, world_size=3)
    assert outs[1][0] == -signal.SIGKILL
    for rank in (0, 2):
        code, out, err, elapsed = outs[rank]
        assert code == 1 and "finished" not in out, (code, out, err)
        assert "CommError: distributed all_reduce failed" in err, err
        assert elapsed < 15, elapsed


@pytest.mark.parametrize("fails", ["kill_before", "skip"])
def test_without_launcher_a_rank_missing_from_the_first_collective_is_named(fails):
    # Rank 1 joined the job but never reaches the group's first collective (killed, or busy
    # elsewhere): rank 0's rendezvous names it after the timeout.
    outs = _launch_external([0, 1], [fails, "1"], timeout=2)
    code, out, err, _ = outs[0]
    assert code == 1 and "finished" not in out, (code, out, err)
    assert re.search(r"StoreTimeout: .*rank 0 of 2 waited 2 s .* for rank 1 of the group", err), err
    assert _first_collective_seconds(out) < 10  # a hang guard


@pytest.mark.parametrize("die_at", [1, 2, 3, 5])
def test_without_launcher_a_rank_killed_during_the_rendezvous_is_named(die_at):
    # Killed after its arrival, before or after publishing its address (3: the first context's,
    # 5: the second's). Gloo's listening side waited 5x the timeout for such a peer; which side
    # a rank takes depends on the ports, so either can happen. The survivor's error names rank
    # 1 and the timeout, and comes by the timeout.
    outs = _launch_external([0, 1], [f"die_at:{die_at}", "1"], timeout=2)
    assert outs[1][0] == -signal.SIGKILL, outs[1][2]
    code, out, err, _ = outs[0]
    assert code == 1 and "finished" not in out, (code, out, err)
    assert re.search(r"(StoreTimeout|CommError): distributed rendezvous.*rank 1", err), err
    assert "2 s" in err, err
    assert _first_collective_seconds(out) < 8  # under 5x the timeout: a hang guard


@pytest.mark.parametrize("present", [0, 1])
def test_without_launcher_a_rank_that_never_joins_times_out(present):
    # Only one rank of two is started: rank 0 waits for its peer at the rendezvous, rank 1 for
    # the store that rank 0 would host; both give up after the timeout, naming the other.
    outs = _launch_external([present], ["none", "-1"], timeout=2)
    code, out, err, elapsed = outs[present]
    assert code == 1 and "finished" not in out, (code, out, err)
    if present == 0:
        assert "TimeoutError: init_process_group: rank 0 of 2 waited 2 s" in err, err
        assert "for rank 1, which never joined" in err, err
    else:
        assert "ConnectionError: init_process_group: rank 1 of 2" in err, err
        assert "did rank 0 start" in err, err
    assert elapsed < 15, elapsed


# Every rank runs collective ``op`` on 4 MB per rank in a loop; rank ``who`` is SIGKILLed by a
# thread of its own while its loop runs, so most likely inside a collective (it prints the
# moment first). A survivor prints when its loop broke. remote_send_recv: each rank sends to
# its right neighbour and receives from its left one (even ranks send first).
_KILL_MID_SCRIPT = """
import os, signal, sys, threading, time, numpy as np, megengine as mge
import megengine.distributed as dist, megengine.functional as F
who, op = int(sys.argv[1]), sys.argv[2]
dist.init_process_group(timeout=float(os.environ["TIMEOUT"]))
r, n = dist.get_rank(), dist.get_world_size()
x = mge.Tensor(np.ones((n * 256, 1024), dtype="float32"))
DF = F.distributed

def step():
    if op == "group_barrier":
        dist.group_barrier()
    elif op == "remote_send_recv":
        right, left = (r + 1) % n, (r - 1) % n
        if r % 2 == 0:
            DF.remote_send(x, right)
            DF.remote_recv(left).numpy()
        else:
            DF.remote_recv(left).numpy()
            DF.remote_send(x, right)
    else:
        y = getattr(DF, op)(x)
        if y is not None:  # reduce_sum and gather return None off the root
            y.numpy()

step()  # everyone is connected
if r == who:
    def die():
        try:  # a closed stdout (the test's process gone) must not keep this rank alive
            print(f"killed at {time.monotonic()}", flush=True)
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    threading.Timer(0.3, die).start()
try:
    while True:
        step()
finally:
    print(f"broke at {time.monotonic()}", flush=True)
"""


# The ranks an error names as lost or gone: a rank whose connection was lost (Gloo's pairs, or
# the Server's host), or the rank the store saw leave first or before the key waited for.
_NAMED_AS_LOST = (
    r"lost the connection to rank (\d+)",
    r"rank (\d+) of the job's \d+ was the first to leave",
    r"rank (\d+) of the job left before",
    r"rank (\d+) was the job's first rank to leave",
)


def _named_as_lost(error):
    return {int(r) for pattern in _NAMED_AS_LOST for r in re.findall(pattern, error)}


# (3, 1): the middle rank of the ring. Its left neighbour's send to it could be queued in Gloo's
# pair when its socket broke, a wait that Gloo does not end: that survivor waited for the group's
# timeout, until the peer watch (src/distributed/peer_watch.h) ended it.
@pytest.mark.parametrize("world_size, who", [(2, 1), (2, 0), (3, 1), (3, 0), (3, 2)])
def test_a_rank_killed_mid_collective_is_named_by_the_survivors(world_size, who):
    # Rank ``who`` dies inside an all-reduce loop. Each survivor fails with a CommError naming
    # it: directly (its socket's address mapped to the rank), or, for a survivor that lost a
    # peer that failed because of it, through the store, which saw the killed rank leave first
    # without a goodbye. When the killed rank hosted the store (rank 0) the address says it.
    # The guard is under the group's timeout: the error must not wait for it.
    outs = _launch_external(
        range(world_size),
        [str(who), "all_reduce_sum"],
        60,
        world_size,
        script=_KILL_MID_SCRIPT,
        guard=45,
    )
    assert outs[who][0] == -signal.SIGKILL, outs[who]
    for rank in set(range(world_size)) - {who}:
        code, out, err, _ = outs[rank]
        assert code == 1 and "broke" in out, (rank, code, out, err)
        error = err.strip().splitlines()[-1]
        assert "CommError: distributed all_reduce failed on rank" in error, err
        named_by_address = re.search(
            rf"lost the connection to rank {who} \(127\.0\.0\.1:\d+\)", error
        )
        # A survivor that lost a peer which failed because of the killed rank: that peer said
        # which rank it lost before closing its connection.
        named_by_peer = re.search(
            rf"lost the connection to rank {who}, which died or closed it \(rank \d lost it "
            "first, said so",
            error,
        )
        named_by_store = re.search(
            rf"rank {who} of the job's {world_size} was the first to leave.*killed or crashed",
            error,
        )
        assert _named_as_lost(error) == {who}, error  # and no other rank
        assert named_by_address or named_by_peer, error
        if world_size == 2 and who == 1:  # both ways (the store went with rank 0)
            assert named_by_store, error


def _moment(out, what):
    return float(re.search(rf"{what} at ([0-9.]+)", out).group(1))


# (op, world size, the rank killed): every collective of megengine.distributed.functional and
# group_barrier, 2 and 3 ranks, the rank killed going round (rank 0 is also the store's host).
# all_reduce_min is all_reduce_max's path, and all_reduce_sum's is the test above's. Those that
# waited for the timeout in most runs before (gather, reduce_sum) twice.
_KILLED_IN = [
    ("all_reduce_max", 3, 2),
    ("broadcast", 3, 1),
    ("all_gather", 3, 0),
    ("reduce_scatter_sum", 2, 0),
    ("reduce_sum", 2, 0),
    ("reduce_sum", 3, 1),
    ("gather", 2, 1),
    ("gather", 3, 0),
    ("scatter", 3, 2),
    ("all_to_all", 2, 1),
    ("remote_send_recv", 2, 1),
    ("group_barrier", 3, 1),
    # rank 0, the Server's host, killed while the others wait on the store: the metadata of a
    # broadcast from it, a barrier
    ("broadcast", 2, 0),
    ("group_barrier", 3, 0),
]


@pytest.mark.parametrize("op, world_size, who", _KILLED_IN)
def test_a_rank_killed_mid_collective_fails_the_survivors(op, world_size, who):
    # Gloo's own broadcast, gather, reduce, ... waited on buffers that the peer watch could not
    # reach: a survivor could wait for the group's timeout (60 s here). Every collective now
    # waits through the watch, and a store wait (group_barrier, the metadata of broadcast,
    # scatter and remote_recv) ends when the rank it waits for leaves. Each survivor's error
    # names the killed rank, and no other, as lost (a peer, the first to leave as the store saw
    # it, or rank 0 as the Server's host), long before the timeout; the guard is under it.
    outs = _launch_external(
        range(world_size), [str(who), op], 60, world_size, script=_KILL_MID_SCRIPT, guard=45
    )
    code, out, err, _ = outs[who]
    assert code == -signal.SIGKILL, (code, out, err)
    killed = _moment(out, "killed")
    for rank in set(range(world_size)) - {who}:
        code, out, err, _ = outs[rank]
        assert code == 1 and "broke" in out, (rank, code, out, err)
        assert _moment(out, "broke") - killed < 20, (rank, out, err)
        error = err.strip().splitlines()[-1]
        assert _named_as_lost(error) == {who}, error


# Rank 1 is killed; rank 0 (the Server's host) fails a receive from it, which tells rank 2 that
# rank 1 was lost, and then its process goes without closing anything; rank 2 is waiting on
# the store for a broadcast's metadata from rank 0. Its Server gone with rank 0, rank 2 must
# still name rank 1: rank 0 only left because of it. (In the kill loops this is a race: rank 2,
# done with a broadcast from rank 0, waits for the next one's metadata while rank 0's send to
# the killed rank fails and rank 0 exits, closing the Server with it.)
_HOST_LEAVES_SCRIPT = """
import os, signal, time, numpy as np, megengine as mge, megengine.distributed as dist
import megengine.functional as F
dist.init_process_group(timeout=float(os.environ["TIMEOUT"]))
r = dist.get_rank()
x = mge.Tensor(np.ones(2, dtype="float32"))
F.distributed.all_reduce_sum(x).numpy()  # every rank connected
comm = dist.group._communicator(dist.WORLD)
if r == 1:
    os.kill(os.getpid(), signal.SIGKILL)
if r == 0:
    try:
        comm.recv([2], "float32", "cpu0", 1, 7)
    except dist.CommError as exc:
        print(exc, flush=True)
    print(f"killed at {time.monotonic()}", flush=True)  # rank 0's exit, as _moment reads it
    os._exit(3)
try:
    F.distributed.broadcast(x).numpy()  # rank 2: the metadata from rank 0 never comes
finally:
    print(f"broke at {time.monotonic()}", flush=True)
"""


def test_a_server_host_that_fails_because_of_a_killed_rank_names_it_to_a_store_waiter():
    outs = _launch_external([0, 1, 2], [], 60, 3, script=_HOST_LEAVES_SCRIPT, guard=45)
    assert outs[1][0] == -signal.SIGKILL, outs[1]
    code, out, err, _ = outs[0]
    assert code == 3 and "lost the connection to rank 1" in out, (code, out, err)
    host_left = _moment(out, "killed")
    code, out, err, _ = outs[2]
    error = err.strip().splitlines()[-1]
    assert code == 1 and error.startswith("ConnectionError: "), err
    assert "the distributed Server's host" in error, error
    assert _named_as_lost(error) == {1}, error
    assert _moment(out, "broke") - host_left < 20, (out, err)  # long before the timeout


# Rank 2 leaves the store (its Client closes) but keeps its Gloo connections; rank 0's store
# wait for rank 2's message ends with that departure, and rank 0 exits; rank 1, waiting in a
# Gloo receive from rank 0, sees only rank 0's connection close. Rank 0 must have told it that
# rank 2 was lost. (In the kill loops: with 4 ranks sending round a ring and rank 3 killed,
# rank 0 failed in remote_recv's store wait for rank 3 and exited, and rank 1's error named
# rank 0, whose connection its watch saw fail in the same moment as rank 3's.)
_STORE_LOSS_SCRIPT = """
import os, time, numpy as np, megengine as mge, megengine.distributed as dist
import megengine.functional as F
dist.init_process_group(timeout=float(os.environ["TIMEOUT"]))
r = dist.get_rank()
F.distributed.all_reduce_sum(mge.Tensor(np.ones(2, dtype="float32"))).numpy()
comm = dist.group._communicator(dist.WORLD)
if r == 2:
    dist.group._sd.client.close()
    time.sleep(20)
    os._exit(0)
print(f"killed at {time.monotonic()}", flush=True)
try:
    if r == 0:
        F.distributed.remote_recv(2)
    else:
        comm.recv([2], "float32", "cpu0", 0, 9)
finally:
    print(f"broke at {time.monotonic()}", flush=True)
"""


def test_a_rank_that_fails_on_a_store_wait_names_the_lost_rank_to_its_peers():
    outs = _launch_external([0, 1, 2], [], 60, 3, script=_STORE_LOSS_SCRIPT, guard=45)
    code, out, err, _ = outs[0]
    error = err.strip().splitlines()[-1]
    assert code == 1 and "ConnectionError: " in error, err
    assert _named_as_lost(error) == {2}, error
    code, out, err, _ = outs[1]
    error = err.strip().splitlines()[-1]
    assert code == 1 and "CommError: distributed recv failed on rank 1 of 3" in error, err
    assert _named_as_lost(error) == {2}, error
    assert "rank 0 lost it first, said so" in error, error
    assert _moment(out, "broke") - _moment(out, "killed") < 20, (out, err)
