"""F.vision against NumPy references: nms against a pairwise-IoU greedy loop, cvt_color against
per-pixel colour formulas, with edge shapes, errors and gradients."""

import numpy as np
import pytest
from gradcheck import check_grad
from opencv_border import fold

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.normal(size=shape).astype(np.float32)


# ----------------------------------------------------------------------------- nms


def iou(a, b):
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def nms_ref(boxes, scores, thresh, max_output=None):
    """Greedy NMS one pair at a time: the highest remaining score wins, of equal scores the later
    box (MegEngine's descending Argsort)."""
    remaining = sorted(range(len(scores)), key=lambda i: (-scores[i], -i))
    keep = []
    while remaining and (max_output is None or len(keep) < max_output):
        best = remaining.pop(0)
        keep.append(best)
        remaining = [j for j in remaining if iou(boxes[best], boxes[j]) <= thresh]
    return keep


def random_boxes(n, spread=20.0, size=15.0):
    xy = rng.uniform(0, spread, size=(n, 2))
    wh = rng.uniform(1, size, size=(n, 2))
    return np.concatenate([xy, xy + wh], axis=1).astype(np.float32)


@pytest.mark.parametrize("n,thresh", [(1, 0.5), (30, 0.3), (60, 0.5), (100, 0.7)])
def test_nms_matches_greedy_reference(n, thresh):
    boxes = random_boxes(n)
    scores = rng.uniform(size=n).astype(np.float32)
    out = F.vision.nms(mge.Tensor(boxes), mge.Tensor(scores), iou_thresh=thresh)
    assert out.dtype == np.int32
    assert out.numpy().tolist() == nms_ref(boxes, scores, thresh)


def test_nms_max_output_ties_and_empty():
    boxes = random_boxes(40)
    scores = rng.uniform(size=40).astype(np.float32)
    full = nms_ref(boxes, scores, 0.4)
    for k in (0, 1, 3, len(full), len(full) + 5):
        out = F.vision.nms(boxes, scores, 0.4, max_output=k).numpy().tolist()
        assert out == full[:k]
    # Of equal scores the later box comes first (MegEngine 1.13 gives [3, 2] too); identical
    # boxes suppress each other.
    same = np.array([[0, 0, 4, 4]] * 3 + [[10, 10, 12, 12]], np.float32)
    assert F.vision.nms(same, np.ones(4, np.float32), 0.5).numpy().tolist() == [3, 2]
    # Touching boxes do not overlap; IoU exactly at the threshold is kept.
    half = np.array([[0, 0, 2, 2], [0, 0, 2, 1], [2, 0, 4, 2]], np.float32)
    assert F.vision.nms(half, [3.0, 2.0, 1.0], 0.5).numpy().tolist() == [0, 1, 2]
    assert F.vision.nms(half, [3.0, 2.0, 1.0], 0.49).numpy().tolist() == [0, 2]
    empty = F.vision.nms(np.zeros((0, 4), np.float32), np.zeros(0, np.float32), 0.5)
    assert empty.shape == (0,) and empty.dtype == np.int32


@pytest.mark.parametrize("symbolic", [False, True])
def test_nms_traces_into_a_graph_that_replays(symbolic):
    from megengine.jit import trace

    @trace(symbolic=symbolic)
    def keep(b, s):
        return F.vision.nms(b, s, 0.5) * 1

    boxes = mge.Tensor(np.array([[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]], np.float32))
    for scores, want in [
        ([0.9, 0.8, 0.7], [0, 2]),
        ([0.1, 0.8, 0.7], [1, 2]),
        ([0.1, 0.8, 0.9], [2, 1]),
        ([0.5, 0.5, 0.5], [2, 1]),  # MegEngine's tie order: the later box first
    ]:
        assert keep(boxes, mge.Tensor(np.array(scores, np.float32))).numpy().tolist() == want
        assert keep._mode == "graph"  # the compiled graph ran, its result's length the data's
    # Random boxes, replayed: the graph keeps as many as each call's data leaves.
    boxes = random_boxes(50)
    for _ in range(3):
        scores = rng.uniform(size=50).astype(np.float32)
        got = keep(mge.Tensor(boxes), mge.Tensor(scores)).numpy().tolist()
        assert got == nms_ref(boxes, scores, 0.5)


def test_nms_dumps_and_loads(tmp_path):
    import io

    from megengine.core.tensor.megbrain_graph import load_graph
    from megengine.jit import trace
    from megengine.utils.comp_graph_tools import GraphInference

    @trace(capture_as_const=True)
    def keep(b, s):
        return F.vision.nms(b, s, 0.3, max_output=7)

    boxes = random_boxes(40)
    keep(mge.Tensor(boxes), mge.Tensor(rng.uniform(size=40).astype(np.float32)))
    buf = io.BytesIO()
    keep.dump(
        buf,
        arg_names=["boxes", "scores"],
        output_names=["keep"],
        input_shapes={"boxes": (-1, 4), "scores": (-1,)},
    )
    path = tmp_path / "nms.nmeg"
    path.write_bytes(buf.getvalue())
    g = GraphInference(str(path))
    for seed in range(3):
        scores = np.random.default_rng(seed).uniform(size=40).astype(np.float32)
        want = nms_ref(boxes, scores, 0.3, 7)
        got = g.run(boxes, scores)["keep"]
        assert got.dtype == np.int32 and got.tolist() == want
    # The box count is declared free: the graph follows another count (max_output was given).
    for n in (12, 1, 0, 55):
        b = random_boxes(n)
        scores = rng.uniform(size=n).astype(np.float32)
        got = g.run(inp_dict={"boxes": b, "scores": scores})["keep"]
        assert got.tolist() == nms_ref(b, scores, 0.3, 7), n
    out = load_graph(str(path)).output_vars_list  # the graph API reads it too
    assert [(v.name, v.dtype) for v in out] == [("keep", np.int32)]


def test_nms_capacity_of_none_is_the_traced_count():
    from megengine.jit import TraceError, trace

    @trace(capture_as_const=True)
    def keep(b, s):
        return F.vision.nms(b, s, 0.6)

    boxes = random_boxes(30)
    scores = rng.uniform(size=30).astype(np.float32)
    assert keep(mge.Tensor(boxes), mge.Tensor(scores)).numpy().tolist() == nms_ref(
        boxes, scores, 0.6
    )
    # MegEngine traces the box count as the capacity: a model with that count free would cut
    # a larger call's boxes to it, so the dump refuses, naming the line.
    with pytest.raises(TraceError, match="max_output=None"):
        keep.dump(io_bytes(), arg_names=["b", "s"], input_shapes={"b": (-1, 4), "s": (-1,)})
    keep.dump(io_bytes(), arg_names=["b", "s"])


def io_bytes():
    import io

    return io.BytesIO()


def test_nms_keep_op_against_numpy_greedy():
    """The NMSKeep op alone (boxes already in score order): its padded indices and count against
    an independent greedy loop, at edge shapes."""
    from megengine.core._imperative_rt import apply

    from megengine.core.ops import builtin

    def run(b, thresh, cap):
        idx, cnt = apply(builtin.NMSKeep(iou_thresh=thresh, max_output=cap), mge.Tensor(b))
        return idx.numpy(), cnt.numpy()

    def want(b, thresh, cap):
        keep = nms_ref(b, -np.arange(len(b), dtype=np.float64), thresh, cap)
        padded = keep + [keep[-1] if keep else 0] * (cap - len(keep))
        return padded, len(keep)

    cases = [
        (random_boxes(25), 0.3),
        (random_boxes(60, spread=10.0), 0.5),  # crowded: most suppressed
        (np.array([[0, 0, 4, 4]] * 5, np.float32), 0.5),  # all but one suppressed
        (np.array([[2, 2, 2, 2], [2, 2, 2, 2], [0, 0, 3, 3], [1, 1, 1, 5]], np.float32), 0.0),
        (random_boxes(1), 0.5),
    ]
    for b, thresh in cases:
        for cap in (0, 1, 3, len(b), len(b) + 4):
            idx, cnt = run(b[None], thresh, cap)
            assert idx.shape == (1, cap) and idx.dtype == np.int32 and cnt.dtype == np.int32
            w_idx, w_cnt = want(b, thresh, cap)
            assert cnt.tolist() == [w_cnt] and idx[0].tolist() == w_idx, (b, thresh, cap)
    # A batch: each item on its own.
    b = np.stack([random_boxes(10), random_boxes(10)])
    idx, cnt = run(b, 0.4, 6)
    for i in range(2):
        w_idx, w_cnt = want(b[i], 0.4, 6)
        assert idx[i].tolist() == w_idx and cnt[i] == w_cnt
    # No boxes: count 0.
    idx, cnt = run(np.zeros((1, 0, 4), np.float32), 0.5, 3)
    assert idx.shape == (1, 3) and cnt.tolist() == [0]
    for bad in (np.zeros((5, 4), np.float32), np.zeros((1, 5, 3), np.float32)):
        with pytest.raises(Exception, match=r"boxes must have shape \(batch, N, 4\)"):
            run(bad, 0.5, 3)
    with pytest.raises(Exception, match="boxes must be float32"):
        apply(builtin.NMSKeep(iou_thresh=0.5, max_output=2), mge.Tensor(np.zeros((1, 2, 4), "i4")))


def test_nms_matches_megengine_fixture():
    """The boxes and scores of src/test/fixtures/mge/nms.npz, whose outputs MegEngine 1.13's
    F.vision.nms gave (make_mge_models.py's Nms)."""
    import pathlib

    fixture = pathlib.Path(__file__).resolve().parents[3] / "src/test/fixtures/mge/nms.npz"
    d = np.load(fixture)
    b, s = d["in_boxes"], d["in_scores"]
    assert F.vision.nms(b, s, 0.5, max_output=3).numpy().tolist() == d["out_keep3"].tolist()
    assert F.vision.nms(b, s, 0.5).numpy().tolist() == d["out_keep_all"].tolist()
    got = F.vision.nms(b, s, 0.1, max_output=40).numpy().tolist()
    assert got == d["out_keep_tight"].tolist()


def test_nms_errors():
    boxes, scores = random_boxes(5), np.ones(5, np.float32)
    with pytest.raises(ValueError, match=r"nms: boxes must have shape \(N, 4\)"):
        F.vision.nms(boxes[:, :3], scores, 0.5)
    with pytest.raises(ValueError, match=r"nms: scores must have shape \(N,\)"):
        F.vision.nms(boxes, scores[:, None], 0.5)
    with pytest.raises(ValueError, match="nms: 5 boxes but 4 scores"):
        F.vision.nms(boxes, scores[:4], 0.5)
    with pytest.raises(ValueError, match="nms: max_output must be >= 0"):
        F.vision.nms(boxes, scores, 0.5, max_output=-1)


# ----------------------------------------------------------------------------- cvt_color


def cvt_ref(x, mode):
    x = x.astype(np.float64)
    a, b, c = (x[..., i] for i in range(3)) if x.shape[-1] >= 3 else (None, None, None)
    if mode == "RGB2GRAY":
        return (0.299 * a + 0.587 * b + 0.114 * c)[..., None]
    if mode == "BGR2GRAY":
        return (0.299 * c + 0.587 * b + 0.114 * a)[..., None]
    if mode == "RGB2YUV":
        y = 0.114 * a + 0.587 * b + 0.299 * c
        return np.stack([y, 0.492 * (a - y) + 0.5, 0.877 * (c - y) + 0.5], -1)
    if mode == "YUV2RGB":
        cr, cb = b - 0.5, c - 0.5
        return np.stack([a + 2.032 * cr, a - 0.581 * cb - 0.395 * cr, a + 1.140 * cb], -1)
    if mode in ("RGB2BGR", "BGR2RGB"):
        return x[..., ::-1]
    if mode == "GRAY2RGB":
        return np.repeat(x, 3, axis=-1)
    if mode == "RGBA2RGB":
        return x[..., :3]
    if mode == "RGBA2BGR":
        return x[..., 2::-1]
    raise AssertionError(mode)


MODES = {
    "RGB2GRAY": 3,
    "BGR2GRAY": 3,
    "RGB2YUV": 3,
    "YUV2RGB": 3,
    "RGB2BGR": 3,
    "BGR2RGB": 3,
    "GRAY2RGB": 1,
    "RGBA2RGB": 4,
    "RGBA2BGR": 4,
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_cvt_color_float(mode):
    x = rng.uniform(size=(2, 3, 5, MODES[mode])).astype(np.float32)
    out = F.vision.cvt_color(mge.Tensor(x), mode=mode)
    ref = cvt_ref(x, mode)
    assert out.shape == ref.shape and out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-6)


def test_cvt_color_known_values_and_roundtrip():
    # MegEngine's documented example.
    x = np.array([[[[-0.58675045, 1.7526233, 0.10702174]]]], np.float32)
    np.testing.assert_allclose(F.vision.cvt_color(x, "RGB2GRAY").numpy(), [[[[0.86555195]]]])
    # YUV2RGB inverts RGB2YUV up to their 3-digit weights (both put blue first, as MegEngine's
    # float kernels do).
    bgr = rng.uniform(size=(1, 4, 4, 3)).astype(np.float32)
    back = F.vision.cvt_color(F.vision.cvt_color(bgr, "RGB2YUV"), "YUV2RGB").numpy()
    np.testing.assert_allclose(back, bgr, atol=1e-3)


def test_cvt_color_integer_channel_moves_and_edges():
    x = rng.integers(0, 256, size=(1, 2, 3, 3)).astype(np.uint8)
    out = F.vision.cvt_color(x, "bgr2rgb")
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out.numpy(), x[..., ::-1])
    g = rng.integers(0, 256, size=(2, 1, 2, 1)).astype(np.uint8)
    np.testing.assert_array_equal(F.vision.cvt_color(g, "GRAY2RGB").numpy(), np.repeat(g, 3, -1))
    empty = F.vision.cvt_color(np.zeros((0, 2, 2, 3), np.float32), "RGB2GRAY")
    assert empty.shape == (0, 2, 2, 1)


def test_cvt_color_errors():
    x = randn(1, 2, 2, 3)
    with pytest.raises(ValueError, match="cvt_color: mode must be one of"):
        F.vision.cvt_color(x, "RGB2HSV")
    with pytest.raises(ValueError, match=r"cvt_color: mode GRAY2RGB needs \(N, H, W, 1\)"):
        F.vision.cvt_color(x, "GRAY2RGB")
    with pytest.raises(ValueError, match=r"cvt_color: mode RGB2GRAY needs \(N, H, W, 3\)"):
        F.vision.cvt_color(x[0], "RGB2GRAY")
    with pytest.raises(TypeError, match="cvt_color: mode RGB2YUV needs a float input"):
        F.vision.cvt_color(x.astype(np.uint8), "RGB2YUV")


@pytest.mark.parametrize("mode", ["RGB2GRAY", "RGB2YUV", "YUV2RGB", "RGB2BGR", "GRAY2RGB"])
def test_cvt_color_grad(mode):
    check_grad(lambda a: F.vision.cvt_color(a, mode), randn(1, 2, 3, MODES[mode]))


def test_vision_interpolate_is_nn_interpolate():
    assert F.vision.interpolate is F.nn.interpolate
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 2, 2)
    # MegEngine's documented example.
    ref = [
        [1.0, 1.25, 1.75, 2.0],
        [1.5, 1.75, 2.25, 2.5],
        [2.5, 2.75, 3.25, 3.5],
        [3.0, 3.25, 3.75, 4.0],
    ]
    np.testing.assert_allclose(F.vision.interpolate(x, [4, 4]).numpy()[0, 0], ref)


# ----------------------------------------------------------------------------- warps


def warp_ref(x, mats, out_hw, idx=None, mode="replicate", border_val=0.0):
    x = x.astype(np.float64)
    idx = range(len(mats)) if idx is None else idx
    oh, ow = out_hw
    out = np.zeros((len(mats), x.shape[1], oh, ow))
    for n, (m, b) in enumerate(zip(mats.astype(np.float64), idx)):
        for h in range(oh):
            for w in range(ow):
                sx, sy, d = m @ np.array([w, h, 1.0])
                sx, sy = sx / d, sy / d
                for r in (np.floor(sy), np.floor(sy) + 1):
                    for q in (np.floor(sx), np.floor(sx) + 1):
                        wt = (1 - abs(sy - r)) * (1 - abs(sx - q))
                        fr = fold(int(r), x.shape[2], mode)
                        fq = fold(int(q), x.shape[3], mode)
                        tap = border_val if fr is None or fq is None else x[b, :, fr, fq]
                        out[n, :, h, w] += wt * tap
    return out


def random_mats(n, reach=3.0):
    a = rng.uniform(-0.6, 0.6, n)
    s = rng.uniform(0.8, 1.2, n)
    m = np.zeros((n, 3, 3), np.float32)
    m[:, 0, 0], m[:, 0, 1], m[:, 1, 0], m[:, 1, 1] = (
        s * np.cos(a),
        -s * np.sin(a),
        s * np.sin(a),
        s * np.cos(a),
    )
    m[:, :2, 2] = rng.uniform(-reach, reach, (n, 2))
    m[:, 2, :2] = rng.uniform(-0.02, 0.02, (n, 2))
    m[:, 2, 2] = rng.uniform(0.9, 1.1, n)
    return m


@pytest.mark.parametrize("mode", ["replicate", "reflect", "reflect_101", "wrap", "constant"])
def test_warp_perspective_matches_reference(mode):
    x = randn(3, 2, 5, 6)
    mats = random_mats(4)
    idx = [2, 0, 1, 1]
    out = F.vision.warp_perspective(x, mats, (4, 7), mat_idx=idx, border_mode=mode, border_val=0.5)
    ref = warp_ref(x, mats, (4, 7), idx, mode, 0.5)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
    # NHWC is the same warp on channels-last images.
    nhwc = F.vision.warp_perspective(
        x.transpose(0, 2, 3, 1), mats, (4, 7), idx, mode, 0.5, format="NHWC"
    )
    np.testing.assert_allclose(nhwc.numpy(), ref.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)


def test_warp_perspective_known_values_and_exports():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    shift = np.array([[[1, 0, 1], [0, 1, 1], [0, 0, 1]]], np.float32)
    # MegEngine's documented example.
    out = F.vision.warp_perspective(mge.Tensor(x), mge.Tensor(shift), (2, 2))
    assert out.numpy().tolist() == [[[[5.0, 6.0], [9.0, 10.0]]]]
    assert F.warp_perspective is F.vision.warp_perspective
    assert F.nn.warp_affine is F.vision.warp_affine
    # A zero denominator reads border_val in constant mode.
    flat = np.array([[[1, 0, 0], [0, 1, 0], [0, 0, 0]]], np.float32)
    out = F.vision.warp_perspective(x, flat, 1, border_mode="constant", border_val=3.0)
    assert out.numpy().tolist() == [[[[3.0]]]]
    # float16 images warp in float16.
    half = F.vision.warp_perspective(x.astype(np.float16), shift, (2, 2))
    assert half.dtype == np.float16 and half.numpy().tolist() == [[[[5.0, 6.0], [9.0, 10.0]]]]


def test_warp_affine_is_warp_perspective_with_affine_row():
    x = randn(2, 5, 4, 3)  # NHWC
    aff = random_mats(2)[:, :2, :]
    full = np.concatenate([aff, np.tile([[[0, 0, 1]]], (2, 1, 1)).astype(np.float32)], axis=1)
    out = F.vision.warp_affine(x, aff, (3, 6), border_mode="reflect")
    ref = warp_ref(x.transpose(0, 3, 1, 2), full, (3, 6), mode="reflect").transpose(0, 2, 3, 1)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
    nchw = F.vision.warp_affine(x.transpose(0, 3, 1, 2), aff, (3, 6), "wrap", format="NCHW")
    ref = warp_ref(x.transpose(0, 3, 1, 2), full, (3, 6), mode="wrap")
    np.testing.assert_allclose(nchw.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_warp_edge_shapes():
    x = randn(2, 3, 1, 1)
    mats = random_mats(2)
    out = F.vision.warp_perspective(x, mats, (2, 3))
    np.testing.assert_allclose(out.numpy(), np.broadcast_to(x, (2, 3, 2, 3)), rtol=1e-6)
    assert F.vision.warp_perspective(x, mats, (0, 3)).shape == (2, 3, 0, 3)
    none = F.vision.warp_perspective(x, np.zeros((0, 3, 3), np.float32), (2, 2), mat_idx=[])
    assert none.shape == (0, 3, 2, 2)


def test_warp_errors():
    x, mats = randn(2, 1, 4, 4), random_mats(2)
    with pytest.raises(ValueError, match="warp_perspective: inp must be a 4-dim NCHW"):
        F.vision.warp_perspective(x[0], mats, (2, 2))
    with pytest.raises(ValueError, match=r"warp_perspective: mat must have shape \(N, 3, 3\)"):
        F.vision.warp_perspective(x, mats[:, :2], (2, 2))
    with pytest.raises(ValueError, match="warp_perspective: 1 matrices for 2 images"):
        F.vision.warp_perspective(x, mats[:1], (2, 2))
    with pytest.raises(ValueError, match=r"warp_perspective: mat_idx must have shape \(2,\)"):
        F.vision.warp_perspective(x, mats, (2, 2), mat_idx=[0])
    with pytest.raises(IndexError, match="out of bounds"):
        F.vision.warp_perspective(x, mats, (2, 2), mat_idx=[0, 2]).numpy()
    with pytest.raises(ValueError, match="warp_perspective: border_mode must be one of"):
        F.vision.warp_perspective(x, mats, (2, 2), border_mode="isolated")
    with pytest.raises(ValueError, match="warp_perspective: only interp_mode 'linear'"):
        F.vision.warp_perspective(x, mats, (2, 2), interp_mode="cubic")
    with pytest.raises(ValueError, match="warp_perspective: format must be"):
        F.vision.warp_perspective(x, mats, (2, 2), format="NCHW4")
    with pytest.raises(TypeError, match="warp_perspective: inp must be a float tensor"):
        F.vision.warp_perspective(x.astype(np.int32), mats, (2, 2))
    with pytest.raises(ValueError, match=r"warp_affine: mat must have shape \(N, 2, 3\)"):
        F.vision.warp_affine(x, mats, (2, 2))


@pytest.mark.parametrize("mode", ["replicate", "reflect_101", "wrap", "constant"])
def test_warp_perspective_grad(mode):
    x = randn(2, 2, 5, 4)
    mats = random_mats(3, reach=2.0)
    idx = [1, 0, 1]

    def fn(a, m):
        return F.vision.warp_perspective(a, m, (3, 4), mat_idx=idx, border_mode=mode)

    check_grad(fn, x, mats, wrt=(0,))
    # The matrices' gradient against central differences of the float64 reference with small
    # steps: the warp has kinks where a source point crosses a pixel row or column, which float32
    # differences (large steps) would straddle.
    w = rng.normal(size=(3, 2, 3, 4))
    m = mge.Parameter(mats)
    gm = GradManager().attach([m])
    with gm:
        gm.backward((fn(mge.Tensor(x), m) * mge.Tensor(w.astype(np.float32))).sum())
    num = np.zeros((3, 3, 3))
    eps = 1e-6
    for i in np.ndindex(num.shape):
        mp, mm = mats.astype(np.float64), mats.astype(np.float64)
        mp[i] += eps
        mm[i] -= eps
        diff = warp_ref(x, mp, (3, 4), idx, mode) - warp_ref(x, mm, (3, 4), idx, mode)
        num[i] = (w * diff).sum() / (2 * eps)
    np.testing.assert_allclose(m.grad.numpy(), num, rtol=1e-3, atol=1e-3)


def test_warp_affine_grad():
    check_grad(
        lambda a, m: F.vision.warp_affine(a, m, (3, 3), format="NCHW"),
        randn(1, 2, 4, 4),
        random_mats(1)[:, :2, :],
        wrt=(0,),
    )


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("mode", ["replicate", "constant", "reflect"])
def test_warp_perspective_of_byte_images(dtype, mode):
    # MegEngine's 8-bit warps: the float result rounded half away from zero, saturated to the
    # type (the border value is used as given).
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, size=(2, 3, 5, 6)).astype(dtype)
    mats = random_mats(3)
    idx = [1, 0, 1]
    out = F.vision.warp_perspective(x, mats, (4, 5), idx, mode, border_val=300.7)
    assert out.dtype == dtype
    ref = warp_ref(x, mats, (4, 5), idx, mode, 300.7)
    rounded = np.clip(np.sign(ref) * np.floor(np.abs(ref) + 0.5), info.min, info.max)
    # float32 arithmetic may land a value within rounding of .5 on the other side
    clear = np.abs(np.abs(ref) % 1 - 0.5) > 1e-3
    np.testing.assert_array_equal(out.numpy()[clear], rounded[clear])
    assert np.all(np.abs(out.numpy().astype(np.int32) - rounded) <= 1)
    if mode == "constant":
        assert (out.numpy() == info.max).any()  # the border 300.7 saturates


def test_warp_perspective_byte_shift_is_exact():
    x = np.arange(32, dtype=np.uint8).reshape(2, 1, 4, 4)
    shift = np.array([[[1, 0, 1], [0, 1, 1], [0, 0, 1]]], np.float32)
    out = F.vision.warp_perspective(x, np.concatenate([shift] * 2), (2, 2), mat_idx=[1, 0])
    assert out.dtype == np.uint8
    assert out.numpy().tolist() == [[[[21, 22], [25, 26]]], [[[5, 6], [9, 10]]]]


def remap_ref(x, map_xy, mode, scalar, interp):
    """cv2.remap by hand: each output pixel reads the taps around (x, y), folded by ``fold``."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + map_xy.shape[1:3])
    for b in range(n):
        for i in range(map_xy.shape[1]):
            for j in range(map_xy.shape[2]):
                px, py = map_xy[b, i, j].astype(np.float64)
                if interp == "nearest":
                    taps = [(np.floor(px + 0.5), np.floor(py + 0.5), 1.0)]
                else:
                    x0, y0 = np.floor(px), np.floor(py)
                    fx, fy = px - x0, py - y0
                    taps = [
                        (x0, y0, (1 - fx) * (1 - fy)),
                        (x0 + 1, y0, fx * (1 - fy)),
                        (x0, y0 + 1, (1 - fx) * fy),
                        (x0 + 1, y0 + 1, fx * fy),
                    ]
                for tx, ty, wt in taps:
                    fr, fq = fold(int(ty), h, mode), fold(int(tx), w, mode)
                    tap = scalar if fr is None or fq is None else x[b, :, fr, fq]
                    out[b, :, i, j] += wt * tap
    return out


@pytest.mark.parametrize("mode", ["replicate", "constant", "reflect", "reflect_101", "wrap"])
@pytest.mark.parametrize("interp", ["linear", "nearest"])
def test_remap_matches_reference(mode, interp):
    x = randn(2, 3, 5, 6)
    # points inside, on the edges and up to two images away
    map_xy = rng.uniform(-9, 14, size=(2, 4, 7, 2)).astype(np.float32)
    out = F.vision.remap(x, map_xy, border_mode=mode, scalar=2.5, interp_mode=interp)
    ref = remap_ref(x, map_xy, mode, 2.5, interp)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_remap_known_values_exports_and_errors():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    m = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [0.0, 1.0]]], np.float32)[None]
    assert F.vision.remap(x, m).numpy().tolist() == [[[[1.0, 4.0], [4.0, 4.0]]]]
    assert F.remap is F.vision.remap and F.nn.remap is F.vision.remap
    with pytest.raises(ValueError, match="border_mode"):
        F.vision.remap(x, m, border_mode="mirror")
    with pytest.raises(ValueError, match="interp_mode"):
        F.vision.remap(x, m, interp_mode="cubic")
    with pytest.raises(ValueError, match="map_xy"):
        F.vision.remap(x, m[..., :1])


def test_remap_grad():
    x = randn(1, 2, 4, 5)
    # points off the integer grid, where the bilinear weights are smooth
    map_xy = (rng.integers(0, 3, size=(1, 3, 3, 2)) + rng.uniform(0.2, 0.8, (1, 3, 3, 2))).astype(
        np.float32
    )
    check_grad(lambda a, m: F.vision.remap(a, m), x, map_xy, eps=1e-3)


def test_detection_ops_reachable_through_nn_but_not_f():
    # MegEngine's F.nn carries these (the model zoo's detectors call F.nn.nms and
    # F.nn.roi_align) without listing them in __all__, so F itself lacks them.
    for name in ["nms", "roi_align", "roi_pooling", "cvt_color"]:
        assert getattr(F.nn, name) is getattr(F.vision, name)
        assert name not in F.nn.__all__ and not hasattr(F, name)
    boxes = np.array([[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30], [0, 0, 9, 9]], np.float32)
    keep = F.nn.nms(mge.Tensor(boxes), mge.Tensor([0.9, 0.8, 0.7, 0.95]), iou_thresh=0.5)
    assert keep.numpy().tolist() == [3, 2]  # 3 beats 0 (IoU 0.81) and 1 (IoU 0.64)
