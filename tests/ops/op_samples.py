"""The op sample table: per functional operator a few sample calls (argument arrays, fixed
params in the call), the dtypes they must give, and a numpy reference where one is simple; in
the spirit of PyTorch's OpInfo. test_op_samples.py runs every sample eagerly, traced, traced
symbolically, dumped and loaded from Python, and (those marked ``cpp``) in the C++
load_and_run; the other backends' tests iterate the same table."""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import megengine.functional as F


@dataclass(frozen=True)
class OpSample:
    name: str  # "<op>/<variant>"
    fn: Callable  # tensors -> a tensor or a tuple of tensors
    make_inputs: Callable  # numpy Generator -> tuple of arrays
    dtypes: tuple  # the outputs' numpy dtypes
    ref: Callable | None = None  # arrays -> an array or a tuple of arrays
    cpp: bool = False  # also run through load_and_run
    tol: float = 1e-5


def f32(*shape):
    return lambda rng: rng.standard_normal(shape).astype("float32")


def args(*makers):
    return lambda rng: tuple(m(rng) for m in makers)


def positive(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, shape).astype("float32")


def ints(high, *shape):
    return lambda rng: rng.integers(0, high, shape).astype("int32")


def rois(k, batch, h, w):
    """k rois (idx, x1, y1, x2, y2) over a batch of h x w images, some reaching past the edges."""

    def make(rng):
        idx = rng.integers(0, batch, (k, 1))
        x1, y1 = rng.uniform(-1, w - 2, (k, 1)), rng.uniform(-1, h - 2, (k, 1))
        x2, y2 = x1 + rng.uniform(1, w / 2, (k, 1)), y1 + rng.uniform(1, h / 2, (k, 1))
        return np.concatenate([idx, x1, y1, x2, y2], axis=1).astype("float32")

    return make


def points(*shape, lo=-2.0, hi=8.0):
    return lambda rng: rng.uniform(lo, hi, shape).astype("float32")


def boxes(n, spread=30.0, size=15.0):
    """n boxes (x1, y1, x2, y2) with sides up to ``size`` within ``spread``: many overlap."""

    def make(rng):
        xy = rng.uniform(0, spread, (n, 2))
        return np.concatenate([xy, xy + rng.uniform(1, size, (n, 2))], axis=1).astype("float32")

    return make


def _greedy_nms(b, s, thresh, max_output=None):
    """Greedy NMS by IoU in float64 (division where the union is positive), the highest score
    first, of equal scores the later box (MegEngine's descending Argsort)."""
    b = b.astype("float64")
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    keep = []
    for i in sorted(range(len(s)), key=lambda i: (-s[i], -i)):
        if max_output is not None and len(keep) == max_output:
            break
        w = np.clip(np.minimum(b[i, 2], b[keep, 2]) - np.maximum(b[i, 0], b[keep, 0]), 0, None)
        h = np.clip(np.minimum(b[i, 3], b[keep, 3]) - np.maximum(b[i, 1], b[keep, 1]), 0, None)
        inter = w * h
        union = area[i] + area[keep] - inter
        if not np.any((union > 0) & (inter > thresh * union)):
            keep.append(i)
    return np.array(keep, "int32")


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _q8(x, scale):
    """qint8(scale)'s stored integers of float32 x, as MegEngine quantizes (x * float32(1 /
    scale), rounded half away from zero, saturated)."""
    v = x * (np.float32(1) / np.float32(scale))
    return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), -128, 127).astype("int64")


def _qint8_add_relu(a, b):
    # quantized ADD and RELU on the stored integers, wrapping at int8 (MegEngine's)
    s = (_q8(a, 0.02) + _q8(b, 0.02)).astype("int8")
    return np.maximum(s, 0).astype("float32") * np.float32(0.02)


def _qint8_add_relu_fn(a, b):
    from megengine.core.tensor.dtype import qint8

    q = qint8(0.02)
    return F.relu(a.astype(q) + b.astype(q)).astype("float32")


F32, I32, BOOL = np.dtype("float32"), np.dtype("int32"), np.dtype("bool")

# fmt: off
SAMPLES = [
    # elementwise, with broadcasting
    OpSample("add/broadcast", lambda a, b: a + b, args(f32(3, 4), f32(4)), (F32,), np.add, cpp=True),
    OpSample("sub/same", lambda a, b: a - b, args(f32(2, 3), f32(2, 3)), (F32,), np.subtract),
    OpSample("mul/scalar", lambda a: a * 2.5, args(f32(5)), (F32,), lambda a: a * np.float32(2.5)),
    OpSample("div/true", lambda a, b: a / b, args(f32(4), positive(4)), (F32,), np.divide),
    OpSample("maximum", F.maximum, args(f32(3, 3), f32(3, 3)), (F32,), np.maximum),
    OpSample("relu", F.relu, args(f32(2, 5)), (F32,), lambda a: np.maximum(a, 0), cpp=True),
    OpSample("exp", F.exp, args(f32(6)), (F32,), np.exp),
    OpSample("log", F.log, args(positive(6)), (F32,), np.log),
    OpSample("sqrt", F.sqrt, args(positive(2, 3)), (F32,), np.sqrt),
    OpSample("abs", F.abs, args(f32(7)), (F32,), np.abs),
    OpSample("tanh", F.tanh, args(f32(4)), (F32,), np.tanh),
    OpSample("sigmoid", F.sigmoid, args(f32(4)), (F32,), _sigmoid, cpp=True),
    OpSample("clip", lambda a: F.clip(a, -0.5, 0.5), args(f32(8)), (F32,),
             lambda a: np.clip(a, -0.5, 0.5)),
    OpSample("leaky_relu", lambda a: F.leaky_relu(a, 0.1), args(f32(6)), (F32,),
             lambda a: np.where(a > 0, a, np.float32(0.1) * a)),
    OpSample("chain/mixed", lambda a, b: F.exp(-abs(a)) * 3 + F.maximum(a, b) / (1 + b * b),
             args(f32(3, 4), f32(3, 4)), (F32,),
             lambda a, b: np.exp(-abs(a)) * 3 + np.maximum(a, b) / (1 + b * b), cpp=True),
    OpSample("less/bool", lambda a, b: a < b, args(f32(5), f32(5)), (BOOL,), np.less, cpp=True),
    OpSample("add/int32", lambda a, b: a + b, args(ints(9, 4), ints(9, 4)), (I32,), np.add),
    OpSample("add_relu/qint8", _qint8_add_relu_fn, args(f32(3, 4), f32(3, 4)), (F32,),
             _qint8_add_relu, cpp=True),
    OpSample("astype/int32", lambda a: (a * 4).astype("int32"), args(f32(6)), (I32,),
             lambda a: (a * 4).astype("int32")),
    # reductions and indexing
    OpSample("sum/axis", lambda a: a.sum(axis=1), args(f32(3, 5)), (F32,), lambda a: a.sum(1)),
    OpSample("mean/all", F.mean, args(f32(4, 4)), (F32,), lambda a: a.mean(), cpp=True),
    OpSample("max/keepdims", lambda a: a.max(axis=0, keepdims=True), args(f32(3, 5)), (F32,),
             lambda a: a.max(0, keepdims=True)),
    OpSample("argmax", lambda a: F.argmax(a, axis=1), args(f32(4, 7)), (I32,),
             lambda a: a.argmax(1).astype("int32"), cpp=True),
    OpSample("softmax", lambda a: F.softmax(a, axis=1), args(f32(3, 6)), (F32,),
             lambda a: _softmax(a, 1), cpp=True),
    # shapes
    OpSample("reshape_transpose", lambda a: F.transpose(a.reshape(2, 3, 4), (2, 0, 1)),
             args(f32(6, 4)), (F32,), lambda a: np.transpose(a.reshape(2, 3, 4), (2, 0, 1))),
    OpSample("flatten", lambda a: F.flatten(a, 1), args(f32(2, 3, 4)), (F32,),
             lambda a: a.reshape(2, 12), cpp=True),
    OpSample("concat", lambda a, b: F.concat([a, b], axis=1), args(f32(2, 3), f32(2, 2)),
             (F32,), lambda a, b: np.concatenate([a, b], 1), cpp=True),
    OpSample("broadcast_to", lambda a: F.broadcast_to(a, (3, 4)), args(f32(1, 4)), (F32,),
             lambda a: np.broadcast_to(a, (3, 4))),
    # data-dependent shapes: the two input sets take different numbers of elements
    OpSample("cond_take", lambda a: F.cond_take(a > 0, a * 2), args(f32(3, 4)), (F32, I32),
             lambda a: ((a * 2)[a > 0], np.flatnonzero(a > 0)), cpp=True),
    OpSample("non_zero", lambda a: F.non_zero(a > 0), args(f32(2, 5)), (I32,),
             lambda a: np.argwhere(a > 0), cpp=True),
    OpSample("nms", lambda b, s: F.vision.nms(b, s, 0.4, max_output=12), args(boxes(30), f32(30)),
             (I32,), lambda b, s: _greedy_nms(b, s, 0.4, 12), cpp=True),
    OpSample("nms/all", lambda b, s: F.vision.nms(b, s, 0.25), args(boxes(20), f32(20)), (I32,),
             lambda b, s: _greedy_nms(b, s, 0.25)),
    OpSample("two_outputs", lambda a: (a + 1, a * a), args(f32(3)), (F32, F32),
             lambda a: (a + 1, a * a), cpp=True),
    # linear algebra and neural-network ops
    OpSample("matmul", F.matmul, args(f32(4, 3), f32(3, 5)), (F32,), np.matmul, cpp=True),
    OpSample("matmul/batched", F.matmul, args(f32(2, 4, 3), f32(2, 3, 5)), (F32,), np.matmul),
    OpSample("linear", F.nn.linear, args(f32(6, 4), f32(3, 4), f32(3)), (F32,),
             lambda x, w, b: x @ w.T + b, cpp=True),
    OpSample("conv2d/stride_pad", lambda x, w: F.conv2d(x, w, stride=2, padding=1),
             args(f32(2, 3, 7, 7), f32(4, 3, 3, 3)), (F32,), cpp=True, tol=1e-4),
    OpSample("conv2d/bias_relu", lambda x, w, b: F.relu(F.conv2d(x, w, b)),
             args(f32(1, 2, 5, 5), f32(3, 2, 3, 3), f32(1, 3, 1, 1)), (F32,), tol=1e-4),
    OpSample("deformable_conv2d", lambda x, w, o, m: F.nn.deformable_conv2d(x, w, o, m, padding=1),
             args(f32(1, 2, 5, 5), f32(3, 2, 3, 3), f32(1, 18, 5, 5), positive(1, 9, 5, 5)), (F32,),
             cpp=True, tol=1e-4),
    OpSample("region_restricted_conv",
             lambda x, w, ri, ro: F.nn.region_restricted_conv(x, w, ri, ro, padding=1, groups=2),
             args(f32(1, 4, 5, 5), f32(2, 1, 2, 3, 3), ints(3, 1, 5, 5), ints(3, 1, 5, 5)), (F32,),
             cpp=True, tol=1e-4),
    OpSample("max_pool2d", lambda x: F.max_pool2d(x, 2), args(f32(2, 3, 6, 6)), (F32,),
             lambda x: x.reshape(2, 3, 3, 2, 3, 2).max((3, 5)), cpp=True),
    OpSample("avg_pool2d", lambda x: F.avg_pool2d(x, 2), args(f32(1, 2, 4, 4)), (F32,),
             lambda x: x.reshape(1, 2, 2, 2, 2, 2).mean((3, 5))),
    OpSample("batch_norm/eval", lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False),
             args(f32(2, 3, 4, 4), f32(1, 3, 1, 1), positive(1, 3, 1, 1), f32(1, 3, 1, 1),
                  f32(1, 3, 1, 1)), (F32,),
             lambda x, m, v, w, b: (x - m) / np.sqrt(v + 1e-5) * w + b, cpp=True, tol=1e-4),
    # vision: rois and points from the inputs
    OpSample("roi_align", lambda x, r: F.vision.roi_align(x, r, (2, 3), mode="max"),
             args(f32(2, 3, 7, 6), rois(4, 2, 7, 6)), (F32,), cpp=True),
    OpSample("roi_pooling", lambda x, r: F.vision.roi_pooling(x, r, 2, mode="average"),
             args(f32(2, 3, 7, 6), rois(3, 2, 7, 6)), (F32,), cpp=True),
    OpSample("remap", lambda x, m: F.vision.remap(x, m, "reflect"),
             args(f32(2, 3, 5, 6), points(2, 4, 3, 2)), (F32,), cpp=True),
    OpSample("correlation", lambda a, b: F.vision.correlation(a, b, 3, 2, 1, 1, 2),
             args(f32(2, 3, 6, 7), f32(2, 3, 6, 7)), (F32,), cpp=True),
    OpSample("correlation/abs_strided",
             lambda a, b: F.vision.correlation(a, b, 1, 2, 2, 2, 1, is_multiply=False),
             args(f32(1, 2, 7, 5), f32(1, 2, 7, 5)), (F32,)),
    OpSample("deformable_psroi_pooling",
             lambda x, r, t: F.deformable_psroi_pooling(x, r, t, False, 3, 3, 3, 2, 0.8),
             args(f32(2, 4, 7, 6), rois(4, 2, 7, 6), f32(4, 2, 3, 3)), (F32,), cpp=True),
]
# fmt: on

assert len({s.name for s in SAMPLES}) == len(SAMPLES), "sample names must be unique"
