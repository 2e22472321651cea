"""``megengine.utils.profiler``: a timeline of the eager kernel calls (and of named scopes), in
Chrome's trace format (open it at ``chrome://tracing`` or in Perfetto).

The runtime records each kernel-library call while a :class:`Profiler` runs
(``imperative/op_timeline.h``): the op, its params, its input layouts, the thread, the start
and the duration. On a GPU the duration is the host's enqueue time (kernels run
asynchronously); ``start`` and ``stop`` wait for the devices, so the profile holds the work of
its own region. A traced function's replay runs its compiled graph, not eager calls: profile it
with ``NEOMEG_GRAPH_PROFILE=1`` (per-op totals) instead.
"""

import atexit
import contextlib
import functools
import json
import os
import re
import time
import weakref
from typing import ClassVar

from ..core import _imperative_rt as _rt
from ..device import _full_sync
from ..logger import get_logger

__all__ = ["Profiler", "is_profiling", "merge_trace_events", "profile", "scope"]

_logger = get_logger(__name__)
_running = None
_undumped = weakref.WeakSet()
# The scopes open while profiling: (name, kind, start ns) per open scope.
_open_scopes = []


def _now_ns():
    return _rt._timeline_now_ns()


class Profiler(contextlib.ContextDecorator):
    r"""Records the eager kernel calls between :meth:`start` and :meth:`stop` (or in a ``with``
    block, or a decorated function's calls) and writes them, with :func:`scope` regions, as a
    Chrome trace to ``<path>/<pid>.chrome_timeline.json``.

    The file is written by :meth:`dump`, which runs when the profiler is deleted or the process
    exits; a profiler used again replaces its recording (the last one is written).

    Args:
        path: the folder of the trace files.
        format: the file format: ``"chrome_timeline.json"`` (the one NeoMeg writes; MegEngine's
            ``"memory_flow.svg"`` is not supported and raises ValueError).
        formats: a list of formats, instead of ``format``.
        with_backtrace: accepted for MegEngine's signature; Python backtraces are not recorded
            (a warning says so).
        with_scopes: also record each call of a module (a scope named by its class), as
            MegEngine's module scopes.
        kwargs: MegEngine's options ``sample_rate``, ``profile_device``, ``num_tensor_watch``
            and ``enable_cupti``, accepted (integers) and kept in :attr:`options`; they change
            nothing here.

    Examples:
        >>> import os, tempfile
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> from megengine.utils.profiler import Profiler
        >>> folder = tempfile.mkdtemp()
        >>> profiler = Profiler(folder)
        >>> with profiler:
        ...     y = F.relu(mge.Tensor([-1.0, 2.0]) * 3)
        >>> profiler.dump()
        >>> os.listdir(folder) == [f"{os.getpid()}.chrome_timeline.json"]
        True
    """

    CHROME_TIMELINE = "chrome_timeline.json"
    valid_formats: ClassVar[frozenset] = frozenset({CHROME_TIMELINE})
    valid_options: ClassVar[dict] = {
        "sample_rate": 0,
        "profile_device": 1,
        "num_tensor_watch": 10,
        "enable_cupti": 0,
    }

    def __init__(
        self,
        path="profile",
        format="chrome_timeline.json",
        formats=None,
        with_backtrace=False,
        with_scopes=False,
        **kwargs,
    ):
        if not formats:
            formats = [format]
        if isinstance(formats, str):
            raise TypeError("formats expects a list of formats, got a str")
        for f in formats:
            if f not in Profiler.valid_formats:
                raise ValueError(
                    f"unsupported profile format {f!r}: NeoMeg writes {Profiler.CHROME_TIMELINE!r}"
                )
        unknown = sorted(set(kwargs) - set(Profiler.valid_options))
        if unknown:
            raise TypeError(f"Profiler got unknown options {unknown}")
        self.options = {k: int(kwargs.get(k, v)) for k, v in Profiler.valid_options.items()}
        if with_backtrace:
            _logger.warning("Profiler(with_backtrace=True): Python backtraces are not recorded")
        self._path = path
        self._formats = list(formats)
        self.with_backtrace = with_backtrace
        self._with_scopes = with_scopes
        self._pid = "<PID>"
        self._events = None
        self._scope_events = []
        self._steps = []
        self._origin_ns = 0
        self._local_time_us = 0
        self._module_patch = None

    @property
    def path(self):
        r"""The file the trace goes to (``{a,b}`` for several formats)."""
        fmt = self._formats[0] if len(self._formats) == 1 else "{" + ",".join(self._formats) + "}"
        return self.format_path(self._path, self._pid, fmt)

    @property
    def directory(self):
        r"""The folder of the trace files."""
        return self._path

    @property
    def formats(self):
        r"""The formats written."""
        return list(self._formats)

    def format_path(self, path, pid, format):
        r"""The file of one format: ``<path>/<pid>.<format>``.

        Args:
            path: the folder.
            pid: the process id.
            format: the format.

        Returns:
            The path.
        """
        return os.path.join(path, f"{pid}.{format}")

    def start(self):
        r"""Starts recording (waiting first for the work already queued on the devices).

        Returns:
            The profiler.
        """
        global _running
        if _running is not None:
            raise RuntimeError("another Profiler is already running; stop it first")
        _full_sync()
        _running = self
        self._pid = os.getpid()
        self._scope_events = []
        self._steps = []
        self._local_time_us = time.time_ns() // 1000
        self._origin_ns = _now_ns()
        _rt._timeline_start()
        return self

    def stop(self):
        r"""Stops recording (once the devices have finished the recorded work); the recording
        is kept until :meth:`dump` writes it.

        Returns:
            None.
        """
        global _running
        if _running is not self:
            raise RuntimeError("this Profiler is not running")
        _full_sync()
        self._events = _rt._timeline_stop()
        _running = None
        _undumped.add(self)

    def step(self):
        r"""Marks the end of a step (an instant event named ``step N`` on the timeline).

        Returns:
            The profiler.
        """
        if _running is not self:
            raise RuntimeError("step() needs this Profiler to be running")
        self._steps.append(_now_ns())
        return self

    def _trace(self):
        pid = self._pid
        us = self._us
        events = [
            {"name": "Metadata", "ph": "M", "pid": pid, "args": {"localTime": self._local_time_us}},
            {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"megengine {pid}"}},
        ]
        for name, params, inputs, start, dur, tid in self._events or []:
            args = {"params": params, "inputs": inputs}
            events.append(_complete(name, "kernel", start, dur, pid, tid, us, args))
        for name, kind, start, dur in self._scope_events:
            events.append(_complete(name, kind, start, dur, pid, "python", us, {}))
        for i, t in enumerate(self._steps):
            events.append(
                {"name": f"step {i}", "ph": "i", "s": "p", "ts": us(t), "pid": pid, "tid": 0}
            )
        return {"traceEvents": events, "displayTimeUnit": "ms"}

    def _us(self, ns):
        return (ns - self._origin_ns) / 1000.0

    def dump(self):
        r"""Writes the last recording (once; a later dump writes nothing until the next
        recording). Nothing is written when nothing was recorded.

        Returns:
            None.
        """
        if self._events is None:
            return
        if os.path.exists(self._path) and not os.path.isdir(self._path):
            _logger.warning("%s is not a directory, cannot write profiling results", self._path)
            return
        os.makedirs(self._path, exist_ok=True)
        for fmt in self._formats:
            path = self.format_path(self._path, self._pid, fmt)
            with open(path, "w", encoding="utf-8") as f:
                json.dump(self._trace(), f, separators=(",", ":"))
            _logger.info("profiling results written to %s", path)
        self._events = None
        _undumped.discard(self)

    def __enter__(self):
        self.start()
        if self._with_scopes:
            self._module_patch = _module_scopes()
            self._module_patch.__enter__()
        return self

    def __exit__(self, val, tp, trace):
        try:
            if self._module_patch is not None:
                self._module_patch.__exit__(None, None, None)
                self._module_patch = None
        finally:
            self.stop()

    def __call__(self, func):
        r"""Profiles every call of ``func`` (the last call's recording is written).

        Args:
            func: the function.

        Returns:
            The wrapped function, with ``__profiler__`` set to this profiler.
        """
        wrapped = super().__call__(func)
        wrapped.__profiler__ = self
        return wrapped

    def __del__(self):
        with contextlib.suppress(Exception):
            self.dump()


def _complete(name, cat, start_ns, dur_ns, pid, tid, us, args):
    event = {"name": name, "cat": cat, "ph": "X", "ts": us(start_ns), "dur": dur_ns / 1000.0}
    event.update(pid=pid, tid=tid, args=args)
    return event


def _record_scope(name, kind, start_ns):
    if _running is not None:
        _running._scope_events.append((name, kind, start_ns, _now_ns() - start_ns))


@contextlib.contextmanager
def scope(name):
    r"""Marks a region as a named event on the running profiler's timeline (nothing when no
    profiler runs). Scopes may nest.

    Args:
        name: the region's name.

    Returns:
        A context manager.

    Examples:
        >>> import tempfile
        >>> import megengine as mge
        >>> from megengine.utils.profiler import Profiler, scope
        >>> profiler = Profiler(tempfile.mkdtemp())
        >>> with profiler:
        ...     with scope("forward"):
        ...         y = mge.Tensor([1.0]) + 1
        >>> [e["name"] for e in profiler._trace()["traceEvents"] if e.get("cat") == "scope"]
        ['forward']
    """
    start = _now_ns()
    try:
        yield
    finally:
        _record_scope(name, "scope", start)


@contextlib.contextmanager
def _module_scopes():
    # Every Module call becomes a "module" scope named by its class while this is open.
    from ..module import Module

    original = Module.__call__

    @functools.wraps(original)
    def call(module, *args, **kwargs):
        start = _now_ns()
        try:
            return original(module, *args, **kwargs)
        finally:
            _record_scope(type(module).__name__, "module", start)

    Module.__call__ = call
    try:
        yield
    finally:
        Module.__call__ = original


def profile(*args, **kwargs):
    r"""A :class:`Profiler`: ``@profile`` on a function profiles its calls with the defaults;
    ``profile(...)`` takes :class:`Profiler`'s arguments and gives a profiler to use as a
    decorator or a context manager.

    Args:
        args: a function to decorate, or :class:`Profiler`'s positional arguments.
        kwargs: :class:`Profiler`'s keyword arguments.

    Returns:
        The decorated function, or the profiler.

    Examples:
        >>> import tempfile
        >>> import megengine as mge
        >>> from megengine.utils.profiler import profile
        >>> @profile(tempfile.mkdtemp())
        ... def step():
        ...     return (mge.Tensor([1.0]) * 2).numpy()
        >>> step()
        array([2.], dtype=float32)
    """
    if len(args) == 1 and not kwargs and callable(args[0]):
        return Profiler()(args[0])
    return Profiler(*args, **kwargs)


def is_profiling():
    r"""Whether a :class:`Profiler` is recording.

    Returns:
        bool.

    Examples:
        >>> from megengine.utils.profiler import is_profiling
        >>> is_profiling()
        False
    """
    return _running is not None


def merge_trace_events(directory):
    r"""Merges the ``<pid>.chrome_timeline.json`` files of ``directory`` (one per process of a
    distributed run) into ``merge.chrome_timeline.json``, each process's events shifted to the
    wall-clock time its recording started.

    Args:
        directory: the folder of the trace files.

    Returns:
        None.

    Examples:
        >>> import os, tempfile
        >>> import megengine as mge
        >>> from megengine.utils.profiler import Profiler, merge_trace_events
        >>> folder = tempfile.mkdtemp()
        >>> p = Profiler(folder)
        >>> with p:
        ...     _ = mge.Tensor([1.0]) + 1
        >>> p.dump()
        >>> merge_trace_events(folder)
        >>> sorted(os.listdir(folder))[-1]
        'merge.chrome_timeline.json'
    """
    names = sorted(n for n in os.listdir(directory) if re.match(r"\d+\.chrome_timeline\.json$", n))
    traces = []
    for name in names:
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
        meta = next((e for e in events if e.get("name") == "Metadata"), None)
        if meta is None:
            raise ValueError(f"{name}: no Metadata event (not written by a Profiler)")
        traces.append((meta["args"]["localTime"], events))
    if not traces:
        raise FileNotFoundError(f"no <pid>.chrome_timeline.json files in {directory}")
    first = min(t for t, _ in traces)
    merged = []
    for local_time, events in traces:
        for e in events:
            if e.get("name") == "Metadata":
                continue
            if "ts" in e:
                e["ts"] = e["ts"] + (local_time - first)
            merged.append(e)
    path = os.path.join(directory, "merge.chrome_timeline.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": merged}, f, separators=(",", ":"))
    _logger.info("profiling results written to %s", path)


@atexit.register
def _dump_at_exit():
    if _running is not None:
        with contextlib.suppress(Exception):
            _running.stop()
    for p in list(_undumped):
        with contextlib.suppress(Exception):
            p.dump()
