"""NeoMeg's Network on a model the real MegEngine 1.13 dumped
(src/test/fixtures/mge/conv_bn_relu.noopt.mge) does what MegEngine's own Network did with it:
the facts and outputs in fixtures/megengine_1_13/network.{json,npz}, written under MegEngine by
fixtures/make_network_fixtures.py."""

import io
import json
from pathlib import Path

import numpy as np
import pytest

import megengine.functional as F
import megengine.utils.network_node as N
from megengine.utils.comp_graph_tools import GraphInference
from megengine.utils.network import Network

HERE = Path(__file__).resolve().parent
MODEL = HERE.parents[2] / "src" / "test" / "fixtures" / "mge" / "conv_bn_relu.noopt.mge"
FIXTURES = HERE.parent / "fixtures" / "megengine_1_13"
CLASSES = ["Host2DeviceCopy", "ConvolutionForward", "BatchNormForward", "PoolingForward"]


@pytest.fixture(scope="module")
def want():
    facts = json.loads((FIXTURES / "network.json").read_text())
    return facts, np.load(FIXTURES / "network.npz")


def dumped_outputs(net, *inputs):
    buf = io.BytesIO()
    net.dump(buf, optimize_for_inference=False)
    return GraphInference(buf.getvalue()).run(*inputs)


def first_relu(net):
    return next(o for o in net.opr_filter.type(N.Elemwise) if o.params["mode"] == "RELU")


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_loaded_network_has_megengines_inputs_outputs_and_ops(want):
    facts, arrays = want
    net = Network.load(str(MODEL))
    inputs = [[v.name, list(v.shape), str(v.dtype)] for v in net.input_vars]
    assert inputs == facts["inputs"]
    assert [[v.name, list(v.shape)] for v in net.output_vars] == facts["outputs"]
    for cls in CLASSES:
        assert net.opr_filter.type(getattr(N, cls)).as_count() == facts["counts"][cls], cls
    # The named parameters are MegEngine's (its shape constants, named const<..>, are folded
    # into host values by the import).
    names = {o.name for o in net.params_filter}
    named = {n for n in facts["params"] if not n.startswith("const<")}
    assert named <= names
    close(dumped_outputs(net, arrays["in_b2"])["out"], arrays["original"])


def test_reset_batch_size_as_megengine(want):
    facts, arrays = want
    net = Network.load(str(MODEL))
    net.reset_batch_size(4)
    assert list(net.output_vars[0].shape) == facts["reset_batch_output_shape"]
    close(dumped_outputs(net, arrays["in_b4"])["out"], arrays["reset_batch"])


def test_add_output_as_megengine(want):
    _, arrays = want
    net = Network.load(str(MODEL))
    relu = first_relu(net).outputs[0]
    relu.name = "relu1"
    net.add_output(relu)
    out = dumped_outputs(net, arrays["in_b2"])
    close(out["out"], arrays["add_output"])
    close(out["relu1"], arrays["add_output_relu1"])


def test_replace_var_as_megengine(want):
    _, arrays = want
    net = Network.load(str(MODEL))
    conv = net.get_opr_by_type(N.ConvolutionForward, unique=False)[0].outputs[0]
    net.replace_vars({first_relu(net).outputs[0]: F.relu(conv) * 0.5})
    close(dumped_outputs(net, arrays["in_b2"])["out"], arrays["replace_var"])


def test_set_value_as_megengine(want):
    _, arrays = want
    net = Network.load(str(MODEL))
    bias = net.params_filter.name("fc.bias").as_unique()
    bias.set_value(np.ones(bias.shape, "float32"))
    close(dumped_outputs(net, arrays["in_b2"])["out"], arrays["set_value"])


def test_modify_opr_names_as_megengine(want):
    facts, _ = want
    net = Network.load(str(MODEL))
    net.modify_opr_names("net")
    buf = io.BytesIO()
    net.dump(buf, optimize_for_inference=False)
    again = Network.load(buf.getvalue())
    assert [o.name for o in again.data_providers_filter] == facts["renamed_inputs"]


ALL_MODELS = ["linear", "conv_bn_relu", "resnet_tiny", "shapes", "elemwise", "reduce", "pooling"]
ALL_MODELS += ["typecvt", "extras", "resample"]


@pytest.mark.parametrize("variant", ["", ".noopt"])
@pytest.mark.parametrize("name", ALL_MODELS)
def test_every_megengine_fixture_survives_load_and_dump(name, variant):
    # Loaded and dumped unedited (optimized, as Network.dump's default), each MegEngine model
    # still gives the outputs MegEngine's GraphInference gave on the saved inputs.
    ref = np.load(MODEL.parent / f"{name}.npz")
    inputs = {k[3:]: ref[k] for k in ref.files if k.startswith("in_")}
    net = Network.load(str(MODEL.parent / f"{name}{variant}.mge"))
    buf = io.BytesIO()
    net.dump(buf)
    out = GraphInference(buf.getvalue()).run(inp_dict=inputs)
    assert set(out) == {k[4:] for k in ref.files if k.startswith("out_")}
    for k, v in out.items():
        close(v, ref[f"out_{k}"])
