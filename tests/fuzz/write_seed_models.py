"""Writes the seed corpus of the model loader's fuzzer (scripts/fuzz.sh): small models dumped by
``megengine.jit.trace``, each exercising a different part of the loader.

    python3 tests/fuzz/write_seed_models.py DIR
"""

import io
import sys
from pathlib import Path

import numpy as np

import megengine as mge
import megengine.functional as F
from megengine.jit import trace


def _dump(fn, args, path, **kwargs):
    f = trace(fn, capture_as_const=True)
    f(*[mge.Tensor(a) for a in args])
    buf = io.BytesIO()
    f.dump(buf, **kwargs)
    path.write_bytes(buf.getvalue())


def main(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    w = mge.Tensor(rng.standard_normal((2, 1, 3, 3)).astype("float32"))
    fc = mge.Tensor(rng.standard_normal((8, 3)).astype("float32"))

    # Convolution, a batch that the reshape reads from the input (GetVarShape, Concat,
    # ReshapeTo), a matrix product and softmax: a dynamic batch.
    def cnn(x):
        y = F.relu(F.conv2d(x, w))
        return F.softmax(y.reshape(y.shape[0], -1) @ fc, axis=1)

    x = rng.standard_normal((2, 1, 4, 4)).astype("float32")
    _dump(cnn, [x], out / "cnn.nmeg", arg_names=["x"], input_shapes={"x": (-1, 1, 4, 4)})

    # A shape that depends on data (CondTake, TakePrefix), a reduction and int32 arithmetic.
    def select(x, k):
        v, i = F.cond_take(x > 0, x)
        return v.sum() * 2, i + k

    x = rng.standard_normal((3, 4)).astype("float32")
    _dump(select, [x, np.array([1], "int32")], out / "cond_take.nmeg", arg_names=["x", "k"])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: write_seed_models.py DIR")
    main(sys.argv[1])
