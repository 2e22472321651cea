import cv2
import numpy as np
import pytest

import megengine.data.transform as T
from megengine.data.transform.vision import functional as F


def img(h, w, c=1, dtype=np.uint8):
    return np.arange(h * w * c).reshape(h, w, c).astype(dtype)


def test_to_mode():
    x = img(2, 3, 2)
    out = T.ToMode("CHW").apply(x)
    assert out.shape == (2, 2, 3) and out.flags.c_contiguous
    assert out[1].tolist() == [[1, 3, 5], [7, 9, 11]]
    with pytest.raises(ValueError):
        T.ToMode("NCHW")


def test_normalize_per_channel():
    x = np.array([[[10, 100], [20, 200]]], np.uint8)
    out = T.Normalize(mean=[10, 100], std=[2, 50]).apply(x)
    assert out.dtype == np.float32
    assert out.tolist() == [[[0.0, 0.0], [5.0, 2.0]]]
    assert T.Normalize().apply(x).tolist() == x.astype(np.float32).tolist()


def test_order_names_fields():
    image = img(2, 2)
    label = 7
    boxes = np.array([[0, 0, 1, 1]], np.float32)
    t = T.RandomHorizontalFlip(prob=1.0, order=("image", "boxes", "image_category"))
    out_image, out_boxes, out_label = t.apply((image, boxes, label))
    assert out_label == 7
    assert out_image[..., 0].tolist() == [[1, 0], [3, 2]]
    assert out_boxes.tolist() == [[1, 0, 2, 1]]
    with pytest.raises(NotImplementedError):
        T.Normalize(order=("image", "polygons_xyz"))
    with pytest.raises(ValueError):
        T.Normalize(order="image")


def test_fields_beyond_order_pass_through():
    out = T.Normalize(mean=1.0).apply((np.ones((1, 1, 1), np.uint8), "extra"))
    assert out[0].tolist() == [[[0.0]]] and out[1] == "extra"


def test_pad():
    x = np.array([[[1], [2]]], np.uint8)
    assert T.Pad(1).apply(x)[..., 0].tolist() == [[0, 0, 0, 0], [0, 1, 2, 0], [0, 0, 0, 0]]
    # (bottom, right) form
    assert T.Pad((1, 2), value=9).apply(x)[..., 0].tolist() == [[1, 2, 9, 9], [9, 9, 9, 9]]
    # (top, bottom, left, right) form with a mask and boxes
    t = T.Pad((2, 0, 1, 0), value=5, mask_value=3, order=("image", "mask", "boxes"))
    image, mask, boxes = t.apply((x, np.zeros((1, 2, 1), np.uint8), np.array([[0, 0, 2, 1]])))
    assert image.shape == (3, 3, 1) and image[2, 1:, 0].tolist() == [1, 2]
    assert image[0, 0, 0] == 5 and mask[0, 0, 0] == 3 and mask[2, 1, 0] == 0
    assert boxes.tolist() == [[1, 2, 3, 3]]
    colour = T.Pad(1, value=(1, 2, 3)).apply(np.zeros((1, 1, 3), np.uint8))
    assert colour[0, 0].tolist() == [1, 2, 3] and colour[1, 1].tolist() == [0, 0, 0]
    assert T.Pad(1, value=0.5).apply(x).dtype == np.float32


def test_resize_sizes_and_values():
    x = np.array([[[0], [100]]], np.uint8)
    out = T.Resize((1, 4), interpolation=cv2.INTER_NEAREST).apply(x)
    assert out.shape == (1, 4, 1) and out[..., 0].tolist() == [[0, 0, 100, 100]]
    # An int sets the shorter edge.
    assert T.Resize(4).apply(img(8, 12, 3)).shape == (4, 6, 3)
    assert T.Resize(4).apply(img(12, 8, 3)).shape == (6, 4, 3)
    # Bilinear 2x2 -> 1x1 averages the four pixels (OpenCV samples the centre).
    two = np.array([[[0.0], [4.0]], [[8.0], [12.0]]], np.float32)
    assert T.Resize((1, 1)).apply(two)[0, 0, 0] == pytest.approx(6.0)


def test_resize_masks_and_coords():
    t = T.Resize((4, 6), order=("image", "mask", "keypoints"))
    mask = np.array([[[1], [2]], [[3], [4]]], np.uint8)
    kps = np.array([[[1.0, 1.0, 2.0]]], np.float32)
    image, out_mask, out_kps = t.apply((img(2, 2), mask, kps))
    assert image.shape == (4, 6, 1)
    assert set(np.unique(out_mask)) == {1, 2, 3, 4}
    assert out_mask[..., 0].tolist()[0] == [1, 1, 1, 2, 2, 2]
    assert out_kps.tolist() == [[[3.0, 2.0, 2.0]]]


def test_shortest_edge_resize():
    assert T.ShortestEdgeResize(10, max_size=100).apply(img(20, 40)).shape == (10, 20, 1)
    # 10 x 20 exceeds max_size = 16 on the longer edge, so both shrink by 16 / 20.
    assert T.ShortestEdgeResize(10, max_size=16).apply(img(20, 40)).shape == (8, 16, 1)
    np.random.seed(0)
    shapes = {
        T.ShortestEdgeResize((8, 12), 1000, sample_style="choice").apply(img(4, 4)).shape
        for _ in range(30)
    }
    assert shapes == {(8, 8, 1), (12, 12, 1)}
    shapes = {T.ShortestEdgeResize((8, 10), 1000).apply(img(4, 4)).shape for _ in range(40)}
    assert shapes == {(8, 8, 1), (9, 9, 1), (10, 10, 1)}
    with pytest.raises(NotImplementedError):
        T.ShortestEdgeResize(8, 10, sample_style="other")


def test_random_resize():
    assert T.RandomResize((2.0, 2.0)).apply(img(3, 5)).shape == (6, 10, 1)
    np.random.seed(1)
    for _ in range(10):
        h, w, _ = T.RandomResize((0.5, 1.5)).apply(img(10, 10)).shape
        assert h == w and 5 <= h <= 15


def test_random_crop_covers_all_offsets_and_moves_boxes():
    x = img(4, 4)
    np.random.seed(0)
    seen = set()
    for _ in range(200):
        out = T.RandomCrop(2).apply(x)
        assert out.shape == (2, 2, 1)
        seen.add(int(out[0, 0, 0]))
    # Top-left pixels of all 3x3 crop offsets.
    assert seen == {0, 1, 2, 4, 5, 6, 8, 9, 10}
    t = T.RandomCrop(4, padding_size=2, order=("image", "coords"))
    out, coords = t.apply((x, np.array([[0.0, 0.0]])))
    # The original pixel (0, 0) lands at coords.
    cx, cy = (int(v) for v in coords[0])
    if 0 <= cx < 4 and 0 <= cy < 4:
        assert out[cy, cx, 0] == 0


def test_random_crop_pads_small_images():
    out = T.RandomCrop((3, 5), padding_value=7).apply(np.ones((2, 2, 1), np.uint8))
    assert out[..., 0].tolist() == [[1, 1, 7, 7, 7], [1, 1, 7, 7, 7], [7, 7, 7, 7, 7]]


def test_center_crop():
    x = img(5, 6)
    out = T.CenterCrop((3, 2)).apply(x)
    # x0 = round((6 - 2) / 2) = 2, y0 = round((5 - 3) / 2) = 1
    assert out[..., 0].tolist() == [[8, 9], [14, 15], [20, 21]]
    with pytest.raises(ValueError):
        T.CenterCrop(7).apply(x)


def test_random_resized_crop():
    np.random.seed(0)
    x = img(40, 30, 3)
    for _ in range(20):
        out = T.RandomResizedCrop((8, 6)).apply(x)
        assert out.shape == (8, 6, 3)
    # Full-area, ratio-1 crops of a square image are the whole image.
    full = T.RandomResizedCrop(4, scale_range=(1.0, 1.0), ratio_range=(1.0, 1.0))
    sq = img(4, 4)
    np.testing.assert_array_equal(full.apply(sq), sq)
    # Impossible ratios fall back to the central crop of the nearest ratio.
    wide = T.RandomResizedCrop(
        (2, 2), scale_range=(2.0, 2.0), ratio_range=(1.0, 1.0), interpolation=cv2.INTER_NEAREST
    )
    out = wide.apply(img(2, 4))
    assert out[..., 0].tolist() == [[1, 2], [5, 6]]


def test_flips_with_mask_and_boxes():
    x = img(2, 3)
    order = ("image", "mask", "boxes")
    boxes = np.array([[0, 0, 1, 2]], np.float32)
    image, mask, out_boxes = T.RandomHorizontalFlip(1.0, order=order).apply((x, x.copy(), boxes))
    assert image[..., 0].tolist() == [[2, 1, 0], [5, 4, 3]]
    np.testing.assert_array_equal(mask, image)
    assert out_boxes.tolist() == [[2, 0, 3, 2]]
    image, _, out_boxes = T.RandomVerticalFlip(1.0, order=order).apply((x, x, boxes))
    assert image[..., 0].tolist() == [[3, 4, 5], [0, 1, 2]]
    assert out_boxes.tolist() == [[0, 0, 1, 2]]
    np.testing.assert_array_equal(T.RandomHorizontalFlip(0.0).apply(x), x)
    np.random.seed(0)
    flips = sum(T.RandomHorizontalFlip(0.5).apply(x)[0, 0, 0] == 2 for _ in range(400))
    assert 150 < flips < 250


def test_brightness():
    x = np.full((1, 1, 3), 100, np.uint8)
    np.random.seed(5)
    alpha = np.random.uniform(0.5, 1.5)
    np.random.seed(5)
    out = T.BrightnessTransform(0.5).apply(x)
    assert out.dtype == np.uint8
    assert out[0, 0].tolist() == [round(100 * alpha)] * 3
    assert T.BrightnessTransform(3.0).apply(np.full((1, 1, 1), 200, np.uint8)).max() <= 255
    # Integer results are rounded, not truncated: 90 * a + 90 * (1 - a) stays 90.
    np.random.seed(0)
    for _ in range(20):
        assert T.SaturationTransform(0.5).apply(np.full((1, 1, 3), 90, np.uint8)).max() == 90
    with pytest.raises(ValueError):
        T.BrightnessTransform(-1)


def test_contrast_and_saturation_hand_computed():
    # BGR pixels; grey = 0.114 B + 0.587 G + 0.299 R.
    x = np.array([[[0, 0, 200], [100, 100, 100]]], np.float32)
    grey = np.array([0.299 * 200, 100.0])
    np.random.seed(2)
    a = np.random.uniform(0.5, 1.5)
    np.random.seed(2)
    out = T.ContrastTransform(0.5).apply(x)
    expect = x * a + grey.mean() * (1 - a)
    np.testing.assert_allclose(out, np.clip(expect, 0, 255), atol=0.05)
    np.random.seed(3)
    a = np.random.uniform(0.5, 1.5)
    np.random.seed(3)
    out = T.SaturationTransform(0.5).apply(x)
    expect = x * a + grey[None, :, None] * (1 - a)
    np.testing.assert_allclose(out, np.clip(expect, 0, 255), atol=0.05)


def test_hue():
    red = np.zeros((1, 1, 3), np.uint8)
    red[..., 2] = 255
    np.random.seed(0)
    outs = [T.HueTransform(0.5).apply(red)[0, 0].tolist() for _ in range(20)]
    assert all(max(o) == 255 for o in outs)  # value is kept
    assert any(o != [0, 0, 255] for o in outs)
    grey = np.full((2, 2, 3), 77, np.uint8)
    np.testing.assert_array_equal(T.HueTransform(0.3).apply(grey), grey)
    with pytest.raises(ValueError):
        T.HueTransform(0.6)


def test_hue_negative_shift_rotates_backwards():
    t = T.HueTransform(0.5)
    red = np.zeros((1, 1, 3), np.uint8)
    red[..., 2] = 255
    results = {}
    for seed in range(200):
        np.random.seed(seed)
        alpha = np.random.uniform(-0.5, 0.5)
        np.random.seed(seed)
        h = cv2.cvtColor(t.apply(red), cv2.COLOR_BGR2HSV_FULL)[0, 0, 0]
        results[alpha] = int(h)
    for alpha, h in results.items():
        expect = round(alpha * 255) % 256
        assert min(abs(h - expect), 256 - abs(h - expect)) <= 2, (alpha, h)


def test_color_jitter_and_compose_shuffle():
    x = np.full((2, 2, 3), 100, np.uint8)
    np.testing.assert_array_equal(T.ColorJitter().apply(x), x)
    np.random.seed(0)
    outs = {T.ColorJitter(brightness=0.5).apply(x)[0, 0, 0] for _ in range(10)}
    assert len(outs) > 1

    class Append(T.VisionTransform):
        def __init__(self, tag):
            super().__init__(order=("info",))
            self.tag = tag

        def _apply_info(self, info):
            return info + [self.tag]

    parts = [Append(i) for i in range(3)]
    assert T.Compose(parts).apply(([],)) == ([0, 1, 2],)
    np.random.seed(0)
    seen = {tuple(T.Compose(parts, shuffle_indices=[(1, 2)]).apply(([],))[0]) for _ in range(30)}
    assert seen == {(0, 1, 2), (1, 0, 2)}
    with pytest.raises(ValueError):
        T.Compose(parts, batch_compose=True, shuffle_indices=[(1, 2)])


def test_compose_batch_and_order():
    class CountCalls(T.VisionTransform):
        def __init__(self):
            super().__init__()
            self.batches = 0

        def apply_batch(self, inputs):
            self.batches += 1
            return super().apply_batch(inputs)

        def _apply_image(self, image):
            return image + 1

    c = CountCalls()
    out = T.Compose([c, c], batch_compose=True).apply_batch([np.zeros(1), np.zeros(1)])
    assert c.batches == 2 and [o.tolist() for o in out] == [[2.0], [2.0]]
    t = T.Compose([T.Normalize(mean=1.0), T.ToMode()], order=("image", "image_category"))
    image, label = t.apply((np.ones((2, 2, 1), np.uint8), 4))
    assert image.shape == (1, 2, 2) and image.sum() == 0 and label == 4


def test_lighting_and_gaussian_noise():
    x = np.full((2, 2, 3), 100, np.uint8)
    np.random.seed(4)
    alpha = np.random.normal(scale=0.1 * 255, size=3)
    t = T.Lighting(0.1)
    shift = t.eigvec.dot(alpha * t.eigval)
    np.random.seed(4)
    out = t.apply(x)
    assert out[0, 0].tolist() == np.rint(np.clip(100 + shift, 0, 255)).astype(np.uint8).tolist()
    np.testing.assert_array_equal(T.Lighting(0).apply(x), x)
    np.random.seed(7)
    noise = np.random.normal(0.0, 0.1, x.shape) * 255
    np.random.seed(7)
    out = T.GaussianNoise(0.0, 0.1).apply(x)
    expect = np.rint(np.clip(x + noise.astype(np.float32), 0, 255)).astype(np.uint8)
    np.testing.assert_array_equal(out, expect)


def test_functional_helpers():
    g = F.to_gray(np.array([[[10, 20, 30]]], np.uint8))
    assert (
        g.shape == (1, 1, 1) and abs(int(g[0, 0, 0]) - (0.114 * 10 + 0.587 * 20 + 0.299 * 30)) < 1
    )
    assert F.to_bgr(g).shape == (1, 1, 3)
    assert F.flip(img(2, 2), -1)[..., 0].tolist() == [[3, 2], [1, 0]]
    with pytest.raises(ValueError):
        F.flip(img(2, 2), 2)
    with pytest.raises(ValueError):
        F.pad(img(2, 2, 3), (1, 1, 1, 1), (1, 2))
