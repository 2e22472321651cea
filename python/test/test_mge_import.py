"""Models that the real MegEngine 1.13 traced and dumped (src/test/fixtures/mge/*.mge, written by
make_mge_models.py there) run under ``GraphInference`` and ``load_graph`` and give MegEngine's
outputs on the saved inputs; damaged files raise ``ModelError``."""

import pathlib

import numpy as np
import pytest

from megengine.core.tensor.megbrain_graph import load_graph
from megengine.utils import comp_graph_tools as cgtools

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "src" / "test" / "fixtures" / "mge"
MODELS = [
    "linear",
    "conv_bn_relu",
    "resnet_tiny",
    "shapes",
    "elemwise",
    "reduce",
    "pooling",
    "typecvt",
    "extras",
    "resample",
    "deconv",
    "conv_bias_bn",
    "topk",
    "roi",
    "prefix",
    "nms",
]


QUANTIZED = ["quant_cnn", "quant_asymm"]


def saved(name):
    data = np.load(FIXTURES / f"{name}.npz")
    inputs = {k[3:]: data[k] for k in data.files if k.startswith("in_")}
    outputs = {k[4:]: data[k] for k in data.files if k.startswith("out_")}
    return inputs, outputs


def saved_qdtypes(name):
    """MegEngine's quantized outputs' [scale, zero point] (float32), by output name."""
    data = np.load(FIXTURES / f"{name}.npz")
    return {k[7:]: data[k] for k in data.files if k.startswith("qdtype_")}


@pytest.mark.parametrize(
    ("name", "variant"),
    [(m, v) for m in MODELS for v in ("", ".noopt")]
    + [("extras", ".fuse")]
    # F.linspace's Linspace operator, written by an eager trace (make_mge_models.py says why)
    + [("generators", "")],
)
def test_graph_inference_gives_megengines_outputs(name, variant):
    inputs, want = saved(name)
    net = cgtools.GraphInference(str(FIXTURES / f"{name}{variant}.mge"))
    assert sorted(net.input_names) == sorted(inputs)
    got = net.run(inp_dict=inputs)
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        assert got[k].dtype == v.dtype, k
        np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-6, err_msg=k)


def test_broadcast_shape_follows_a_new_input_shape():
    # conv_bias_bn.mge's bias broadcast reads GetVarShape(conv output, bias): computed from the
    # inputs' shapes, it follows another batch and image size, where the unoptimized dump (no
    # GetVarShape) is the reference.
    x = np.random.RandomState(0).standard_normal((5, 3, 12, 10)).astype("float32")
    got = cgtools.GraphInference(str(FIXTURES / "conv_bias_bn.mge")).run(inp_dict={"data": x})
    want = cgtools.GraphInference(str(FIXTURES / "conv_bias_bn.noopt.mge")).run(
        inp_dict={"data": x}
    )
    assert got["out"].shape == (5, 4, 6, 5)
    np.testing.assert_allclose(got["out"], want["out"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("variant", ["", ".noopt"])
@pytest.mark.parametrize("lead", [[1, 2, 3, 4, 5, 6, 7], [-1, -2, 3, -4, -5], [-1, -1, -1]])
def test_slice_end_computed_from_the_data_follows_it(variant, lead):
    # prefix.mge: x[:n] * 2 and x[:n - 4] + 1, n the rows whose first value is positive, as
    # NumPy slices them when the model runs.
    x = np.stack([lead, np.arange(len(lead)) * 0.5, np.arange(len(lead)) * -0.25], 1)
    x = x.astype("float32")
    n = int((x[:, 0] > 0).sum())
    got = cgtools.GraphInference(str(FIXTURES / f"prefix{variant}.mge")).run(inp_dict={"x": x})
    np.testing.assert_array_equal(got["head"], x[:n] * 2)
    np.testing.assert_array_equal(got["head_neg"], x[: n - 4] + 1)


@pytest.mark.parametrize("variant", ["", ".noopt"])
def test_roi_count_follows_the_rois_input(variant):
    # A detector's proposal count varies per image: each output row of roi_align and roi_pooling
    # reads its roi alone, so the leading rois give MegEngine's leading rows.
    inputs, want = saved("roi")
    net = cgtools.GraphInference(str(FIXTURES / f"roi{variant}.mge"))
    for k in (3, 1):
        got = net.run(inp_dict={"x": inputs["x"], "rois": inputs["rois"][:k]})
        for name, v in want.items():
            assert got[name].shape == (k,) + v.shape[1:], name
            np.testing.assert_allclose(got[name], v[:k], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize(
    ("name", "variant"),
    [(m, v) for m in QUANTIZED for v in ("", ".noopt")] + [("quant_cnn", ".fuse")],
)
def test_quantized_models_give_megengines_integers(name, variant):
    inputs, want = saved(name)
    qdtypes = saved_qdtypes(name)
    assert qdtypes  # each of these models has quantized outputs
    got = cgtools.GraphInference(str(FIXTURES / f"{name}{variant}.mge")).run(inp_dict=inputs)
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        assert got[k].dtype == v.dtype, k
        if k in qdtypes:
            info = got[k].dtype.metadata["mgb_dtype"]
            scale, zero_point = qdtypes[k]
            assert np.float32(info["scale"]) == scale, k
            assert info.get("zero_point", 0) == zero_point, k
            assert info["name"] == ("QuantizedS8" if v.dtype == np.int8 else "Quantized8Asymm")
            np.testing.assert_array_equal(got[k], v, err_msg=k)
        else:  # after DequantStub: the integers times the scale, as MegEngine's
            np.testing.assert_allclose(got[k], v, rtol=1e-6, atol=0, err_msg=k)


@pytest.mark.parametrize("name", QUANTIZED)
def test_network_edits_and_redumps_a_quantized_model(name):
    # megengine.utils.network reads the quantized vars' dtypes (with their scales) and the
    # TypeCvt params, and the model it dumps again gives MegEngine's integers.
    import io

    from megengine.utils.network import Network

    net = Network.load(str(FIXTURES / f"{name}.mge"))
    metas = [v.dtype.metadata for v in net.all_vars if v.dtype is not None]
    assert any(m and m["mgb_dtype"]["name"].startswith("Quantized") for m in metas)
    buf = io.BytesIO()
    net.dump(buf)
    inputs, want = saved(name)
    got = cgtools.GraphInference(buf.getvalue()).run(inp_dict=inputs)
    for k, v in want.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)


def test_load_graph_gives_quantized_output_dtypes():
    ret = load_graph(str(FIXTURES / "quant_asymm.mge"))
    dt = ret.output_vars_dict["sum"].dtype
    assert dt == np.uint8
    assert dt.metadata["mgb_dtype"]["name"] == "Quantized8Asymm"
    assert dt.metadata["mgb_dtype"]["zero_point"] == saved_qdtypes("quant_asymm")["sum"][1]
    assert ret.output_vars_dict["out"].dtype == np.float32


def test_asymmetric_weights_are_refused_with_a_message():
    with pytest.raises(cgtools.ModelError, match=r"filter dtype Quantized8Asymm\("):
        cgtools.GraphInference(str(FIXTURES / "quant_asymm_conv.mge"))


def test_load_graph_describes_and_runs_a_megengine_model():
    inputs, want = saved("resnet_tiny")
    with open(FIXTURES / "resnet_tiny.mge", "rb") as f:
        ret = load_graph(f)
    assert [v.name for v in ret.output_vars_list] == ["out"]
    assert ret.output_vars_dict["out"].shape == (2, 10)
    assert ret.output_vars_dict["out"].dtype == np.float32
    assert ret.metadata["producer"].startswith("MegEngine")
    got = ret.graph.run(inputs)
    np.testing.assert_allclose(got["out"], want["out"], rtol=1e-5, atol=1e-6)
    # A path works too, and another batch size: a MegEngine graph's inputs are all free.
    g = load_graph(str(FIXTURES / "resnet_tiny.mge")).graph
    assert g.run({"data": np.zeros((3, 3, 32, 32), "float32")})["out"].shape == (3, 10)
    with pytest.raises(ValueError, match="takes inputs"):
        g.run({"nope": np.zeros(1)})


def test_older_fbs_format_is_refused_with_a_message():
    with pytest.raises(cgtools.ModelError, match="dump_format"):
        cgtools.GraphInference(str(FIXTURES / "linear.fbs1.mge"))


def test_truncated_and_corrupted_files_raise_model_error():
    good = (FIXTURES / "conv_bn_relu.mge").read_bytes()
    for n in range(0, len(good), 37):
        with pytest.raises(cgtools.ModelError):
            cgtools.GraphInference(good[:n])
    rng = np.random.RandomState(0)
    for pos in rng.randint(0, len(good), 200):
        bad = bytearray(good)
        bad[pos] ^= 0xFF
        try:
            cgtools.GraphInference(bytes(bad))
        except (cgtools.ModelError, ValueError, RuntimeError):
            pass  # damage found; a byte of a weight leaves a valid model
