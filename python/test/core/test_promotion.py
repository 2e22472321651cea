"""The dtype of ``x + operand`` against what MegEngine 1.13 gave for the same pair
(``fixtures/megengine_1_13/promotion.json``, written by ``fixtures/make_promotion_fixture.py``):
every pair of a tensor dtype with a Python scalar, NumPy scalar or array, list or tensor, from
either side. Where MegEngine 1.13 raises, NeoMeg computes (core/tensor/dtype.py says so); those
pairs are checked against the rule NeoMeg documents for them, so neither kind of pair can change
silently."""

import importlib.util
import json
import os

import pytest

import megengine as mge

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")
_spec = importlib.util.spec_from_file_location(
    "promotion_cases", os.path.join(FIXTURES, "promotion_cases.py")
)
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

with open(os.path.join(FIXTURES, "megengine_1_13", "promotion.json")) as _f:
    MEGENGINE = json.load(_f)

_SIGNED = ("int8", "int16", "int32")
# NumPy operands MegEngine 1.13 rejects and NeoMeg takes in the narrower type.
_NARROWED = {"np.float64": "np.float32", "np.int64": "np.int32"}


def _operand_dtype(name):
    return name.split(".", 1)[1] if "." in name else None


def neomeg_extension(dtype, operand, side):
    """NeoMeg's documented result for a pair MegEngine 1.13 raises on."""
    if operand in _NARROWED:
        narrowed = MEGENGINE[f"{dtype}|{_NARROWED[operand]}|{side}"]
        if narrowed != "error":
            return narrowed
        operand = _NARROWED[operand]
    if operand in ("[1]", "[1.5]"):
        # a list takes the tensor's dtype; with a bool tensor a number gives float32
        return "float32" if dtype == "bool" else dtype
    other = _operand_dtype(operand)
    if "uint8" in (dtype, other) and (dtype in _SIGNED or other in _SIGNED):
        # uint8 with a signed integer: the signed type wide enough for both
        signed = dtype if dtype in _SIGNED else other
        return "int16" if signed == "int8" else signed
    raise AssertionError(f"no NeoMeg rule documented for {dtype} + {operand}")


PAIRS = sorted(MEGENGINE)


@pytest.fixture(scope="module")
def neomeg():
    return cases.results(mge)


def test_fixture_covers_every_pair(neomeg):
    assert sorted(neomeg) == PAIRS


@pytest.mark.parametrize("pair", PAIRS)
def test_result_dtype_as_megengine(neomeg, pair):
    dtype, operand, side = pair.split("|")
    expected = MEGENGINE[pair]
    if expected == "error" and neomeg[pair] != "error":
        expected = neomeg_extension(dtype, operand, side)
    assert neomeg[pair] == expected, f"{dtype} tensor + {operand} ({side})"


def test_values_follow_the_dtype():
    import numpy as np

    x = mge.tensor([1, 2], dtype="int8")
    np.testing.assert_array_equal((x + [1.5, 2.5]).numpy(), np.array([2, 4], "int8"))
    h = mge.tensor([1, 2], dtype="float16")
    y = h + np.float32(0.1)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), np.float32(np.float16(1)) + np.float32([0.1, 1.1]))
