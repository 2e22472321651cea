"""A traced (and a dumped) convolution followed by an inference-mode BatchNorm: on x86 the graph
runs the BatchNorm as a fused elementwise chain on the convolution's blocked output, reading
per-channel operands blocked once. Its replays must give eager mode's values (a workspace sized
for dense operands let the broadcast operands' copies overrun it: zeros, or a corrupted heap)."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.jit import trace
from megengine.utils.comp_graph_tools import GraphInference


@pytest.mark.parametrize("size,channels", [(64, 8), (112, 8), (40, 64)])
def test_traced_and_dumped_conv_bn_match_eager(tmp_path, size, channels):
    rng = np.random.default_rng(0)
    conv = M.Conv2d(3, channels, 3, 1, 1, bias=False)
    bn = M.BatchNorm2d(channels)
    bn.running_mean[...] = mge.tensor(rng.standard_normal((1, channels, 1, 1)).astype("float32"))
    bn.running_var[...] = mge.tensor(rng.uniform(0.5, 2, (1, channels, 1, 1)).astype("float32"))
    bn.eval()
    x = rng.standard_normal((2, 3, size, size)).astype("float32")

    def fn(x):
        return F.relu(bn(conv(x)))

    expected = fn(mge.tensor(x)).numpy()
    f = trace(fn, symbolic=True, capture_as_const=True)
    for _ in range(3):  # records, then replays the compiled graph
        np.testing.assert_allclose(f(mge.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-5)
    path = str(tmp_path / "conv_bn.nmeg")
    f.dump(path, arg_names=["x"], optimize_for_inference=False)
    (out,) = GraphInference(path).run(inp_dict={"x": x}).values()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
