"""NeoMeg against what MegEngine 1.13 itself returned for ~500 calls of its public API
(``fixtures/agreement_cases.py``; values written by ``fixtures/make_agreement_fixture.py`` under
the real MegEngine): the same dtypes, shapes, container types and values, and an error where
MegEngine raises one. Where NeoMeg differs on purpose, ``DIFFERENCES`` says why, and the case
checks that it still differs (strict xfail), so a difference cannot be fixed or introduced
silently."""

import importlib.util
import json
import os

import numpy as np
import pytest

import megengine as mge

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
_spec = importlib.util.spec_from_file_location(
    "agreement_cases", os.path.join(FIXTURES, "agreement_cases.py")
)
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

with open(os.path.join(FIXTURES, "megengine_1_13", "agreement.json")) as _f:
    META = json.load(_f)
VALUES = np.load(os.path.join(FIXTURES, "megengine_1_13", "agreement.npz"))
CASES = cases.all_cases(mge)

# case -> why NeoMeg's result differs from MegEngine 1.13's.
DIFFERENCES = {
    # NeoMeg accepts more
    "elementwise.sigmoid_i": "MegEngine rejects integer input; NeoMeg computes in float32",
    "elementwise.silu_i": "MegEngine rejects integer input; NeoMeg computes in float32",
    "elementwise.gelu_i": "MegEngine rejects integer input; NeoMeg computes in float32",
    "elementwise.hswish_i": "MegEngine rejects integer input; NeoMeg computes in float32",
    "reduce.norm_no_axis": "MegEngine requires an axis unless the input is a vector; NeoMeg "
    "takes the norm of all elements (numpy.linalg.norm of the flattened tensor)",
    "reduce.normalize_no_axis": "as norm_no_axis",
    "linalg.svd_values_only": "MegEngine 1.13's compute_uv=False fails unpacking its own result",
    "optim.lamb": "MegEngine 1.13's LAMB fails in Optimizer._add_state(dtype=...)",
    # MegEngine bugs NeoMeg does not reproduce
    "reduce.norm_inf": "MegEngine ignores axis for ord=inf and returns the global maximum",
    "vision.roi_align_adaptive_samples": "MegEngine returns zeros for sample_points=0; NeoMeg "
    "samples ceil(bin size) points per bin as torchvision's aligned ROIAlign",
    "vision.warp_affine": "MegEngine interpolates in fixed point (differences up to 4e-2)",
    "transform.pad_scalar_value": "MegEngine (through OpenCV) fills only the first channel with "
    "a scalar value and zeros the others; NeoMeg fills every channel",
    "reduce.topk_no_sort": "the order of no_sort results is unspecified; MegEngine's differs",
    "dtype.where_python_scalars": "MegEngine requires tensors; NeoMeg takes Python scalars",
    "dtype.matmul_int": "MegEngine has no integer matmul; NeoMeg computes it in int32",
    "dtype.tensor_numpy_uint16": "NeoMeg has no uint16 dtype; such arrays become int32",
    "dtype.astype_int8_out_of_range": "MegEngine converts through int32 and wraps (200 -> -56, "
    "as numpy on x86); NeoMeg saturates (127)",
    "dtype.astype_uint8_out_of_range": "MegEngine wraps (300 -> 44, -1 -> 255); NeoMeg saturates",
    "dtype.astype_int32_non_finite": "MegEngine gives INT32_MIN for NaN and inf (x86's cvttss2si); "
    "NeoMeg gives 0 for NaN and saturates inf",
    # MegEngine leaves fmod's divisor without a gradient; PyTorch and NeoMeg give -trunc(a/b) * dy
    "grad.grad_mod": "MegEngine: no gradient (None) for the divisor; NeoMeg: fmod's derivative",
}


def _compare(name):
    want = META[name]
    try:
        container, got = cases.to_arrays(CASES[name]())
    except Exception as e:
        if "error" in want:
            return  # both raise; the error types may differ (MegEngine's are RuntimeErrors)
        raise AssertionError(f"{name}: NeoMeg raised {type(e).__name__}: {e}") from e
    assert "error" not in want, f"{name}: MegEngine raises {want['error']}, NeoMeg returned"
    assert container == want["container"], (container, want["container"])
    assert [str(a.dtype) for a in got] == want["dtypes"]
    assert [list(a.shape) for a in got] == want["shapes"]
    for i, a in enumerate(got):
        ref = VALUES[f"{name}/{i}"]
        if a.dtype.kind == "f":
            # float16 results carry 11 significant bits
            rtol = 2e-3 if a.dtype == np.float16 else 1e-4
            np.testing.assert_allclose(a, ref, rtol=rtol, atol=1e-5, err_msg=f"{name}[{i}]")
        else:
            np.testing.assert_array_equal(a, ref, err_msg=f"{name}[{i}]")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=DIFFERENCES[n]))
        if n in DIFFERENCES
        else n
        for n in sorted(META)
    ],
)
def test_agrees_with_megengine(name):
    _compare(name)


def test_fixture_and_cases_name_the_same_calls():
    assert sorted(CASES) == sorted(META)
    assert set(DIFFERENCES) <= set(META)
