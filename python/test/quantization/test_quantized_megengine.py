"""The deployment step against MegEngine 1.13: the network of
``fixtures/make_quantized_fixtures.py`` from the same weights, calibrated on the same batches and
converted by ``quantize``, gives MegEngine's quantized weights, dtypes (scales to float32
precision) and integer outputs (``fixtures/megengine_1_13/quantized.npz``).

Each module is also run alone on MegEngine's own inputs to it, so that a difference is found
where it arises. Measured: every module's integers equal MegEngine's exactly, and so does the
network's output; the tests allow one quantisation step only where a rounding tie could fall
either way (the float32 product of scales), which this fixture does not hit."""

import json
import os
import sys

import numpy as np
import pytest

import megengine as mge
from megengine.core.tensor import dtype as D
from megengine.quantization import quantize

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import quantization_cases as cases

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "megengine_1_13")
DATA = np.load(os.path.join(HERE, "quantized.npz"))
with open(os.path.join(HERE, "quantized.json")) as f:
    META = json.load(f)["modules"]


def _dtype(info):
    if "name" not in info:
        return np.dtype(info["numpy"])
    if "zero_point" in info:
        return D.quint8(info["scale"], info["zero_point"])
    return {"QuantizedS8": D.qint8, "QuantizedS32": D.qint32}[info["name"]](info["scale"])


@pytest.fixture(scope="module")
def qnet():
    init = {k[len("init/") :]: DATA[k] for k in DATA.files if k.startswith("init/")}
    net = cases.calibrated_net(init, [DATA[f"calib{i}"] for i in range(3)])
    qat_eval = net(mge.Tensor(DATA["x"])).numpy()
    np.testing.assert_allclose(qat_eval, DATA["qat_eval"], rtol=1e-5, atol=1e-6)
    net = quantize(net)
    net.eval()
    return net


def test_weights_and_dtypes_match(qnet):
    for name, info in META.items():
        module = getattr(qnet, name)
        assert type(module).__name__ == info["class"]
        if "weight_dtype" in info:
            want = _dtype(info["weight_dtype"])
            assert D.is_quantize(module.weight.dtype)
            np.testing.assert_allclose(
                D.get_scale(module.weight.dtype), D.get_scale(want), rtol=1e-6
            )
            np.testing.assert_array_equal(module.weight.numpy(), DATA[f"{name}/weight"])
            np.testing.assert_allclose(module.bias.numpy(), DATA[f"{name}/bias"], rtol=1e-5)
        out = info["out_dtype"]
        if "scale" in out:
            np.testing.assert_allclose(D.get_scale(module.output_dtype), out["scale"], rtol=1e-6)


@pytest.mark.parametrize("name", sorted(META))
def test_each_module_on_megengine_inputs(qnet, name):
    info = META[name]
    inputs = [
        mge.Tensor(DATA[f"{name}/in{i}"].astype(_dtype(d))) for i, d in enumerate(info["in_dtypes"])
    ]
    module = getattr(qnet, name)
    out = module(inputs, axis=1) if name == "cat" else module(*inputs)
    want = DATA[f"{name}/out"]
    assert D.is_dtype_equal(out.dtype, _dtype(info["out_dtype"])) or np.isclose(
        D.get_scale(out.dtype), info["out_dtype"]["scale"], rtol=1e-6
    )
    got = out.numpy()
    if D.is_quantize(out.dtype):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_network_output_matches(qnet):
    got = qnet(mge.Tensor(DATA["x"])).numpy()
    np.testing.assert_allclose(got, DATA["quantized"], rtol=1e-6, atol=1e-7)


def test_traced_and_dumped_network_matches_eager(qnet):
    import io

    from megengine.jit import trace
    from megengine.utils.comp_graph_tools import GraphInference

    x = DATA["x"]
    eager = qnet(mge.Tensor(x)).numpy()
    f = trace(lambda t: qnet(t), capture_as_const=True)
    np.testing.assert_array_equal(f(mge.Tensor(x)).numpy(), eager)
    np.testing.assert_array_equal(f(mge.Tensor(x)).numpy(), eager)  # the compiled graph
    buf = io.BytesIO()
    f.dump(buf, arg_names=["data"], output_names="out")
    out = GraphInference(buf.getvalue()).run(x)["out"]
    np.testing.assert_array_equal(out, eager)
