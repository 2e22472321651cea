"""Every sample of the op table (op_samples.py) gives the same outputs run eagerly, traced
(recorded on one input set, replayed compiled on another), traced with symbolic=True, dumped
and loaded through GraphInference, and, for the samples marked ``cpp``, loaded by the C++
load_and_run from .npy files; eager results match the numpy reference and expected dtypes."""

import io
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import megengine as mge
from megengine.jit import trace
from megengine.utils.comp_graph_tools import GraphInference

from .op_samples import SAMPLES

ROOT = Path(__file__).resolve().parents[2]
IDS = [s.name for s in SAMPLES]


def as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def arrays(out):
    return [o.numpy() for o in as_tuple(out)]


def inputs(sample, seed):
    return sample.make_inputs(np.random.default_rng(seed))


def tensors(xs):
    return [mge.Tensor(x, dtype=x.dtype) for x in xs]


def assert_same(got, want, tol, what):
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=what)


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_eager_matches_reference_and_dtypes(sample):
    xs = inputs(sample, 0)
    got = arrays(sample.fn(*tensors(xs)))
    assert tuple(g.dtype for g in got) == sample.dtypes
    if sample.ref is not None:
        want = [np.asarray(w) for w in as_tuple(sample.ref(*xs))]
        assert_same(got, [w.astype(d) for w, d in zip(want, sample.dtypes)], sample.tol, "ref")


@pytest.mark.parametrize("symbolic", [False, True], ids=["traced", "symbolic"])
@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_traced_replay_matches_eager(sample, symbolic):
    f = trace(sample.fn, symbolic=symbolic)
    first, second = inputs(sample, 0), inputs(sample, 1)
    assert_same(
        arrays(f(*tensors(first))), arrays(sample.fn(*tensors(first))), sample.tol, "record"
    )
    assert f._mode == "graph", "the sample must compile into a graph"
    got = arrays(f(*tensors(second)))  # the compiled graph, on new values
    assert_same(got, arrays(sample.fn(*tensors(second))), sample.tol, "replay")


def dump(sample):
    f = trace(sample.fn, capture_as_const=True)
    f(*tensors(inputs(sample, 0)))
    buf = io.BytesIO()
    f.dump(buf, arg_names=[f"in{i}" for i in range(len(inputs(sample, 0)))])
    return buf.getvalue()


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_dumped_model_matches_eager(sample):
    g = GraphInference(dump(sample))
    second = inputs(sample, 1)
    got = list(g.run(*second).values())
    assert_same(got, arrays(sample.fn(*tensors(second))), sample.tol, "GraphInference")


def load_and_run():
    build = Path(os.environ.get("BUILD_DIR", "build"))
    path = (build if build.is_absolute() else ROOT / build) / "src" / "load_and_run"
    if not path.exists():
        pytest.skip(f"{path} is not built")
    return path


CPP = [s for s in SAMPLES if s.cpp]


@pytest.mark.parametrize("sample", CPP, ids=[s.name for s in CPP])
def test_load_and_run_matches_eager(sample, tmp_path):
    exe = load_and_run()
    model = tmp_path / "m.nmeg"
    model.write_bytes(dump(sample))
    second = inputs(sample, 1)
    cmd = [str(exe), str(model), "--iters", "1", "--warmup", "0", "--print", "0"]
    for i, x in enumerate(second):
        np.save(tmp_path / f"in{i}.npy", x)
        cmd += ["--input", f"in{i}={tmp_path / f'in{i}.npy'}"]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    subprocess.run(
        [*cmd, "--output-dir", str(out_dir)], check=True, capture_output=True, timeout=60
    )
    want = arrays(sample.fn(*tensors(second)))
    got = [np.load(out_dir / f"output_{i}.npy") for i in range(len(want))]
    assert_same(got, want, sample.tol, "load_and_run")
