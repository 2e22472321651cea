"""megengine.utils.profiler: the eager kernel timeline in Chrome's trace format."""

import json
import os

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.utils import profiler as prof
from megengine.utils.profiler import Profiler, is_profiling, merge_trace_events, profile, scope


def _events(p, cat=None):
    return [e for e in p._trace()["traceEvents"] if cat is None or e.get("cat") == cat]


def test_records_the_calls_of_its_region_only(tmp_path):
    x = mge.Tensor(np.ones((4, 8), "float32"))
    w = mge.Tensor(np.ones((8, 3), "float32"))
    F.relu(x).numpy()  # before: not recorded
    p = Profiler(str(tmp_path))
    assert not is_profiling()
    with p:
        assert is_profiling()
        y = F.relu(F.matmul(x, w))
    assert not is_profiling()
    F.exp(y).numpy()  # after: not recorded
    kernels = _events(p, "kernel")
    names = [e["name"] for e in kernels]
    assert names == ["MatrixMul", "Elemwise(mode=RELU)"]
    mm = kernels[0]
    assert mm["ph"] == "X" and mm["dur"] >= 0 and mm["ts"] >= 0
    assert mm["args"]["inputs"] == ["{4(8),8(1)} float32", "{8(3),3(1)} float32"]
    assert mm["args"]["params"].startswith("MatrixMul(transposeA=false")
    assert kernels[1]["ts"] >= mm["ts"] + mm["dur"] - 1e-3  # in order, not overlapping
    p.dump()
    path = tmp_path / f"{os.getpid()}.chrome_timeline.json"
    assert p.path == str(path)
    trace = json.loads(path.read_text())
    assert trace["traceEvents"][0]["name"] == "Metadata"
    assert [e["name"] for e in trace["traceEvents"] if e.get("cat") == "kernel"] == names
    path.unlink()
    p.dump()  # written once per recording
    assert not path.exists()


def test_scopes_steps_and_module_scopes(tmp_path):
    net = M.Sequential(M.Linear(4, 3), M.ReLU())
    original_call = M.Module.__call__
    p = Profiler(str(tmp_path), with_scopes=True)
    with p:
        with scope("outer"), scope("inner"):
            net(mge.Tensor(np.ones((2, 4), "float32")))
        p.step()
    assert M.Module.__call__ is original_call
    scopes = {e["name"]: e for e in _events(p, "scope")}
    outer, inner = scopes["outer"], scopes["inner"]
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
    modules = sorted(e["name"] for e in _events(p, "module"))
    assert modules == ["Linear", "ReLU", "Sequential"]
    assert [e["name"] for e in _events(p) if e["ph"] == "i"] == ["step 0"]
    # kernels run inside their module's scope
    lin = next(e for e in _events(p, "module") if e["name"] == "Linear")
    mm = next(e for e in _events(p, "kernel") if e["name"] == "MatrixMul")
    assert lin["ts"] <= mm["ts"] <= lin["ts"] + lin["dur"]


def test_decorator_and_profile_factory(tmp_path):
    @profile(str(tmp_path))
    def step(v):
        return (mge.Tensor(v) * 2).numpy()

    np.testing.assert_array_equal(step([1.0, 2.0]), [2.0, 4.0])
    assert isinstance(step.__profiler__, Profiler)
    assert [e["name"] for e in _events(step.__profiler__, "kernel")] == ["Elemwise(mode=MUL)"]
    plain = profile(lambda: None)
    assert isinstance(plain.__profiler__, Profiler)


def test_misuse_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unsupported profile format 'memory_flow.svg'"):
        Profiler(format="memory_flow.svg")
    with pytest.raises(TypeError, match="list"):
        Profiler(formats="chrome_timeline.json")
    with pytest.raises(TypeError, match="unknown options"):
        Profiler(sampel_rate=1)
    assert Profiler(sample_rate="3").options["sample_rate"] == 3
    p, q = Profiler(str(tmp_path)), Profiler(str(tmp_path))
    with pytest.raises(RuntimeError, match="not running"):
        p.stop()
    with pytest.raises(RuntimeError, match="running"):
        p.step()
    p.start()
    try:
        with pytest.raises(RuntimeError, match="already running"):
            q.start()
    finally:
        p.stop()
    with pytest.raises(ZeroDivisionError), q:
        raise ZeroDivisionError
    assert not is_profiling()  # an exception in the block still stops it
    (tmp_path / "file").write_text("x")
    r = Profiler(str(tmp_path / "file"))
    with r:
        pass
    r.dump()  # a warning, no exception: the path is a file


def test_merge_shifts_each_process_to_its_start(tmp_path):
    def write(pid, local_time, ts):
        events = [
            {"name": "Metadata", "ph": "M", "pid": pid, "args": {"localTime": local_time}},
            {"name": "op", "ph": "X", "ts": ts, "dur": 1.0, "pid": pid, "tid": 0},
        ]
        (tmp_path / f"{pid}.chrome_timeline.json").write_text(json.dumps({"traceEvents": events}))

    write(11, 1_000_000, 5.0)
    write(12, 1_000_300, 5.0)
    (tmp_path / "notes.json").write_text("{}")
    merge_trace_events(str(tmp_path))
    merged = json.loads((tmp_path / "merge.chrome_timeline.json").read_text())["traceEvents"]
    assert sorted((e["pid"], e["ts"]) for e in merged) == [(11, 5.0), (12, 305.0)]
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError):
        merge_trace_events(str(tmp_path / "empty"))


@pytest.fixture(autouse=True)
def _no_profiler_left_running():
    yield
    assert prof._running is None
