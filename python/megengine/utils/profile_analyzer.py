"""Summaries of a traced function's profile (:meth:`megengine.jit.trace.get_profile`).

MegEngine's analyser API: :class:`ProfileAnalyzer` reads the profile dict, ``select`` turns each
operator into a :class:`Record` through a time function (:class:`TimeFuncHelper` makes the usual
ones), filters, aggregates by operator type, sorts and cuts to the top k. A footprint field a
profile lacks (an operator without an operation count) is :class:`NonExistNum`, which prints as
``N/A`` and sorts after every number.
"""

import collections
import copy
import functools
from collections.abc import Callable

import numpy as np

__all__ = ["NonExistNum", "OprProfRst", "ProfileAnalyzer", "Record", "TimeFuncHelper"]


class NonExistNum:
    r"""A number that a profile does not have: it absorbs arithmetic, prints as ``N/A`` and is
    greater than every real number (so a descending sort puts it first, an ascending one last).

    Examples:
        >>> n = NonExistNum()
        >>> n + 3, 3 + n, n / 2 is n, n > 1e30, f"{n:.2f}"
        (3, 3, True, True, 'N/A')
    """

    def __truediv__(self, _):
        return self

    def __add__(self, rhs):
        return rhs

    def __radd__(self, lhs):
        return lhs

    def __neg__(self):
        return self

    def __gt__(self, rhs):
        if isinstance(rhs, NonExistNum):
            return id(self) > id(rhs)
        return True

    def __ge__(self, rhs):
        return self > rhs or self == rhs

    def __lt__(self, rhs):
        if isinstance(rhs, NonExistNum):
            return id(self) < id(rhs)
        return False

    def __le__(self, rhs):
        return self < rhs or self == rhs

    def __eq__(self, rhs):
        return self is rhs

    __hash__ = object.__hash__

    def __format__(self, spec):
        return "N/A"

    def __repr__(self):
        return "N/A"


class OprProfRst:
    r"""One operator's entries of a profile: its ``opr_info`` (name, type, id), ``time_dict``
    (``"host"``/``"device"`` to a list of ``{"start", "kern", "end"}`` dicts) and
    ``footprint`` (memory, computation, shapes; a missing key is :class:`NonExistNum`).

    Args:
        entry: the operator's entry of the profile's ``graph_exec["operator"]``.

    Examples:
        >>> rst = OprProfRst({"name": "relu", "type": "Elemwise", "id": "3"})
        >>> rst.update_device_prof_info({"start": 1.0, "kern": 1.0, "end": 1.5})
        >>> rst.opr_info["type"], rst.time_dict["device"][0]["end"], rst.footprint["memory"]
        ('Elemwise', 1.5, N/A)
    """

    opr_info = None
    time_dict = None
    footprint = None

    def __init__(self, entry: dict):
        assert isinstance(entry, dict)
        self.opr_info = collections.OrderedDict((k, entry[k]) for k in ("name", "type", "id"))
        self.time_dict = collections.defaultdict(list)
        self.footprint = collections.defaultdict(NonExistNum)

    def update_device_prof_info(self, dev_time: dict):
        r"""Adds one device timing (``start``, ``kern``, ``end`` in seconds).

        Args:
            dev_time: a value of the profile's ``profiler["device"][opr_id]``.

        Examples:
            >>> rst = OprProfRst({"name": "a", "type": "Reduce", "id": "1"})
            >>> rst.update_device_prof_info({"start": 0.0, "kern": 0.0, "end": 2.0})
            >>> len(rst.time_dict["device"])
            1
        """
        assert isinstance(dev_time, dict)
        self.time_dict["device"].append(copy.deepcopy(dev_time))

    def update_host_prof_info(self, host_time: dict):
        r"""Adds one host timing (``start``, ``kern``, ``end`` in seconds).

        Args:
            host_time: a value of the profile's ``profiler["host"][opr_id]``.

        Examples:
            >>> rst = OprProfRst({"name": "a", "type": "Reduce", "id": "1"})
            >>> rst.update_host_prof_info({"start": 0.0, "kern": 0.1, "end": 2.0})
            >>> rst.time_dict["host"][0]["kern"]
            0.1
        """
        assert isinstance(host_time, dict)
        self.time_dict["host"].append(copy.deepcopy(host_time))

    def update_footprint(self, footprint: dict):
        r"""Merges the operator's footprint (``memory``, ``computation``, ``in_shapes``, ...).

        Args:
            footprint: the profile's ``profiler["opr_footprint"][opr_id]``.

        Examples:
            >>> rst = OprProfRst({"name": "a", "type": "Reduce", "id": "1"})
            >>> rst.update_footprint({"memory": 64, "computation": 16})
            >>> rst.footprint["memory"], rst.footprint["in_shapes"]
            (64, N/A)
        """
        assert isinstance(footprint, dict)
        self.footprint.update(footprint)


class Record:
    r"""One row of an analysis: a time and the operator's (or an aggregate's) info and footprint,
    with the derived ``flops`` (computation per second) and ``bandwidth`` (bytes per second).

    Args:
        time: seconds, from the analysis's time function.
        info: the operator's ``opr_info``, or an aggregate's type and count.
        footprint: ``computation``, ``memory``, ``in_shapes`` and ``out_shapes`` (and optionally
            ``in_layouts``).

    Examples:
        >>> r = Record(0.5, {"type": "Elemwise", "id": "7"},
        ...            {"computation": 100, "memory": 8, "in_shapes": [[2]], "out_shapes": [[2]]})
        >>> r.flops, r.bandwidth, r.opr_id, r.get_column_by_name()
        (200.0, 16.0, 7, 0.5)
    """

    __slots__ = [
        "bandwidth",
        "computation",
        "flops",
        "in_layouts",
        "in_shapes",
        "info",
        "memory",
        "opr_id",
        "out_shapes",
        "time",
    ]

    def __init__(self, time: float, info: dict, footprint: dict):
        assert isinstance(footprint, dict)
        self.time = time
        self.info = collections.OrderedDict(copy.deepcopy(info))
        computation = footprint["computation"]
        self.computation = NonExistNum() if computation is None else computation
        self.memory = footprint["memory"]
        self.in_shapes = footprint["in_shapes"]
        self.in_layouts = footprint.get("in_layouts")
        self.out_shapes = footprint["out_shapes"]
        self.flops = self.computation / self.time if self.time else NonExistNum()
        self.bandwidth = self.memory / self.time if self.time else NonExistNum()
        self.opr_id = info.get("id")
        if isinstance(self.opr_id, str) and self.opr_id != "N/A":
            self.opr_id = int(self.opr_id)

    def get_column_by_name(self, name: str | None = None):
        r"""The value of a column: ``"time"`` (the default), ``"computation"``, ``"memory"``,
        ``"flops"``, ``"bandwidth"``, ...

        Args:
            name: the column; None for the time.

        Examples:
            >>> r = Record(2.0, {"id": "1"}, {"computation": None, "memory": 4,
            ...                               "in_shapes": [], "out_shapes": []})
            >>> r.get_column_by_name("memory"), r.get_column_by_name("computation")
            (4, N/A)
        """
        return getattr(self, "time" if name is None else name)


class ProfileAnalyzer:
    r"""Reads a profile (:meth:`megengine.jit.trace.get_profile`) for :meth:`select`.

    Args:
        obj: the profile dict.
        opr_filter: ``opr_filter(operator_entry, input_vars, output_vars)`` keeps the operators
            it returns True for (entries of ``graph_exec["operator"]`` and ``["var"]``).

    Examples:
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> from megengine.jit import trace
        >>> @trace(profiling=True)
        ... def f(x):
        ...     return F.exp(F.relu(x)).sum()
        >>> x = mge.Tensor([1.0, 2.0, 3.0])
        >>> for _ in range(2):
        ...     y = f(x)
        >>> analyzer = ProfileAnalyzer(f.get_profile())
        >>> rows = analyzer.select(TimeFuncHelper.eval_time_func("device", "end", np.max),
        ...                        aggregate=np.sum, aggregate_by="type", sort_by="time")
        >>> "Reduce" in [r.info["type"] for r in rows], bool(rows[0].time >= rows[-1].time)
        (True, True)
    """

    def __init__(self, obj: dict, opr_filter: Callable = lambda opr, inp, out: True):
        assert isinstance(obj, dict), type(obj)
        self._opr_set = {}
        varz = obj["graph_exec"]["var"]
        for opr_id, entry in obj["graph_exec"]["operator"].items():
            inp = [varz[i] for i in entry["input"]]
            out = [varz[i] for i in entry["output"]]
            if opr_filter(entry, inp, out):
                self._opr_set[opr_id] = OprProfRst(entry)
        profiler = obj["profiler"]
        for kind, update in (
            ("device", OprProfRst.update_device_prof_info),
            ("host", OprProfRst.update_host_prof_info),
        ):
            for opr_id, entry in profiler[kind].items():
                if opr_id in self._opr_set:
                    for times in entry.values():
                        update(self._opr_set[opr_id], times)
        for opr_id, entry in profiler.get("opr_footprint", {}).items():
            if opr_id in self._opr_set:
                self._opr_set[opr_id].update_footprint(entry)

    def _aggregate(
        self, records: list[Record], aop: str | Callable | None, atype: str | None
    ) -> list[Record]:
        if aop is None:
            assert atype is None, "aggregate_by needs an aggregate function"
            return records
        if isinstance(aop, str):
            aop = getattr(np, aop)
        groups = collections.defaultdict(list)
        for r in records:
            groups[r.info["type"] if atype == "type" else "all"].append(r)
        rows = []
        for opr_type, group in groups.items():
            footprint = {
                "computation": aop([r.computation for r in group]),
                "memory": aop([r.memory for r in group]),
                "in_shapes": None,
                "out_shapes": None,
            }
            info = {"type": opr_type, "count": len(group), "id": "N/A"}
            rows.append(Record(aop([r.time for r in group]), info, footprint))
        return rows

    def _sort(self, records: list[Record], sort_by: str | None) -> list[Record]:
        if sort_by is None:
            return records
        if sort_by.startswith("+"):
            column = sort_by[1:]
            records.sort(key=lambda r: r.get_column_by_name(column))
        else:
            records.sort(key=lambda r: -r.get_column_by_name(sort_by))
        return records

    def select(
        self,
        time_func: Callable,
        opr_filter: Callable = lambda opr: True,
        aggregate: str | Callable | None = None,
        aggregate_by: str | None = None,
        sort_by: str | None = None,
        top_k: int = 0,
    ) -> list[Record]:
        r"""The operators as records: timed, filtered, aggregated, sorted and cut.

        Args:
            time_func: ``time_func(OprProfRst)`` gives an operator's time, or None to leave it
                out (:class:`TimeFuncHelper` makes these).
            opr_filter: keeps the :class:`OprProfRst` it returns True for.
            aggregate: a function of a list (or a NumPy function's name) that combines the
                records of a group; None keeps one record per operator.
            aggregate_by: ``"type"`` groups by operator type; None makes one group.
            sort_by: a column name, descending, or ``"+name"`` ascending; None keeps the order.
            top_k: the number of records kept; 0 keeps all.

        Returns:
            a list of :class:`Record`.

        Examples:
            >>> prof = {"graph_exec": {"operator": {"1": {"name": "a", "type": "Elemwise",
            ...             "id": "1", "input": [], "output": []}}, "var": {}},
            ...         "profiler": {"device": {"1": {"cpu0": {"start": 0, "kern": 0, "end": 2}}},
            ...                      "host": {}}}
            >>> analyzer = ProfileAnalyzer(prof)
            >>> rows = analyzer.select(TimeFuncHelper.eval_time_func("device", "end", np.max))
            >>> int(rows[0].time), rows[0].memory
            (2, N/A)
        """
        records = []
        for opr in self._opr_set.values():
            if opr_filter(opr):
                time = time_func(opr)
                if time is not None:
                    records.append(Record(time, opr.opr_info, opr.footprint))
        records = self._aggregate(records, aggregate, aggregate_by)
        if not records:
            return records
        records = self._sort(records, sort_by)
        return records if top_k == 0 else records[:top_k]


class TimeFuncHelper:
    r"""Time functions for :meth:`ProfileAnalyzer.select`.

    Examples:
        >>> rst = OprProfRst({"name": "a", "type": "Elemwise", "id": "1"})
        >>> rst.update_host_prof_info({"start": 1.0, "kern": 1.25, "end": 2.0})
        >>> float(TimeFuncHelper.eval_time_func("host", "kern", np.max)(rst))
        0.25
        >>> float(TimeFuncHelper.min_start_func("host", "end", np.max)(rst))
        1.0
    """

    @staticmethod
    def _eval_time(prof_type, end_key, func, opr_prof):
        if prof_type not in opr_prof.time_dict:
            return None
        return func([t[end_key] - t["start"] for t in opr_prof.time_dict[prof_type]])

    @staticmethod
    def eval_time_func(prof_type: str, end_key: str, func: Callable) -> Callable:
        r"""A time function: ``func`` of each timing's ``end_key`` minus its start.

        Args:
            prof_type: ``"host"`` or ``"device"``.
            end_key: ``"kern"`` or ``"end"``.
            func: combines the operator's timings (one per comp node), e.g. ``np.max``.

        Returns:
            a function of an :class:`OprProfRst`, None where it has no such timing.

        Examples:
            >>> rst = OprProfRst({"name": "a", "type": "Elemwise", "id": "1"})
            >>> TimeFuncHelper.eval_time_func("device", "end", np.max)(rst) is None
            True
        """
        return functools.partial(TimeFuncHelper._eval_time, prof_type, end_key, func)

    @staticmethod
    def _min_start(prof_type, end_key, func, opr_prof):
        if prof_type not in opr_prof.time_dict:
            return None
        return np.min([t["start"] for t in opr_prof.time_dict[prof_type]])

    @staticmethod
    def min_start_func(prof_type: str, end_key: str, func: Callable) -> Callable:
        r"""A time function: the earliest start of the operator's timings.

        Args:
            prof_type: ``"host"`` or ``"device"``.
            end_key: unused (kept for MegEngine's signature).
            func: unused (kept for MegEngine's signature).

        Returns:
            a function of an :class:`OprProfRst`.

        Examples:
            >>> rst = OprProfRst({"name": "a", "type": "Elemwise", "id": "1"})
            >>> rst.update_device_prof_info({"start": 3.0, "kern": 3.0, "end": 4.0})
            >>> float(TimeFuncHelper.min_start_func("device", "end", np.max)(rst))
            3.0
        """
        return functools.partial(TimeFuncHelper._min_start, prof_type, end_key, func)

    @staticmethod
    def _max_end(prof_type, end_key, func, opr_prof):
        if prof_type not in opr_prof.time_dict:
            return None
        return np.max([t["end"] for t in opr_prof.time_dict[prof_type]])

    @staticmethod
    def max_end_func(prof_type: str, end_key: str, func: Callable) -> Callable:
        r"""A time function: the latest end of the operator's timings.

        Args:
            prof_type: ``"host"`` or ``"device"``.
            end_key: unused (kept for MegEngine's signature).
            func: unused (kept for MegEngine's signature).

        Returns:
            a function of an :class:`OprProfRst`.

        Examples:
            >>> rst = OprProfRst({"name": "a", "type": "Elemwise", "id": "1"})
            >>> rst.update_device_prof_info({"start": 3.0, "kern": 3.0, "end": 4.0})
            >>> float(TimeFuncHelper.max_end_func("device", "end", np.max)(rst))
            4.0
        """
        return functools.partial(TimeFuncHelper._max_end, prof_type, end_key, func)
