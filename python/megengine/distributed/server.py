"""The rendezvous store: a small TCP key-value server in one process and a client per rank.

Ranks exchange Gloo addresses, broadcast small values and meet at barriers through it. A frame
is ``!II`` (header length, payload length), a JSON header and raw payload bytes: nothing is
unpickled from the network. Every blocking request carries a timeout, and the server answers
``timeout`` rather than letting a rank wait for a peer that never comes.
"""

import contextlib
import json
import os
import socket
import socketserver
import struct
import sys
import threading
import time
from collections import defaultdict

__all__ = ["Client", "Server"]

_FRAME = struct.Struct("!II")
_DEFAULT_TIMEOUT = 300.0


def default_timeout():
    """Seconds a rank waits for its peers: ``NEOMEG_DIST_TIMEOUT`` or 300.

    Returns:
        a positive float.

    Examples:
        >>> from megengine.distributed.server import default_timeout
        >>> default_timeout() > 0
        True
    """
    value = os.environ.get("NEOMEG_DIST_TIMEOUT")
    if value is None:
        return _DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"NEOMEG_DIST_TIMEOUT must be a number of seconds, got {value!r}")
    if seconds <= 0:
        raise ValueError(f"NEOMEG_DIST_TIMEOUT must be positive, got {value!r}")
    return seconds


def _send_frame(sock, header, payload=b""):
    head = json.dumps(header).encode()
    sock.sendall(_FRAME.pack(len(head), len(payload)) + head + payload)


def _recv_exact(sock, n):
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv_frame(sock):
    head_len, payload_len = _FRAME.unpack(_recv_exact(sock, _FRAME.size))
    header = json.loads(_recv_exact(sock, head_len))
    return header, _recv_exact(sock, payload_len)


class _Store:
    """The server's state: values by key, the ranks that left each job, and a condition that
    wakes waiters on every change."""

    def __init__(self):
        self.values = {}
        # Job namespace -> [(rank, said_goodbye)] in the order their connections closed: the
        # first rank to leave is what a failed collective's survivors need to hear about (a
        # rank that failed because of it leaves later).
        self.departed = defaultdict(list)
        self.cond = threading.Condition()

    def depart(self, namespace, rank, said_goodbye):
        with self.cond:
            self.departed[namespace].append((rank, said_goodbye))
            self.cond.notify_all()

    def wait(self, keys, timeout, namespace=None, peers=()):
        """Waits until every key of ``keys`` is set, or until one of ``peers`` (ranks of the job
        ``namespace``) has left: a key that such a rank was to set never comes. Returns the keys
        still missing and, with them, the departures of ``peers`` as ``(rank, said_goodbye)``."""
        peers = set(peers)

        def left():
            return [(r, bye) for r, bye in self.departed.get(namespace, ()) if r in peers]

        with self.cond:
            self.cond.wait_for(lambda: all(k in self.values for k in keys) or left(), timeout)
            missing = [k for k in keys if k not in self.values]
            return missing, left() if missing else []

    def handle(self, header, payload):
        op = header["op"]
        if op == "ping":
            return {"ok": True, "magic": "neomeg-store"}, b""
        if op == "set":
            with self.cond:
                self.values[header["key"]] = payload
                self.cond.notify_all()
            return {"ok": True}, b""
        if op == "add":
            with self.cond:
                value = int(self.values.get(header["key"], b"0")) + int(header["delta"])
                self.values[header["key"]] = str(value).encode()
                self.cond.notify_all()
            return {"ok": True, "value": value}, b""
        if op == "departed":
            with self.cond:
                gone = self.departed[header["namespace"]]
                self.cond.wait_for(lambda: gone, float(header["timeout"]))
                return {"ok": True, "departed": list(gone)}, b""
        if op in ("get", "wait", "pop"):
            keys = header["keys"] if op == "wait" else [header["key"]]
            missing, left = self.wait(
                keys, float(header["timeout"]), header.get("namespace"), header.get("peers", ())
            )
            if left:
                # The job's first rank to leave too: the named one may have left because of it.
                with self.cond:
                    first = self.departed[header.get("namespace")][0]
                reply = {"ok": False, "error": "departed", "missing": missing, "departed": left}
                return {**reply, "first": first}, b""
            if missing:
                return {"ok": False, "error": "timeout", "missing": missing}, b""
            if op == "wait":
                return {"ok": True}, b""
            with self.cond:
                value = self.values[keys[0]] if op == "get" else self.values.pop(keys[0])
            return {"ok": True}, value
        return {"ok": False, "error": "bad_request", "message": f"unknown op {op!r}"}, b""


class _Handler(socketserver.BaseRequestHandler):
    def setup(self):
        with self.server.lock:
            self.server.connections.add(self.request)
        # Which rank of which job this connection is ("hello"), and whether it said goodbye.
        self.identity = None
        self.said_goodbye = False

    def finish(self):
        with self.server.lock:
            self.server.connections.discard(self.request)
        if self.identity is not None:
            self.server.store.depart(*self.identity, self.said_goodbye)

    def _session_op(self, header):
        # The ops about this connection rather than the store's values.
        if header.get("op") == "hello":
            self.identity = (str(header["namespace"]), int(header["rank"]))
            return {"ok": True}
        if header.get("op") == "bye":
            self.said_goodbye = True
            return {"ok": True}
        return None

    def handle(self):
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            try:
                header, payload = _recv_frame(sock)
            except (ConnectionError, OSError, struct.error, ValueError):
                return
            try:
                reply, data = self._session_op(header), b""
                if reply is None:
                    reply, data = self.server.store.handle(header, payload)
            except (KeyError, TypeError, ValueError) as exc:
                reply, data = {"ok": False, "error": "bad_request", "message": str(exc)}, b""
            try:
                _send_frame(sock, reply, data)
            except OSError:
                return


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class Server:
    r"""Distributed Server for distributed training: the rendezvous store of a job.

    It runs in a background thread of the process that creates it (``launcher``'s parent, or
    rank 0 when ranks are started by another launcher) and lives until :meth:`close` or the
    process's exit.

    Args:
        port: TCP port to listen on; 0 picks a free one (read it from ``py_server_port``).
        host: the address to listen on; all interfaces by default (other machines' ranks
            connect to it).

    Examples:
        >>> from megengine.distributed import Server, Client
        >>> server = Server(0)
        >>> client = Client("localhost", server.py_server_port)
        >>> client.user_set("answer", 42)
        >>> client.user_get("answer")
        42
        >>> server.close()
    """

    def __init__(self, port=0, *, host="0.0.0.0"):
        if not isinstance(port, int) or not 0 <= port < 65536:
            raise ValueError(f"Server: port must be an int in [0, 65536), got {port!r}")
        self._pid = os.getpid()
        self._server = _TCPServer((host, port), _Handler)
        self._server.store = _Store()
        self._server.lock = threading.Lock()
        self._server.connections = set()
        self.py_server_port = self._server.server_address[1]
        # MegEngine's second (C++) server; here the one store serves both roles.
        self.mm_server_port = self.py_server_port
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="neomeg-dist-server", daemon=True
        )
        self._thread.start()

    def close(self):
        """Stops serving: closes the listening socket and the clients' connections (idempotent).

        Examples:
            >>> from megengine.distributed import Server
            >>> s = Server(0)
            >>> s.close(); s.close()
        """
        if self._server is not None and self._pid != os.getpid():
            # A forked child's copy: its serving thread lives in the parent only, so shutdown()
            # would wait forever (the garbage collector of a launcher rank gets here).
            self._server = None
        if self._server is not None:
            # During interpreter shutdown the serving thread no longer runs: do not wait for it.
            if not sys.is_finalizing():
                self._server.shutdown()
            self._server.server_close()
            # The clients see the server gone, as when its process exits.
            with self._server.lock:
                for conn in self._server.connections:
                    with contextlib.suppress(OSError):
                        conn.shutdown(socket.SHUT_RDWR)
            self._server = None

    def __del__(self):
        # At interpreter shutdown the socket module may be gone: nothing is left to close then.
        with contextlib.suppress(Exception):
            self.close()


class Client:
    r"""Distributed Client for distributed training: one rank's connection to the Server.

    Connecting retries until ``timeout`` (the server's process may start after this one).
    Requests are serialised by a lock, so threads may share a client.

    Args:
        master_ip: ip address of master node.
        port: port of server at master node.
        timeout: seconds to wait for the server, and for peers in blocking requests;
            ``NEOMEG_DIST_TIMEOUT`` or 300 when None.

    Examples:
        >>> from megengine.distributed import Server, Client
        >>> server = Server(0)
        >>> client = Client("localhost", server.py_server_port, timeout=5)
        >>> client.connect()
        True
        >>> server.close()
    """

    def __init__(self, master_ip, port, *, timeout=None):
        self.master_ip = master_ip
        self.port = port
        self.timeout = default_timeout() if timeout is None else float(timeout)
        if self.timeout <= 0:
            raise ValueError(f"Client: timeout must be positive, got {timeout!r}")
        self._lock = threading.Lock()
        self._sock = None
        self._barrier_gen = defaultdict(int)
        self._bcast_gen = defaultdict(int)
        # Set by _join_session: the keys of one job's ranks, apart from an earlier job's on the
        # same Server.
        self._namespace = ""
        # The rank of this client's job whose process hosts the Server (rank 0 without
        # launcher), None where it is another process or this one: set by _join_session.
        self._server_host = None
        # Set by init_process_group: () -> the rank that the Server's host said it lost before
        # closing its connections to this rank (a collective's peers hear so), or None; and
        # (rank) -> None, which tells this rank's collective peers that it lost ``rank``
        # before a lost rank's error here makes it close its connections.
        self._host_reported = None
        self._tell_peers_lost = None
        self._open()

    def _join_session(self, rank, world_size, timeout=None, *, hosts_server=False):
        """Puts this client's keys under a namespace of their own, shared by the ``world_size``
        ranks that join together: a Server that outlives a job (the launcher's, called again,
        or the user's) still holds its barrier counts and its ranks' Gloo addresses, which the
        next job's ranks would otherwise take for their own (a barrier passed at once, a
        connection to a dead rank's port). Rank 0 draws the session; the others each pop the
        number rank 0 left for them, with whether rank 0 hosts the Server (``hosts_server``,
        rank 0's only): a lost Server is then rank 0 lost, and its error says so."""
        self._namespace = ""
        self._server_host = None
        if rank == 0:
            session = self.add("__session", 1)
            value = f"{session} 0" if hosts_server else str(session)
            for r in range(1, world_size):
                self.set(f"__session/{r}", value.encode())
        else:
            value = self._pop(
                f"__session/{rank}",
                f"init_process_group: rank {rank} of {world_size} waiting for rank 0 to join",
                timeout,
            ).split()
            session = int(value[0])
            self._server_host = int(value[1]) if len(value) > 1 else None
        self._namespace = f"__s{session}/"
        self._barrier_gen.clear()
        self._bcast_gen.clear()
        # The server notes when this connection closes, and whether close() said goodbye first:
        # a rank killed mid-collective is named to its peers as the one that left (_departed).
        self._request({"op": "hello", "namespace": self._namespace, "rank": rank})

    def _departed(self, timeout=0.0):
        """The ranks of this client's job whose connections to the server have closed, in the
        order they closed, as ``(rank, said_goodbye)``; waits up to ``timeout`` seconds for the
        first one. ``said_goodbye`` is False for a process that was killed or crashed (it
        never reached ``close``)."""
        reply, _ = self._request(
            {"op": "departed", "namespace": self._namespace, "timeout": float(timeout)}
        )
        return [(int(r), bool(bye)) for r, bye in reply["departed"]]

    def _open(self):
        deadline = time.monotonic() + self.timeout
        last = None
        while True:
            try:
                sock = socket.create_connection((self.master_ip, self.port), timeout=5)
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                _send_frame(sock, {"op": "ping"})
                header, _ = _recv_frame(sock)
                if header.get("magic") != "neomeg-store":
                    raise ConnectionError("the peer is not a megengine.distributed Server")
                self._sock = sock
                return
            except (OSError, ValueError, struct.error) as exc:
                last = exc
            if time.monotonic() >= deadline:
                raise ConnectionError(
                    f"cannot reach the distributed Server at {self.master_ip}:{self.port} "
                    f"within {self.timeout:g} s: {last}"
                )
            time.sleep(0.05)

    def _meet(self, name, rank, size, timeout):
        """Marks ``rank`` arrived at ``name`` and waits up to ``timeout`` seconds for the other
        ranks of ``size``; returns the ranks still missing then (empty when all came)."""
        self.set(f"{name}/{rank}", b"")
        keys = [f"{name}/{r}" for r in range(size) if r != rank]
        reply, _ = self._request(
            {"op": "wait", "keys": keys, "timeout": timeout}, allow_timeout=True
        )
        missing = set(reply.get("missing", ()))
        return [r for r in range(size) if self._namespace + f"{name}/{r}" in missing]

    def _request(self, header, payload=b"", what=None, allow_timeout=False):
        if self._namespace:
            header = dict(header)
            if "key" in header:
                header["key"] = self._namespace + header["key"]
            if "keys" in header:
                header["keys"] = [self._namespace + k for k in header["keys"]]
        with self._lock:
            try:
                _send_frame(self._sock, header, payload)
                reply, data = _recv_frame(self._sock)
            except (OSError, ValueError, struct.error) as exc:
                if self._server_host is not None:
                    culprit = self._host_reported() if self._host_reported else None
                    self._told_peers(self._server_host if culprit is None else culprit)
                    if culprit is not None and culprit != self._server_host:
                        # The host failed because of another rank, and told this one so (its
                        # collective with that rank failed): that rank is the one to name.
                        raise ConnectionError(
                            f"{what or header['op']}: lost the connection to rank {culprit}, "
                            f"which died or closed it (rank {self._server_host}, the distributed "
                            f"Server's host at {self.master_ip}:{self.port}, lost it first, said "
                            f"so and closed its connections to this rank): {exc}"
                        ) from None
                    # As a collective names a rank it lost: the Server went with its host.
                    raise ConnectionError(
                        f"{what or header['op']}: lost the connection to rank "
                        f"{self._server_host} (the distributed Server's host, "
                        f"{self.master_ip}:{self.port}), which died or closed it: {exc}"
                    ) from None
                raise ConnectionError(
                    f"lost the connection to the distributed Server at "
                    f"{self.master_ip}:{self.port} (did the master process exit?): {exc}"
                ) from None
        if reply.get("ok") or (allow_timeout and reply.get("error") == "timeout"):
            return reply, data
        if reply.get("error") == "departed":

            def how(said_goodbye):
                if said_goodbye:
                    return "it closed its connection after finishing, raising or exiting"
                return "its connection dropped without a goodbye: the process was killed or crashed"

            rank, said_goodbye = reply["departed"][0]
            missing = ", ".join(k[len(self._namespace) :] for k in reply["missing"])
            first, first_said_goodbye = reply["first"]
            blame_first = first != rank and said_goodbye and not first_said_goodbye
            self._told_peers(first if blame_first else rank)
            if blame_first:
                # The rank waited for raised and left after another was killed: most likely
                # because of it (its collective with the killed rank failed). The killed one is
                # the rank to name.
                raise ConnectionError(
                    f"{what or header['op']}: rank {first} was the job's first rank to leave, as "
                    f"the rendezvous store saw it ({how(False)}); then rank {rank}, which was to "
                    f"set {missing}, left too ({how(True)})"
                )
            message = (
                f"{what or header['op']}: rank {rank} of the job left before {missing} was set "
                f"({how(said_goodbye)})"
            )
            if first != rank:
                message += (
                    f" [rank {first} was the job's first rank to leave, as the rendezvous store "
                    f"saw it: {how(first_said_goodbye)}]"
                )
            raise ConnectionError(message)
        if reply.get("error") == "timeout":
            missing = ", ".join(k[len(self._namespace) :] for k in reply["missing"])
            raise TimeoutError(
                f"{what or header['op']}: timed out after {header.get('timeout'):g} s waiting "
                f"for {missing} (a peer never arrived or has died)"
            )
        raise RuntimeError(f"distributed Server: {reply.get('message', reply)}")

    def _told_peers(self, rank):
        """Tells this rank's collective peers that it lost job rank ``rank`` (see
        ``_tell_peers_lost``), before the error that names it here ends this rank."""
        if self._tell_peers_lost is not None:
            with contextlib.suppress(Exception):
                self._tell_peers_lost(rank)

    def connect(self):
        r"""Check connection success.

        Returns:
            True when the server answers.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> Client("localhost", server.py_server_port).connect()
            True
            >>> server.close()
        """
        self._request({"op": "ping"})
        return True

    def get_mm_server_port(self):
        r"""Get multiple machine server port (the same server here).

        Returns:
            the server's port.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.get_mm_server_port() == server.py_server_port
            True
            >>> server.close()
        """
        return self.port

    # The store primitives, also used by the C++ Communicator's rendezvous.
    def set(self, key, value):
        """Sets ``key`` to ``value`` (bytes) and wakes its waiters.

        Args:
            key: a str.
            value: bytes.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.set("k", b"v"); c.get("k")
            b'v'
            >>> server.close()
        """
        self._request({"op": "set", "key": key}, bytes(value))

    def get(self, key, timeout=None):
        """The bytes of ``key``, waiting for it to be set.

        Args:
            key: a str.
            timeout: seconds; the client's timeout when None.

        Returns:
            bytes.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> try:
            ...     c.get("never", timeout=0.1)
            ... except TimeoutError as e:
            ...     print("timed out")
            timed out
            >>> server.close()
        """
        t = self.timeout if timeout is None else timeout
        return self._request({"op": "get", "key": key, "timeout": t})[1]

    def wait(self, keys, timeout=None):
        """Waits until every key of ``keys`` is set.

        Args:
            keys: a list of str.
            timeout: seconds; the client's timeout when None.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.set("a", b""); c.wait(["a"])
            >>> server.close()
        """
        t = self.timeout if timeout is None else timeout
        self._request({"op": "wait", "keys": list(keys), "timeout": t})

    def add(self, key, delta):
        """Adds ``delta`` to the integer at ``key`` (0 when unset).

        Args:
            key: a str.
            delta: an int.

        Returns:
            the new value.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.add("n", 2), c.add("n", 3)
            (2, 5)
            >>> server.close()
        """
        return self._request({"op": "add", "key": key, "delta": int(delta)})[0]["value"]

    def set_is_grad(self, key, is_grad):
        r"""Mark send/recv need gradiants by key (read once by ``check_is_grad``).

        Args:
            key: key to match send/recv op.
            is_grad: whether this op need grad.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.set_is_grad("send0", True); c.check_is_grad("send0")
            True
            >>> server.close()
        """
        self.set("__is_grad/" + key, json.dumps(bool(is_grad)).encode())

    def check_is_grad(self, key):
        r"""Check whether send/recv need gradiants: waits for ``set_is_grad`` and removes the key.

        Args:
            key: key to match send/recv op.

        Returns:
            the bool that ``set_is_grad`` stored.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.set_is_grad("recv1", False); c.check_is_grad("recv1")
            False
            >>> server.close()
        """
        return json.loads(self._pop("__is_grad/" + key, "check_is_grad"))

    def set_remote_tracer(self, key, tracer_set):
        r"""Set tracer dict for tracing send/recv op (read once by ``check_remote_tracer``).

        Args:
            key: key to match send/recv op.
            tracer_set: valid tracer set: an iterable of ints (grad manager ids).

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.set_remote_tracer("send0", {3, 1}); c.check_remote_tracer("send0")
            [1, 3]
            >>> server.close()
        """
        try:
            ids = sorted(int(t) for t in tracer_set)
        except (TypeError, ValueError):
            raise TypeError(
                f"set_remote_tracer: tracer_set must be an iterable of ints, got {tracer_set!r}"
            ) from None
        self.set("__remote_tracer/" + key, json.dumps(ids).encode())

    def check_remote_tracer(self, key):
        r"""Get tracer dict for send/recv op: waits for ``set_remote_tracer``, removes the key.

        Args:
            key: key to match send/recv op.

        Returns:
            the tracer ids, sorted, as a list.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.set_remote_tracer("k", []); c.check_remote_tracer("k")
            []
            >>> server.close()
        """
        return json.loads(self._pop("__remote_tracer/" + key, "check_remote_tracer"))

    def _pop(self, name, what, timeout=None):
        t = self.timeout if timeout is None else timeout
        reply = self._request({"op": "pop", "key": name, "timeout": t}, what=what)
        return reply[1]

    def _watching(self, peers):
        """The fields of a store wait that end it with a ConnectionError as soon as one of
        ``peers`` (ranks of this client's job) has left: what it waits for will never come."""
        if not peers or not self._namespace:
            return {}
        return {"namespace": self._namespace, "peers": [int(r) for r in peers]}

    def group_barrier(self, key, size, *, peers=None):
        r"""A barrier wait for all group member.

        Args:
            key: group key to match each other.
            size: group size.
            peers: ranks of the job (the group's other members) whose leaving before the barrier
                is passed ends the wait at once with a ConnectionError instead of at the timeout.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> Client("localhost", server.py_server_port).group_barrier("solo", 1)
            >>> server.close()
        """
        self._barrier_gen[key] += 1
        name = f"__barrier/{key}/{self._barrier_gen[key]}"
        if self.add(name, 1) == size:
            self.set(name + "/done", b"")
        else:
            self._request(
                {
                    "op": "wait",
                    "keys": [name + "/done"],
                    "timeout": self.timeout,
                    **self._watching(peers),
                },
                what=f"group_barrier of group '{key}' ({size} ranks)",
            )

    def user_set(self, key, val):
        r"""Set user defined key-value pairs across processes.

        Args:
            key: a str.
            val: a JSON-serialisable value.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.user_set("cfg", {"lr": 0.1}); c.user_get("cfg")
            {'lr': 0.1}
            >>> server.close()
        """
        self.set("__user/" + key, json.dumps(val).encode())

    def user_get(self, key):
        r"""Get user defined key-value pairs across processes (waits for the key).

        Args:
            key: a str.

        Returns:
            the value set by ``user_set``.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.user_set("x", [1, 2]); c.user_get("x")
            [1, 2]
            >>> server.close()
        """
        return json.loads(self.get("__user/" + key))

    def user_pop(self, key):
        r"""Get user defined key-value pairs and delete the resources when the get is done.

        Args:
            key: a str.

        Returns:
            the value set by ``user_set``.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.user_set("x", 3); c.user_pop("x")
            3
            >>> server.close()
        """
        reply = self._request({"op": "pop", "key": "__user/" + key, "timeout": self.timeout})
        return json.loads(reply[1])

    def bcast_val(self, val, key, size, *, source=None):
        r"""Broadcasts a value from the member that passes it to the ``size - 1`` that pass None.

        Every member calls it the same number of times with the same ``key``.

        Args:
            val: the value (JSON-serialisable) on the source; None on the others.
            key: the group's key.
            size: the group's size.
            source: the source's rank in the job, where known: on the others, its leaving
                before it has sent the value ends the wait at once with a ConnectionError instead
                of at the timeout.

        Returns:
            None on the source, the value elsewhere.

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.bcast_val({"shape": [2]}, "g", 1)
            >>> server.close()
        """
        self._bcast_gen[key] += 1
        name = f"__bcast/{key}/{self._bcast_gen[key]}"
        if val is not None:
            self.set(name, json.dumps(val).encode())
            return None
        reply = self._request(
            {
                "op": "get",
                "key": name,
                "timeout": self.timeout,
                **self._watching([] if source is None else [source]),
            },
            what=f"bcast_val of '{key}'" + ("" if source is None else f" from rank {source}"),
        )
        return json.loads(reply[1])

    def close(self):
        """Closes the connection (idempotent).

        Examples:
            >>> from megengine.distributed import Server, Client
            >>> server = Server(0)
            >>> c = Client("localhost", server.py_server_port)
            >>> c.close(); c.close(); server.close()
        """
        if self._sock is not None:
            if self._namespace:
                with contextlib.suppress(ConnectionError):
                    self._request({"op": "bye"})
            self._sock.close()
            self._sock = None
