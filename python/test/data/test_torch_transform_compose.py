"""TorchTransformCompose: BGR arrays in and out, RGB PIL images for the composed transforms."""

import sys
import types

import numpy as np
import pytest

from megengine.data.transform import Compose, ToMode, TorchTransformCompose


def _bgr(h=4, w=5):
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)


@pytest.fixture
def fake_pil(monkeypatch):
    """A stand-in for Pillow that keeps the array, so the conversions are tested without it."""

    class FakeImage:
        def __init__(self, array):
            self.array = array

        def __array__(self, dtype=None, copy=None):
            return self.array.astype(dtype) if dtype is not None else self.array

    image_module = types.ModuleType("PIL.Image")
    image_module.Image = FakeImage
    image_module.fromarray = FakeImage
    pil = types.ModuleType("PIL")
    pil.Image = image_module
    monkeypatch.setitem(sys.modules, "PIL", pil)
    monkeypatch.setitem(sys.modules, "PIL.Image", image_module)
    return FakeImage


def test_transforms_see_rgb_and_the_result_is_bgr_again(fake_pil):
    bgr = _bgr()
    seen = []

    def record(img):
        seen.append(np.array(img))
        return img

    def flip(img):  # a PIL-image transform: returns a new image
        return fake_pil(np.array(img)[:, ::-1].copy())

    out = TorchTransformCompose([record, flip]).apply(bgr)
    np.testing.assert_array_equal(seen[0], bgr[..., ::-1])  # RGB inside
    np.testing.assert_array_equal(out, bgr[:, ::-1])  # BGR outside, flipped
    assert out.dtype == np.uint8


def test_an_array_result_is_taken_as_rgb(fake_pil):
    bgr = _bgr()
    out = TorchTransformCompose([lambda img: np.array(img)]).apply(bgr)
    np.testing.assert_array_equal(out, bgr)


def test_other_fields_pass_through_and_it_composes(fake_pil):
    bgr = _bgr()
    t = Compose([TorchTransformCompose([lambda img: img]), ToMode("CHW")],
                order=("image", "image_category"))  # fmt: skip
    image, label = t.apply((bgr, 7))
    assert label == 7
    np.testing.assert_array_equal(image, bgr.transpose(2, 0, 1))


def test_with_pillow():
    pytest.importorskip("PIL")
    from PIL import ImageOps

    bgr = _bgr(6, 7)
    b, g, r = (bgr[..., i].astype(np.int64) for i in range(3))
    np.testing.assert_array_equal(TorchTransformCompose([ImageOps.mirror]).apply(bgr), bgr[:, ::-1])
    grey = TorchTransformCompose([ImageOps.grayscale]).apply(bgr)
    # PIL's ITU-R 601-2 luma of the RGB image: L = R * 299/1000 + G * 587/1000 + B * 114/1000
    luma = (r * 299 + g * 587 + b * 114) / 1000
    assert grey.shape == (6, 7, 1)
    assert np.abs(grey[..., 0].astype(float) - luma).max() <= 1
    # a one-channel image goes in as a grey PIL image
    back = TorchTransformCompose([ImageOps.mirror]).apply(grey)
    np.testing.assert_array_equal(back, grey[:, ::-1])


def test_bad_input(monkeypatch):
    with pytest.raises(TypeError, match="transforms must be callables"):
        TorchTransformCompose(["flip"])
    with pytest.raises(TypeError):
        TorchTransformCompose(5)
    monkeypatch.setitem(sys.modules, "PIL", None)  # Pillow not installed
    with pytest.raises(ImportError):
        TorchTransformCompose([lambda img: img]).apply(_bgr())
