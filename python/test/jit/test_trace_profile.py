"""trace(profiling=True).get_profile() and megengine.utils.profile_analyzer.

NeoMeg's profile is checked for MegEngine's layout (every key MegEngine's own profile of the same
kind of function has, fixtures/megengine_1_13/trace_profile.json), for consistent ids, ordered
times, and bytes and operation counts computed here from the shapes; the analyser is checked on
MegEngine's file, against sums made here from its raw entries."""

import json
import math
import os

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager
from megengine.jit import trace
from megengine.optimizer import SGD
from megengine.utils.profile_analyzer import NonExistNum, ProfileAnalyzer, TimeFuncHelper

FIXTURE = os.path.join(
    os.path.dirname(__file__), "..", "fixtures", "megengine_1_13", "trace_profile.json"
)


def _mge_profile():
    with open(FIXTURE) as fh:
        return json.load(fh)


def _train_step_profile():
    rng = np.random.default_rng(0)
    net = M.Sequential(
        M.Conv2d(3, 16, 3, padding=1), M.BatchNorm2d(16), M.ReLU(), M.Conv2d(16, 8, 3, padding=1)
    )
    gm = GradManager().attach(net.parameters())
    opt = SGD(net.parameters(), 0.1, momentum=0.9)

    @trace(symbolic=True, profiling=True)
    def step(x):
        with gm:
            loss = (net(x) ** 2).mean()
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    x = mge.Tensor(rng.normal(size=(4, 3, 16, 16)).astype("float32"))
    for _ in range(3):
        step(x)
    return step.get_profile()


@pytest.fixture(scope="module")
def profile():
    return _train_step_profile()


def test_profile_has_megengines_layout(profile):
    ref = _mge_profile()
    assert set(profile) == set(ref)
    assert set(profile["profiler"]) == set(ref["profiler"])
    assert set(profile["graph_exec"]) == set(ref["graph_exec"])
    ref_id = ref["graph_exec"]["comp_seq"][-1]
    for section in ("operator",):
        missing = set(ref["graph_exec"][section][ref_id]) - {"waiting_spec", "extra"}
        for entry in profile["graph_exec"][section].values():
            assert missing <= set(entry)
    for entry in profile["profiler"]["opr_footprint"].values():
        assert set(entry) == set(ref["profiler"]["opr_footprint"][ref_id])
    for kind in ("host", "device"):
        for per_cn in profile["profiler"][kind].values():
            for times in per_cn.values():
                assert set(times) == {"start", "kern", "end"}
    json.dumps(profile)  # what MegEngine's get_profile parsed from JSON: nothing else in it


def test_profile_ids_and_times_are_consistent(profile):
    ge, prof = profile["graph_exec"], profile["profiler"]
    seq = ge["comp_seq"]
    assert len(seq) == len(set(seq)) == len(ge["operator"]) > 10
    last_end = -math.inf
    for oid in seq:
        op = ge["operator"][oid]
        assert op["id"] == oid and isinstance(oid, str)
        for vid in op["input"] + op["output"]:
            assert ge["var"][vid]["id"] == vid
        (times,) = prof["device"][oid].values()
        assert times["start"] <= times["kern"] <= times["end"]
        assert times["start"] >= last_end  # one queue: steps run one after another
        last_end = times["end"]
        assert list(prof["host"][oid].values()) == [times]


def test_footprint_bytes_and_convolution_operations(profile):
    ge, fp = profile["graph_exec"], profile["profiler"]["opr_footprint"]
    itemsize = {"float32": 4, "int32": 4, "float16": 2, "bfloat16": 2, "bool": 1}
    convs = []
    for oid, op in ge["operator"].items():
        varz = [ge["var"][v] for v in op["input"] + op["output"]]
        assert fp[oid]["memory"] == sum(itemsize[v["dtype"]] * math.prod(v["shape"]) for v in varz)
        assert fp[oid]["in_shapes"] == [ge["var"][v]["shape"] for v in op["input"]]
        if op["type"].startswith("ConvBias") or op["type"] == "ConvolutionForward":
            convs.append(fp[oid]["computation"])
    # Forward convolutions, multiply-adds counted twice (as MegEngine's 27648 for its 2x3x8x8
    # input and 4x3x3x3 filter): 4 images of 16x16, 3->16 and 16->8 channels, 3x3.
    assert sorted(convs) == sorted([2 * 4 * 16 * 16 * 16 * 3 * 9, 2 * 4 * 16 * 16 * 8 * 16 * 9])


def test_get_profile_needs_profiling_and_a_compiled_run():
    x = mge.Tensor([1.0, -1.0])

    @trace
    def plain(x):
        return F.relu(x)

    plain(x)
    plain(x)
    with pytest.raises(RuntimeError, match="profiling=True"):
        plain.get_profile()

    @trace(profiling=True)
    def profiled(x):
        return F.relu(x) * 3

    profiled(x)  # records: no compiled run yet
    with pytest.raises(RuntimeError, match="has not run yet"):
        profiled.get_profile()
    np.testing.assert_allclose(profiled(x).numpy(), [3.0, 0.0])
    assert profiled.get_profile()["graph_exec"]["comp_seq"]


def test_analyzer_reads_megengines_profile():
    ref = _mge_profile()
    analyzer = ProfileAnalyzer(ref)
    time_fn = TimeFuncHelper.eval_time_func("device", "end", np.max)
    rows = analyzer.select(time_fn)
    # Every operator with a device timing, its time the end minus the start of that entry.
    expected = {
        oid: max(t["end"] - t["start"] for t in per_cn.values())
        for oid, per_cn in ref["profiler"]["device"].items()
    }
    assert {str(r.opr_id): r.time for r in rows} == pytest.approx(expected)
    by_type = analyzer.select(time_fn, aggregate=np.sum, aggregate_by="type", sort_by="time")
    types = {}
    for oid, t in expected.items():
        kind = ref["graph_exec"]["operator"][oid]["type"]
        types[kind] = types.get(kind, 0) + t
    assert {r.info["type"]: r.time for r in by_type} == pytest.approx(types)
    assert [r.time for r in by_type] == sorted(types.values(), reverse=True)
    assert sum(r.info["count"] for r in by_type) == len(expected)
    conv = [r for r in rows if r.info["type"] == "ConvolutionForward"]
    assert conv[0].computation == 27648 and conv[0].flops == pytest.approx(27648 / conv[0].time)
    top2 = analyzer.select(time_fn, sort_by="+time", top_k=2)
    assert [r.time for r in top2] == sorted(expected.values())[:2]


def test_analyzer_filters_and_missing_footprints():
    ref = _mge_profile()
    only_elemwise = ProfileAnalyzer(ref, lambda opr, inp, out: opr["type"] == "Elemwise")
    rows = only_elemwise.select(TimeFuncHelper.eval_time_func("device", "end", np.max))
    assert {r.info["type"] for r in rows} == {"Elemwise"} and len(rows) == 2
    everything = ProfileAnalyzer(ref)
    consts = [
        oid
        for oid in ref["profiler"]["host"]
        if ref["graph_exec"]["operator"][oid]["type"] == "ImmutableTensor"
    ]
    rows = everything.select(
        TimeFuncHelper.eval_time_func("host", "end", np.max),
        opr_filter=lambda opr: opr.opr_info["type"] == "ImmutableTensor",
    )
    # Constants have no operation count in MegEngine's footprint (null).
    assert len(rows) == len(consts) > 0
    assert all(isinstance(r.computation, NonExistNum) for r in rows)
    assert f"{rows[0].computation}" == "N/A"
    # Operators without a timing of that kind are left out.
    assert everything.select(TimeFuncHelper.eval_time_func("nonexistent", "end", np.max)) == []


def test_analyzer_reads_neomegs_profile(profile):
    analyzer = ProfileAnalyzer(profile)
    rows = analyzer.select(
        TimeFuncHelper.eval_time_func("device", "end", np.max),
        aggregate=np.sum,
        aggregate_by="type",
        sort_by="time",
    )
    total = sum(
        t["end"] - t["start"]
        for per_cn in profile["profiler"]["device"].values()
        for t in per_cn.values()
    )
    assert sum(r.time for r in rows) == pytest.approx(total)
    assert sum(r.info["count"] for r in rows) == len(profile["graph_exec"]["comp_seq"])
