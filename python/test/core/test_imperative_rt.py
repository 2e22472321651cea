"""The C++ extension's thin path: Tensor <-> numpy, generated op classes, apply, error mapping."""

import numpy as np
import pytest

from megengine.core import _imperative_rt as rt


def test_tensor_round_trip_and_megengine_narrowing():
    a = np.arange(6.0).reshape(2, 3)  # float64 becomes float32, as in MegEngine
    t = rt.Tensor(a)
    assert t.shape == (2, 3)
    assert t.dtype == np.float32
    assert t.ndim == 2 and t.size == 6
    np.testing.assert_array_equal(t.numpy(), a.astype(np.float32))
    assert rt.Tensor(np.arange(3, dtype=np.int64)).dtype == np.int32
    assert rt.Tensor(True).dtype == np.bool_
    assert rt.Tensor(np.ones(2, np.uint8)).dtype == np.uint8
    assert rt.Tensor(3.5).shape == ()
    assert rt.Tensor(np.zeros((0, 4))).shape == (0, 4)


def test_tensor_from_non_contiguous_numpy_view():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(rt.Tensor(a).numpy(), a)


def test_dtype_argument_and_bfloat16_reads_back_as_ml_dtypes_bfloat16():
    t = rt.Tensor([1.25, 2.5, -3.0], dtype="bfloat16")
    assert t._dtype_name == "bfloat16"
    assert t.numpy().dtype.name == "bfloat16" and t.numpy().dtype.itemsize == 2
    np.testing.assert_array_equal(t.numpy().astype(np.float32), [1.25, 2.5, -3.0])
    assert rt.Tensor([1.7, -1.7], dtype=np.int32).numpy().tolist() == [1, -1]


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="unsupported numpy dtype complex128"):
        rt.Tensor(np.ones(2, np.complex128))


def test_generated_op_classes_take_keywords_and_defaults():
    op = rt.ops.TypeCvt(dtype="int8")
    assert repr(op) == "TypeCvt(dtype=int8, scale=0, zero_point=0)"
    assert op.dtype == rt.ops._DTypeEnum.int8
    assert rt.ops.Fill(value=2) == rt.ops.Fill(value=2.0)
    assert rt.ops.Fill() != rt.ops.Fill(value=1)
    assert hash(rt.ops.Fill(value=2)) == hash(rt.ops.Fill(value=2.0))
    op.dtype = "int16"
    assert repr(op) == "TypeCvt(dtype=int16, scale=0, zero_point=0)"


def test_enum_params_accept_members_and_names():
    Padding = rt.ops.Padding
    assert Padding(mode=Padding.Mode.REFLECT).mode == Padding.Mode.REFLECT
    assert Padding(mode="replicate").mode == Padding.Mode.REPLICATE  # case-insensitive name
    assert Padding().mode == Padding.Mode.CONSTANT  # the definition's default
    assert rt.ops.PaddingBackward.Mode is Padding.Mode  # one enum per param set
    with pytest.raises(TypeError):
        Padding(mode="sideways")
    with pytest.raises(TypeError):
        rt.ops.TypeCvt(dtype="no_such_dtype")


def test_apply_runs_the_kernel_and_returns_tensors():
    t = rt.Tensor(np.array([[1.5, -2.5], [3.25, 4.0]], np.float32))
    (out,) = rt.apply(rt.ops.TypeCvt(dtype="int32"), t)
    assert isinstance(out, rt.Tensor)
    np.testing.assert_array_equal(out.numpy(), np.array([[1, -2], [3, 4]], np.int32))
    (eye,) = rt.apply_generator(rt.ops.Eye(k=1), [[3, 3]], "cpu0")
    np.testing.assert_array_equal(eye.numpy(), np.eye(3, k=1, dtype=np.float32))


def test_kernel_errors_map_to_python_exceptions():
    t = rt.Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"Concat\(axis=5\).*\{2\(3\),3\(1\)\} float32"):
        rt.apply(rt.ops.Concat(axis=5), t, t)
    with pytest.raises(TypeError, match="input 1 is a list, not a Tensor"):
        rt.apply(rt.ops.Concat(axis=0), t, [1, 2])
    with pytest.raises(ValueError, match="invalid comp node name"):
        rt.Tensor([1], device="tpu0")


def test_memory_stats_track_live_tensors():
    dev = "cpu5"
    before = rt.memory_stats(dev)["allocated"]
    t = rt.Tensor(np.ones(1 << 16, np.float32), device=dev)
    assert rt.memory_stats(dev)["allocated"] >= before + (1 << 18)
    del t
    assert rt.memory_stats(dev)["allocated"] == before
