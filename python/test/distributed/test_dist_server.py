"""The rendezvous store: values, counters, blocking reads with timeouts, barriers and clear
errors when the server is absent or gone."""

import socket
import threading
import time

import pytest

from megengine.distributed import Client, Server


@pytest.fixture
def server():
    s = Server(0, host="127.0.0.1")
    yield s
    s.close()


_open_clients = []


@pytest.fixture(autouse=True)
def _close_clients():
    # A client left open is closed by the garbage collector whenever it runs, with a
    # ResourceWarning; in a process that launcher forks later in the session, that warning lands
    # inside another test's warnings.catch_warnings (test_dist_sync_bn's "nothing warned").
    yield
    for c in _open_clients:
        if c._sock is not None:
            c._sock.close()
            c._sock = None
    _open_clients.clear()


def _client(server, timeout=5):
    c = Client("127.0.0.1", server.py_server_port, timeout=timeout)
    _open_clients.append(c)
    return c


def test_set_get_add_and_user_values(server):
    c = _client(server)
    c.set("k", b"\x00\xffbytes")
    assert c.get("k") == b"\x00\xffbytes"
    assert [c.add("n", 1), c.add("n", 4), c.add("n", -2)] == [1, 5, 3]
    c.user_set("cfg", {"lr": 0.5, "shape": [2, 3]})
    other = _client(server)
    assert other.user_get("cfg") == {"lr": 0.5, "shape": [2, 3]}
    assert other.user_pop("cfg") == {"lr": 0.5, "shape": [2, 3]}
    with pytest.raises(TimeoutError):
        c.get("__user/cfg", timeout=0.1)  # popped


def test_get_waits_for_a_later_set(server):
    a, b = _client(server), _client(server)
    setting = threading.Event()

    def later():
        time.sleep(0.2)
        setting.set()
        b.set("late", b"v")

    t = threading.Thread(target=later)
    t.start()
    assert a.get("late") == b"v"
    assert setting.is_set()  # get returned only once the value was being set
    t.join()


def test_missing_keys_time_out_with_their_names(server):
    c = _client(server)
    c.set("here", b"")
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="missing1, missing2"):
        c.wait(["here", "missing1", "missing2"], timeout=0.3)
    assert 0.25 < time.monotonic() - start < 3


def test_barrier_and_bcast_val_among_threads(server):
    n = 3
    clients = [_client(server) for _ in range(n)]
    got, order = [None] * n, []

    def member(i):
        clients[i].group_barrier("g", n)
        order.append(i)
        for round_ in range(2):
            val = {"round": round_} if i == 0 else None
            got[i] = clients[i].bcast_val(val, "g", n)
        clients[i].group_barrier("g", n)

    threads = [threading.Thread(target=member, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(order) == [0, 1, 2]
    assert got == [None, {"round": 1}, {"round": 1}]


def test_a_barrier_without_all_members_times_out(server):
    c = _client(server, timeout=0.3)
    with pytest.raises(TimeoutError, match="group_barrier of group 'g'"):
        c.group_barrier("g", 2)


def test_no_server_is_a_connection_error_after_the_timeout():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        start = time.monotonic()
        with pytest.raises(ConnectionError, match="cannot reach"):
            Client("127.0.0.1", port, timeout=0.3)
        assert time.monotonic() - start < 3


def test_a_server_that_goes_away_is_a_connection_error(server):
    c = _client(server)
    server.close()
    with pytest.raises(ConnectionError, match="lost the connection"):
        for _ in range(3):  # the first send may still be buffered
            c.set("k", b"v")
            c.get("k", timeout=0.1)


def test_a_lost_server_hosted_by_rank_0_names_rank_0():
    # Without launcher rank 0 hosts the Server (init_process_group: hosts_server): when the
    # Server goes, the others have lost rank 0, and say so as a collective names a lost rank.
    # A Server that rank 0 does not host (launcher's parent, the user's) names no rank.
    for hosted in (True, False):
        server = Server(0, host="127.0.0.1")
        clients = [_client(server, timeout=30) for _ in range(3)]
        for rank in range(3):
            clients[rank]._join_session(rank, 3, hosts_server=hosted and rank == 0)
        server.close()
        with pytest.raises(ConnectionError) as info:
            for _ in range(3):  # the first send may still be buffered
                clients[2].group_barrier("g", 3, peers=[0, 1])
        message = str(info.value)
        if hosted:
            assert (
                "lost the connection to rank 0 (the distributed Server's host, "
                f"127.0.0.1:{server.py_server_port}), which died or closed it: "
            ) in message, message
        else:
            assert "lost the connection to the distributed Server at" in message, message
            assert "rank 0" not in message, message


def test_bad_arguments():
    with pytest.raises(ValueError):
        Server(-1)
    with pytest.raises(ValueError):
        Client("127.0.0.1", 1, timeout=0)


def test_send_recv_flags_are_read_once(server):
    a, b = _client(server), _client(server)
    a.set_is_grad("send/0", True)
    a.set_remote_tracer("send/0", {5, 2})
    assert b.check_is_grad("send/0") is True
    assert b.check_remote_tracer("send/0") == [2, 5]
    # Read once: the keys are gone, and a check waits for the next set.
    with pytest.raises(TimeoutError, match="__is_grad/send/0"):
        _client(server, timeout=0.2).check_is_grad("send/0")
    with pytest.raises(TypeError, match="iterable of ints"):
        a.set_remote_tracer("k", 3)


def test_the_server_records_which_ranks_left_and_how(server):
    # Three ranks of a job; rank 2's process dies (its socket closes, no goodbye), then rank 1
    # closes its client. Rank 0 hears of both, in that order; another job's ranks of nothing.
    clients = [_client(server) for _ in range(3)]
    for rank in (0, 1, 2):
        clients[rank]._join_session(rank, 3)
    assert clients[0]._departed() == []
    start = time.monotonic()
    assert clients[0]._departed(timeout=0.2) == []  # waits for a first one that never comes
    assert time.monotonic() - start >= 0.15
    clients[2]._sock.shutdown(socket.SHUT_RDWR)  # as the kernel does for a killed process
    assert clients[0]._departed(timeout=5) == [(2, False)]
    clients[1].close()
    deadline = time.monotonic() + 5
    while len(clients[0]._departed()) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert clients[0]._departed() == [(2, False), (1, True)]
    other = _client(server)
    other._join_session(0, 1)
    assert other._departed() == []


def test_a_wait_ends_when_a_rank_it_names_leaves(server):
    # group_barrier and bcast_val name the ranks that must arrive (the group's other members,
    # the value's source): one that leaves first ends the wait at once with its rank, whether
    # it was killed (no goodbye) or closed its client; a rank that is not named leaves no mark.
    clients = [_client(server, timeout=30) for _ in range(4)]
    for rank in range(4):
        clients[rank]._join_session(rank, 4)
    clients[3]._sock.shutdown(socket.SHUT_RDWR)  # not a member of the barrier below
    errors = {}

    def barrier():
        try:
            clients[0].group_barrier("g", 3, peers=[1, 2])
        except ConnectionError as exc:
            errors["barrier"] = (str(exc), time.monotonic())

    waiter = threading.Thread(target=barrier)
    waiter.start()
    time.sleep(0.3)
    assert waiter.is_alive()  # rank 3's leaving did not end it
    start = time.monotonic()
    clients[2]._sock.shutdown(socket.SHUT_RDWR)  # as the kernel does for a killed process
    waiter.join(10)
    message, at = errors["barrier"]
    assert at - start < 5, at - start
    assert "group_barrier of group 'g' (3 ranks): rank 2 of the job left" in message, message
    assert "killed or crashed" in message, message

    clients[1].close()  # with a goodbye, before sending the value rank 0 waits for
    # ... after ranks 3 and 2 were killed: the first of them is named (the next test).
    with pytest.raises(
        ConnectionError, match=r"rank 3 was the job's first .* then rank 1, .*after finishing"
    ):
        clients[0].bcast_val(None, "p", 2, source=1)


def test_a_wait_for_a_rank_that_left_after_a_killed_one_names_the_killed_one(server):
    # Rank 1 (the root of a broadcast) raised because rank 2 was killed, and left with a
    # goodbye; rank 0, waiting for rank 1's metadata, names rank 2, the rank that died.
    clients = [_client(server, timeout=30) for _ in range(3)]
    for rank in range(3):
        clients[rank]._join_session(rank, 3)
    clients[2]._sock.shutdown(socket.SHUT_RDWR)  # as the kernel does for a killed process
    assert clients[0]._departed(timeout=5) == [(2, False)]
    clients[1].close()
    with pytest.raises(ConnectionError) as info:
        clients[0].bcast_val(None, "p", 3, source=1)
    message = str(info.value)
    assert message.startswith(
        "bcast_val of 'p' from rank 1: rank 2 was the job's first rank to leave, as the "
        "rendezvous store saw it (its connection dropped without a goodbye: the process was "
        "killed or crashed); then rank 1, which was to set __bcast/p/1, left too"
    ), message


def test_a_wait_naming_ranks_still_returns_what_came_first(server):
    # The value was set before its source left: the wait takes it; an unnamed wait is as before.
    clients = [_client(server) for _ in range(2)]
    for rank in range(2):
        clients[rank]._join_session(rank, 2)
    clients[1].bcast_val({"shape": [3]}, "p", 2)
    clients[1]._sock.shutdown(socket.SHUT_RDWR)
    assert clients[0].bcast_val(None, "p", 2, source=1) == {"shape": [3]}
    with pytest.raises(TimeoutError):
        clients[0].get("never", timeout=0.2)
