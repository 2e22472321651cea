"""Vision transforms. Images are ``(H, W, C)`` arrays (BGR for colour images), as in MegEngine."""

import collections.abc
import math
from collections.abc import Sequence

import cv2
import numpy as np

from ..meta_transform import Transform
from . import functional as F

__all__ = [
    "BrightnessTransform",
    "CenterCrop",
    "ColorJitter",
    "Compose",
    "ContrastTransform",
    "GaussianNoise",
    "HueTransform",
    "Lighting",
    "Normalize",
    "Pad",
    "RandomCrop",
    "RandomHorizontalFlip",
    "RandomResize",
    "RandomResizedCrop",
    "RandomVerticalFlip",
    "Resize",
    "SaturationTransform",
    "ShortestEdgeResize",
    "ToMode",
    "TorchTransformCompose",
    "VisionTransform",
]


class VisionTransform(Transform):
    r"""Base class of the vision transforms.

    A sample is a tuple of fields; ``order`` names them, and each field is processed by the
    method ``_apply_<name>`` of the transform. Known names:

    * ``"image"``: an ``(H, W, C)`` array.
    * ``"mask"``: a segmentation map of shape ``(H, W, 1)``, transformed like the image but with
      nearest-neighbour resampling.
    * ``"boxes"``: ``(N, 4)`` boxes ``(x0, y0, x1, y1)``.
    * ``"keypoints"``: ``(N, K, 3)`` keypoints ``(x, y, label)``.
    * ``"coords"``: ``(N, 2)`` points ``(x, y)``.
    * names ending in ``category``, ``coarse``, ``str`` or ``info`` (e.g. ``"image_category"``,
      ``"boxes_category"``, ``"info"``): passed through unchanged.

    The photometric transforms (brightness, contrast, saturation, lighting, noise) clip results
    to ``[0, 255]`` and return the input's dtype, rounding to nearest for integer images
    (MegEngine truncates). Random parameters are drawn once per sample, so every field of a sample is transformed
    alike (an image and its mask are cropped at the same place). A bare array (not a tuple) is
    treated as the first field. Random transforms draw from NumPy's global generator, which
    the :class:`~megengine.data.DataLoader` seeds in each worker.

    Args:
        order: the field names of a sample, e.g. ``("image", "image_category")``;
            ``("image",)`` when ``None``.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import VisionTransform
        >>> class Invert(VisionTransform):
        ...     def _apply_image(self, image):
        ...         return 255 - image
        >>> image, label = Invert(order=("image", "image_category")).apply(
        ...     (np.zeros((1, 1, 1), np.uint8), 3))
        >>> int(image[0, 0, 0]), label
        (255, 3)
    """

    _passthrough_suffixes = ("category", "coarse", "str", "info")

    def __init__(self, order=None):
        super().__init__()
        if order is None:
            order = ("image",)
        elif isinstance(order, str) or not isinstance(order, collections.abc.Sequence):
            raise ValueError(f"order should be a sequence of field names, got order={order!r}")
        for k in order:
            if k == "batch":
                raise ValueError(f"{k!r} is an invalid field name")
            if not k.endswith(self._passthrough_suffixes) and self._get_apply(k) is None:
                raise NotImplementedError(f"{type(self).__name__}: unsupported field {k!r}")
        self.order = tuple(order)

    def apply_batch(self, inputs: Sequence[tuple]):
        r"""Applies the transform to each sample of a batch.

        Args:
            inputs: the samples.

        Returns:
            A tuple of transformed samples.
        """
        return tuple(self.apply(input) for input in inputs)

    def apply(self, input: tuple):
        r"""Applies the transform to one sample.

        Args:
            input: a tuple of fields in ``order`` (fields beyond ``order`` pass through), or a
                bare array for the first field.

        Returns:
            The transformed sample, in the same form.
        """
        fns = self._appliers()
        if not isinstance(input, tuple):
            self._prepare((input,))
            return input if fns[0] is None else fns[0](input)
        self._prepare(input)
        output = list(input)
        for i, fn in enumerate(fns[: len(output)]):
            if fn is not None:
                output[i] = fn(output[i])
        return tuple(output)

    def _appliers(self):
        # The _apply_* method of each field in order, looked up once per order (Compose may
        # change a transform's order after construction).
        cache = self.__dict__.get("_appliers_cache")
        if cache is None or cache[0] != self.order:
            cache = (self.order, [self._get_apply(k) for k in self.order])
            self._appliers_cache = cache
        return cache[1]

    def _prepare(self, fields):
        # Draws the random parameters of one sample; overridden by random/geometric transforms.
        pass

    def _column_appliers(self):
        # For the DataLoader's shortcut (see Transform._apply_columns): per field of order, a
        # function that transforms the field of a whole batch at once, returning None when it
        # cannot do so identically (None: the field passes unchanged); or None when this
        # transform has no such form. Only deterministic transforms have one.
        return None

    def _apply_columns(self, columns):
        fns = self._column_appliers()
        if fns is None:
            return None
        columns = list(columns)
        for i, fn in enumerate(fns[: len(columns)]):
            if fn is not None:
                column = fn(columns[i])
                if column is None:
                    return None
                columns[i] = column
        return tuple(columns)

    def _get_apply(self, key):
        return getattr(self, f"_apply_{key}", None)

    def _get_image(self, fields):
        if not isinstance(fields, tuple):
            fields = (fields,)
        if "image" not in self.order:
            raise ValueError(f"{type(self).__name__} needs an 'image' field in order={self.order}")
        image = fields[self.order.index("image")]
        if image.ndim != 3:
            raise ValueError(
                f"{type(self).__name__} expects an (H, W, C) image, got shape {image.shape}"
            )
        return image

    def _apply_image(self, image):
        raise NotImplementedError(f"{type(self).__name__} does not transform images")

    def _apply_coords(self, coords):
        return coords

    def _apply_mask(self, mask):
        return mask

    def _apply_boxes(self, boxes):
        boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4)
        corners = boxes[:, [0, 1, 2, 1, 0, 3, 2, 3]].reshape(-1, 2)
        corners = self._apply_coords(corners.copy()).reshape(-1, 4, 2)
        return np.concatenate((corners.min(axis=1), corners.max(axis=1)), axis=1)

    def _apply_keypoints(self, keypoints):
        keypoints = np.asarray(keypoints, dtype=np.float32)
        xy = keypoints[..., :2].reshape(-1, 2).copy()
        xy = self._apply_coords(xy).reshape(keypoints.shape[:-1] + (2,))
        return np.concatenate((xy, keypoints[..., 2:]), axis=-1)


def _clip_to(image, dtype):
    # Clips to [0, 255] and returns to dtype, rounding to nearest for integer types (MegEngine
    # truncates, so 89.99999 became 89).
    image = np.clip(image, 0, 255)
    if np.issubdtype(dtype, np.integer):
        image = np.rint(image)
    return image.astype(dtype)


class _PhotometricTransform(VisionTransform):
    # Changes pixel values only: masks and coordinates pass unchanged.
    def _apply_coords(self, coords):
        return coords

    def _apply_mask(self, mask):
        return mask


class ToMode(VisionTransform):
    r"""Changes the layout of images (and masks) from ``HWC`` to ``mode``.

    Args:
        mode: the output layout; ``"CHW"`` (channels first, for networks).
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import ToMode
        >>> ToMode().apply(np.zeros((28, 28, 1), np.float32)).shape
        (1, 28, 28)
    """

    def __init__(self, mode="CHW", *, order=None):
        super().__init__(order)
        if mode != "CHW":
            raise ValueError(f"unsupported mode {mode!r}; only 'CHW' is supported")
        self.mode = mode

    def _apply_image(self, image):
        if image.ndim == 2:
            return np.ascontiguousarray(image[np.newaxis])
        return np.ascontiguousarray(image.transpose(2, 0, 1))

    def _apply_mask(self, mask):
        return self._apply_image(mask)

    def _column_appliers(self):
        if type(self) is not ToMode:
            return None
        fns = []
        for k in self.order:
            if k in ("image", "mask"):
                fns.append(_to_chw_column)
            elif k == "coords" or self._get_apply(k) is None:
                fns.append(None)
            else:
                return None
        return fns


def _to_chw_column(column):
    # ToMode("CHW") of a batch of (H, W) or (H, W, C) arrays.
    if column.ndim == 3:
        return np.ascontiguousarray(column[:, np.newaxis])
    if column.ndim == 4:
        return np.ascontiguousarray(column.transpose(0, 3, 1, 2))
    return None


class Compose(VisionTransform):
    r"""Applies several transforms one after the other.

    Args:
        transforms: the transforms, applied in list order.
        batch_compose: apply each transform to the whole batch before the next one (and so in
            one order for the whole batch); cannot be combined with ``shuffle_indices``.
        shuffle_indices: groups of 1-based positions in ``transforms`` whose order is
            shuffled anew for each sample, e.g. ``[(1, 2, 3)]``.
        order: the field names of a sample; when given, it is set on every composed transform.

    Examples:
        >>> import numpy as np
        >>> import megengine.data.transform as T
        >>> t = T.Compose([T.Normalize(mean=1.0, std=2.0), T.ToMode("CHW")])
        >>> t.apply(np.full((2, 2, 1), 5, np.uint8))[:, 0, 0].tolist()
        [2.0]
    """

    def __init__(
        self,
        transforms: Sequence[VisionTransform] = (),
        batch_compose: bool = False,
        shuffle_indices: Sequence[tuple] | None = None,
        *,
        order=None,
    ):
        super().__init__(order)
        self.transforms = list(transforms)
        if order is not None:
            self._set_order(self.order)
        if batch_compose and shuffle_indices is not None:
            raise ValueError("shuffle_indices cannot be combined with batch_compose=True")
        self.batch_compose = batch_compose
        if shuffle_indices is not None:
            groups = []
            for group in shuffle_indices:
                group = tuple(int(i) - 1 for i in group)
                if any(not 0 <= i < len(self.transforms) for i in group):
                    raise ValueError(
                        f"shuffle_indices are 1-based positions in transforms, got {group}"
                    )
                groups.append(group)
            shuffle_indices = groups
        self.shuffle_indices = shuffle_indices

    def _set_order(self, order):
        for t in self.transforms:
            if isinstance(t, Compose):
                t.order = order
                t._set_order(order)
            elif isinstance(t, VisionTransform):
                t.order = order

    def _sequence(self):
        if self.shuffle_indices is None:
            return self.transforms
        positions = list(range(len(self.transforms)))
        for group in self.shuffle_indices:
            for src, dst in zip(group, np.random.permutation(group).tolist()):
                positions[src] = dst
        return [self.transforms[i] for i in positions]

    def apply_batch(self, inputs: Sequence[tuple]):
        if self.batch_compose:
            for t in self.transforms:
                inputs = t.apply_batch(inputs)
            return inputs
        return tuple(self.apply(input) for input in inputs)

    def apply(self, input: tuple):
        for t in self._sequence():
            input = t.apply(input)
        return input

    def _apply_columns(self, columns):
        if type(self) is not Compose or self.shuffle_indices is not None:
            return None
        for t in self.transforms:
            apply_columns = getattr(t, "_apply_columns", None)
            columns = None if apply_columns is None else apply_columns(columns)
            if columns is None:
                return None
        return columns


class TorchTransformCompose(VisionTransform):
    r"""Applies torchvision transforms (which work on PIL images) to the image field.

    The BGR ``(H, W, 3)`` image becomes an RGB PIL image, goes through the transforms in order,
    and comes back as a BGR uint8 array; other fields pass through. As in MegEngine, a first
    axis of length 3 is read as channels first (the channels are reversed on that axis), and
    torchvision transforms that return tensors (``ToTensor``, ``Normalize``) are not supported:
    the result must be a PIL image or an array. A one-channel image, ``(H, W, 1)``, goes in as
    a grey PIL image, and a grey result comes back as ``(H, W, 1)`` (MegEngine fails on both).
    Needs Pillow (imported on first use).

    Args:
        transforms: callables from a PIL image to a PIL image (torchvision transforms),
            applied in list order.
        order: the field names of a sample, as for :class:`VisionTransform`.

    Examples:
        With torchvision (and Pillow) installed:

        .. code-block:: python

            import torchvision.transforms as tvt
            t = TorchTransformCompose([tvt.ColorJitter(0.4, 0.4), tvt.RandomRotation(10)])
            image = t.apply(bgr_image)  # a BGR uint8 array again

        >>> from megengine.data.transform import TorchTransformCompose
        >>> t = TorchTransformCompose([lambda img: img], order=("image", "image_category"))
        >>> len(t.transforms), t.order
        (1, ('image', 'image_category'))
    """

    def __init__(self, transforms, *, order=None):
        super().__init__(order)
        transforms = list(transforms)
        for t in transforms:
            if not callable(t):
                raise TypeError(
                    f"TorchTransformCompose: transforms must be callables, got {type(t).__name__}"
                )
        self.transforms = transforms

    def _apply_image(self, image):
        from PIL import Image

        try:
            import accimage
        except ImportError:
            accimage = None

        image = np.asarray(image)
        if image.ndim == 3 and image.shape[2] == 1:
            image = image[:, :, 0]  # PIL's grey images are 2-D
        if image.shape[0] == 3:  # CHW
            image = np.ascontiguousarray(image[[2, 1, 0]])
        elif image.ndim == 3 and image.shape[2] == 3:  # HWC
            image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
        image = Image.fromarray(image.astype(np.uint8))
        for t in self.transforms:
            image = t(image)
        if isinstance(image, Image.Image) or (
            accimage is not None and isinstance(image, accimage.Image)
        ):
            image = np.array(image, dtype=np.uint8)
        if image.ndim == 2:
            return image[:, :, None]
        if image.shape[0] == 3:  # CHW
            image = np.ascontiguousarray(image[[2, 1, 0]])
        elif image.shape[2] == 3:  # HWC
            image = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
        return image


class Pad(VisionTransform):
    r"""Pads images (and masks) with a constant.

    Args:
        size: an int pads all four sides; ``(bottom, right)`` pads those two sides;
            ``(top, bottom, left, right)`` pads each side by its amount.
        value: padding value of images: a number or one per channel; a float value turns
            integer images into ``float32``.
        mask_value: padding value of masks (an int).
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import Pad
        >>> Pad(1, value=9).apply(np.zeros((1, 1, 1), np.uint8))[..., 0].tolist()
        [[9, 9, 9], [9, 0, 9], [9, 9, 9]]
    """

    def __init__(self, size=0, value=0, mask_value=0, *, order=None):
        super().__init__(order)
        if isinstance(size, (int, np.integer)):
            size = (size, size, size, size)
        elif isinstance(size, collections.abc.Sequence) and len(size) == 2:
            size = (0, size[0], 0, size[1])
        elif not (isinstance(size, collections.abc.Sequence) and len(size) == 4):
            raise ValueError(
                f"size should be an int, (bottom, right) or (top, bottom, left, right), got {size}"
            )
        if any(int(s) < 0 for s in size):
            raise ValueError(f"pad sizes should be non-negative, got {size}")
        self.size = tuple(int(s) for s in size)
        self.value = value
        if not isinstance(mask_value, (int, np.integer)):
            raise TypeError(f"mask_value should be an int, got {mask_value!r}")
        self.mask_value = mask_value

    def _apply_image(self, image):
        return F.pad(image, self.size, self.value)

    def _apply_coords(self, coords):
        coords = np.array(coords, dtype=np.float32)
        coords[:, 0] += self.size[2]
        coords[:, 1] += self.size[0]
        return coords

    def _apply_mask(self, mask):
        return F.pad(mask, self.size, self.mask_value)


class _ResizeBase(VisionTransform):
    # Resizes every field to a target size drawn by _target_shape(h, w) once per sample.
    def __init__(self, interpolation, order):
        super().__init__(order)
        self.interpolation = interpolation

    def _prepare(self, fields):
        h, w, _ = self._get_image(fields).shape
        th, tw = self._target_shape(h, w)
        if th <= 0 or tw <= 0:
            raise ValueError(f"{type(self).__name__}: target size ({th}, {tw}) is empty")
        self._shape_info = (h, w, th, tw)

    def _apply_image(self, image):
        h, w, th, tw = self._shape_info
        if (h, w) == (th, tw):
            return image
        return F.resize(image, (th, tw), self.interpolation)

    def _apply_coords(self, coords):
        h, w, th, tw = self._shape_info
        coords = np.array(coords, dtype=np.float32)
        coords[:, 0] *= tw / w
        coords[:, 1] *= th / h
        return coords

    def _apply_mask(self, mask):
        h, w, th, tw = self._shape_info
        if (h, w) == (th, tw):
            return mask
        return F.resize(mask, (th, tw), cv2.INTER_NEAREST)


class Resize(_ResizeBase):
    r"""Resizes images to a given size.

    Args:
        output_size: ``(height, width)``; or an int, the length of the shorter edge, the
            longer one keeping the aspect ratio (rounded down).
        interpolation: OpenCV interpolation flag: ``cv2.INTER_NEAREST``, ``cv2.INTER_LINEAR``
            (default), ``cv2.INTER_AREA``, ``cv2.INTER_CUBIC``, ``cv2.INTER_LANCZOS4``.
            Masks always use nearest-neighbour.
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import Resize
        >>> Resize(4).apply(np.zeros((8, 12, 3), np.uint8)).shape
        (4, 6, 3)
    """

    def __init__(self, output_size, interpolation=cv2.INTER_LINEAR, *, order=None):
        super().__init__(interpolation, order)
        self.output_size = output_size

    def _target_shape(self, h, w):
        if isinstance(self.output_size, (int, np.integer)):
            s = int(self.output_size)
            if min(h, w) == s:
                return h, w
            if h < w:
                return s, int(s * w / h)
            return int(s * h / w), s
        return F._as_pair(self.output_size, "output_size")


class ShortestEdgeResize(_ResizeBase):
    r"""Resizes images so that the shorter edge has a (random) length, keeping the aspect
    ratio, and the longer edge is at most ``max_size``.

    Args:
        min_size: the shorter edge's length: an int, or ``(low, high)`` to sample from.
        max_size: the largest allowed length of the longer edge.
        sample_style: ``"range"`` draws an integer in ``[low, high]``; ``"choice"`` picks one of
            the values of ``min_size``.
        interpolation: OpenCV interpolation flag (masks use nearest-neighbour).
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import ShortestEdgeResize
        >>> ShortestEdgeResize(4, max_size=6).apply(np.zeros((8, 16, 3), np.uint8)).shape
        (3, 6, 3)
    """

    def __init__(
        self,
        min_size,
        max_size,
        sample_style="range",
        interpolation=cv2.INTER_LINEAR,
        *,
        order=None,
    ):
        super().__init__(interpolation, order)
        if sample_style not in ("range", "choice"):
            raise NotImplementedError(f"{sample_style!r} is an unsupported sample style")
        self.sample_style = sample_style
        if isinstance(min_size, (int, np.integer)):
            min_size = (int(min_size), int(min_size))
        self.min_size = tuple(min_size)
        self.max_size = max_size

    def _target_shape(self, h, w):
        if self.sample_style == "range":
            size = np.random.randint(self.min_size[0], self.min_size[1] + 1)
        else:
            size = np.random.choice(self.min_size)
        scale = size / min(h, w)
        th, tw = (size, scale * w) if h < w else (scale * h, size)
        if max(th, tw) > self.max_size:
            shrink = self.max_size / max(th, tw)
            th, tw = th * shrink, tw * shrink
        return round(th), round(tw)


class RandomResize(_ResizeBase):
    r"""Resizes images by a random factor drawn uniformly from ``scale_range``.

    Args:
        scale_range: ``(low, high)`` of the factor.
        interpolation: OpenCV interpolation flag (masks use nearest-neighbour).
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import RandomResize
        >>> RandomResize((0.5, 0.5)).apply(np.zeros((8, 4, 3), np.uint8)).shape
        (4, 2, 3)
    """

    def __init__(self, scale_range, interpolation=cv2.INTER_LINEAR, *, order=None):
        super().__init__(interpolation, order)
        if len(scale_range) != 2 or not 0 < scale_range[0] <= scale_range[1]:
            raise ValueError("scale_range should be (low, high) with 0 < low <= high")
        self.scale_range = tuple(scale_range)

    def _target_shape(self, h, w):
        scale = np.random.uniform(*self.scale_range)
        return round(h * scale), round(w * scale)


class RandomCrop(VisionTransform):
    r"""Pads images, then crops a random window of ``output_size``; an image still smaller
    than the window is padded at the bottom and right to fit.

    Args:
        output_size: ``(height, width)`` of the crop, or an int for a square.
        padding_size: padding before cropping, as ``size`` of :class:`Pad`.
        padding_value: image padding value, as ``value`` of :class:`Pad`.
        padding_maskvalue: mask padding value.
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import RandomCrop
        >>> RandomCrop(28, padding_size=4).apply(np.zeros((28, 28, 1), np.uint8)).shape
        (28, 28, 1)
    """

    def __init__(
        self,
        output_size,
        padding_size=0,
        padding_value=(0, 0, 0),
        padding_maskvalue=0,
        *,
        order=None,
    ):
        super().__init__(order)
        self.output_size = F._as_pair(output_size, "output_size")
        self.padding_size = padding_size
        self.padding_value = padding_value
        self.padding_maskvalue = padding_maskvalue
        self._pad_size = Pad(padding_size).size

    def _value_for(self, image):
        value = np.asarray(self.padding_value)
        if (
            value.ndim == 1
            and image.ndim == 3
            and value.shape[0] != image.shape[2]
            and np.all(value == value.flat[0])
        ):
            # The default (0, 0, 0) also pads grey images.
            return value.flat[0].item()
        return self.padding_value

    def _prepare(self, fields):
        h, w, _ = self._get_image(fields).shape
        top, bottom, left, right = self._pad_size
        self._h, self._w = h + top + bottom, w + left + right
        th, tw = self.output_size
        self._x = np.random.randint(0, max(0, self._w - tw) + 1)
        self._y = np.random.randint(0, max(0, self._h - th) + 1)

    def _crop(self, image, value):
        th, tw = self.output_size
        top, bottom, left, right = self._pad_size
        image = F.pad(
            image, (top, bottom + max(0, th - self._h), left, right + max(0, tw - self._w)), value
        )
        return image[self._y : self._y + th, self._x : self._x + tw]

    def _apply_image(self, image):
        return self._crop(image, self._value_for(image))

    def _apply_mask(self, mask):
        return self._crop(mask, self.padding_maskvalue)

    def _apply_coords(self, coords):
        coords = np.array(coords, dtype=np.float32)
        coords[:, 0] += self._pad_size[2] - self._x
        coords[:, 1] += self._pad_size[0] - self._y
        return coords


class RandomResizedCrop(VisionTransform):
    r"""Crops a random window of random area and aspect ratio, then resizes it to
    ``output_size`` (the Inception-style crop). After 10 failed draws it takes the central
    window of the aspect ratio closest to the image's.

    Args:
        output_size: ``(height, width)`` of the output, or an int for a square.
        scale_range: range of the window's area as a fraction of the image's.
        ratio_range: range of the window's aspect ratio (width / height), drawn uniformly in
            log space.
        interpolation: OpenCV interpolation flag (masks use nearest-neighbour).
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import RandomResizedCrop
        >>> RandomResizedCrop(16).apply(np.zeros((40, 30, 3), np.uint8)).shape
        (16, 16, 3)
    """

    def __init__(
        self,
        output_size,
        scale_range=(0.08, 1.0),
        ratio_range=(3.0 / 4, 4.0 / 3),
        interpolation=cv2.INTER_LINEAR,
        *,
        order=None,
    ):
        super().__init__(order)
        self.output_size = F._as_pair(output_size, "output_size")
        if not scale_range[0] <= scale_range[1]:
            raise ValueError("scale_range should be (min, max)")
        if not 0 < ratio_range[0] <= ratio_range[1]:
            raise ValueError("ratio_range should be (min, max) of positive ratios")
        self.scale_range = tuple(scale_range)
        self.ratio_range = tuple(ratio_range)
        self.interpolation = interpolation

    def _prepare(self, fields, attempts=10):
        height, width, _ = self._get_image(fields).shape
        area = height * width
        log_ratio = (math.log(self.ratio_range[0]), math.log(self.ratio_range[1]))
        for _ in range(attempts):
            target_area = np.random.uniform(*self.scale_range) * area
            aspect = math.exp(np.random.uniform(*log_ratio))
            w = round(math.sqrt(target_area * aspect))
            h = round(math.sqrt(target_area / aspect))
            if 0 < w <= width and 0 < h <= height:
                x = np.random.randint(0, width - w + 1)
                y = np.random.randint(0, height - h + 1)
                self._coord_info = (x, y, w, h)
                return
        in_ratio = width / height
        if in_ratio < self.ratio_range[0]:
            w, h = width, round(width / self.ratio_range[0])
        elif in_ratio > self.ratio_range[1]:
            w, h = round(height * self.ratio_range[1]), height
        else:
            w, h = width, height
        self._coord_info = ((width - w) // 2, (height - h) // 2, w, h)

    def _apply_image(self, image):
        x, y, w, h = self._coord_info
        return F.resize(image[y : y + h, x : x + w], self.output_size, self.interpolation)

    def _apply_mask(self, mask):
        x, y, w, h = self._coord_info
        return F.resize(mask[y : y + h, x : x + w], self.output_size, cv2.INTER_NEAREST)

    def _apply_coords(self, coords):
        x, y, w, h = self._coord_info
        coords = np.array(coords, dtype=np.float32)
        coords[:, 0] = (coords[:, 0] - x) * self.output_size[1] / w
        coords[:, 1] = (coords[:, 1] - y) * self.output_size[0] / h
        return coords


class CenterCrop(VisionTransform):
    r"""Crops the central window of ``output_size``.

    Args:
        output_size: ``(height, width)`` of the crop, or an int for a square; at most the
            image's size.
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import CenterCrop
        >>> image = np.arange(16).reshape(4, 4, 1)
        >>> CenterCrop(2).apply(image)[..., 0].tolist()
        [[5, 6], [9, 10]]
    """

    def __init__(self, output_size, *, order=None):
        super().__init__(order)
        self.output_size = F._as_pair(output_size, "output_size")

    def _prepare(self, fields):
        th, tw = self.output_size
        h, w, _ = self._get_image(fields).shape
        if th > h or tw > w:
            raise ValueError(f"CenterCrop: output size {self.output_size} exceeds image ({h}, {w})")
        self._coord_info = (round((w - tw) / 2.0), round((h - th) / 2.0))

    def _apply_image(self, image):
        x, y = self._coord_info
        th, tw = self.output_size
        return image[y : y + th, x : x + tw]

    def _apply_mask(self, mask):
        return self._apply_image(mask)

    def _apply_coords(self, coords):
        x, y = self._coord_info
        coords = np.array(coords, dtype=np.float32)
        coords[:, 0] -= x
        coords[:, 1] -= y
        return coords


class RandomHorizontalFlip(VisionTransform):
    r"""Flips images left-right with probability ``prob``.

    Args:
        prob: probability of flipping a sample.
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import RandomHorizontalFlip
        >>> RandomHorizontalFlip(prob=1.0).apply(np.array([[[1], [2]]]))[..., 0].tolist()
        [[2, 1]]
    """

    def __init__(self, prob: float = 0.5, *, order=None):
        super().__init__(order)
        self.prob = prob

    def _prepare(self, fields):
        self._flipped = np.random.random() < self.prob
        self._w = self._get_image(fields).shape[1]

    def _apply_image(self, image):
        return F.flip(image, 1) if self._flipped else image

    def _apply_mask(self, mask):
        return self._apply_image(mask)

    def _apply_coords(self, coords):
        coords = np.array(coords, dtype=np.float32)
        if self._flipped:
            coords[:, 0] = self._w - coords[:, 0]
        return coords


class RandomVerticalFlip(VisionTransform):
    r"""Flips images upside down with probability ``prob``.

    Args:
        prob: probability of flipping a sample.
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import RandomVerticalFlip
        >>> RandomVerticalFlip(prob=1.0).apply(np.array([[[1]], [[2]]]))[..., 0].tolist()
        [[2], [1]]
    """

    def __init__(self, prob: float = 0.5, *, order=None):
        super().__init__(order)
        self.prob = prob

    def _prepare(self, fields):
        self._flipped = np.random.random() < self.prob
        self._h = self._get_image(fields).shape[0]

    def _apply_image(self, image):
        return F.flip(image, 0) if self._flipped else image

    def _apply_mask(self, mask):
        return self._apply_image(mask)

    def _apply_coords(self, coords):
        coords = np.array(coords, dtype=np.float32)
        if self._flipped:
            coords[:, 1] = self._h - coords[:, 1]
        return coords


class Normalize(_PhotometricTransform):
    r"""Normalizes each channel: ``output[..., c] = (input[..., c] - mean[c]) / std[c]``.

    Args:
        mean: a number, or one mean per channel.
        std: a number, or one standard deviation per channel.
        order: the field names of a sample.

    Returns:
        ``float32`` images.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import Normalize
        >>> image = np.array([[[10, 20]]], np.uint8)
        >>> Normalize(mean=[10, 10], std=[1, 5]).apply(image).tolist()
        [[[0.0, 2.0]]]
    """

    def __init__(self, mean=0.0, std=1.0, *, order=None):
        super().__init__(order)
        self.mean = np.array(mean, dtype=np.float32)
        self.std = np.array(std, dtype=np.float32)
        if np.any(self.std == 0):
            raise ValueError("Normalize: std should not be zero")

    def _apply_image(self, image):
        return np.subtract(image, self.mean, dtype=np.float32) / self.std

    def _column_appliers(self):
        if type(self) is not Normalize:
            return None
        fns = []
        for k in self.order:
            if k == "image":
                fns.append(self._normalize_column)
            elif k in ("mask", "coords") or self._get_apply(k) is None:
                fns.append(None)
            else:
                return None
        return fns

    def _normalize_column(self, column):
        # Elementwise, so identical to normalizing each sample, as long as mean and std
        # broadcast against a sample's trailing axes only.
        if column.ndim < 2 or max(self.mean.ndim, self.std.ndim) > column.ndim - 1:
            return None
        return self._apply_image(column)


class GaussianNoise(_PhotometricTransform):
    r"""Adds Gaussian noise of ``N(mean, std) * 255`` to images, clipped to ``[0, 255]``, in the
    image's dtype.

    Args:
        mean: mean of the noise, in units of 255.
        std: standard deviation of the noise, in units of 255.
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import GaussianNoise
        >>> GaussianNoise(mean=1.0, std=0.0).apply(np.zeros((1, 1, 3), np.uint8)).tolist()
        [[[255, 255, 255]]]
    """

    def __init__(self, mean=0.0, std=1.0, *, order=None):
        super().__init__(order)
        self.mean = np.array(mean, dtype=np.float32)
        self.std = np.array(std, dtype=np.float32)

    def _apply_image(self, image):
        noise = np.random.normal(self.mean, self.std, image.shape) * 255
        return _clip_to(image + noise.astype(np.float32), image.dtype)


class _ColorAdjust(_PhotometricTransform):
    def __init__(self, value, order):
        super().__init__(order)
        if value < 0:
            raise ValueError(f"{type(self).__name__}: value should be non-negative, got {value}")
        self.value = value

    def _apply_image(self, image):
        if self.value == 0:
            return image
        alpha = np.random.uniform(max(0, 1 - self.value), 1 + self.value)
        out = self._blend(image.astype(np.float32), alpha)
        return _clip_to(out, image.dtype)


class BrightnessTransform(_ColorAdjust):
    r"""Scales pixel values by a factor drawn from ``[max(0, 1 - value), 1 + value]``.

    Args:
        value: non-negative strength; 0 leaves images unchanged.
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import BrightnessTransform
        >>> BrightnessTransform(0).apply(np.full((1, 1, 3), 7, np.uint8)).tolist()
        [[[7, 7, 7]]]
    """

    def __init__(self, value, *, order=None):
        super().__init__(value, order)

    def _blend(self, image, alpha):
        return image * alpha


class ContrastTransform(_ColorAdjust):
    r"""Blends images with their mean grey level: ``image * a + mean(gray) * (1 - a)``,
    ``a`` drawn from ``[max(0, 1 - value), 1 + value]``.

    Args:
        value: non-negative strength; 0 leaves images unchanged.
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import ContrastTransform
        >>> ContrastTransform(0.5).apply(np.full((2, 2, 3), 40, np.uint8))[0, 0].tolist()
        [40, 40, 40]
    """

    def __init__(self, value, *, order=None):
        super().__init__(value, order)

    def _blend(self, image, alpha):
        return image * alpha + F.to_gray(image).mean() * (1 - alpha)


class SaturationTransform(_ColorAdjust):
    r"""Blends images with their grey version: ``image * a + gray * (1 - a)``, ``a`` drawn
    from ``[max(0, 1 - value), 1 + value]``.

    Args:
        value: non-negative strength; 0 leaves images unchanged.
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import SaturationTransform
        >>> SaturationTransform(0.5).apply(np.full((1, 1, 3), 90, np.uint8)).tolist()
        [[[90, 90, 90]]]
    """

    def __init__(self, value, *, order=None):
        super().__init__(value, order)

    def _blend(self, image, alpha):
        return image * alpha + F.to_gray(image) * (1 - alpha)


class HueTransform(_PhotometricTransform):
    r"""Rotates the hue of BGR images by a fraction of the colour circle drawn from
    ``[-value, value]`` (in OpenCV's full-range HSV, 256 steps per turn).

    Unlike MegEngine, which converts a negative shift with ``np.uint8`` (undefined for negative
    floats), the shift is taken modulo 256, so negative shifts rotate backwards.

    Args:
        value: strength in ``[0, 0.5]``; 0 leaves images unchanged.
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import HueTransform
        >>> grey = np.full((1, 1, 3), 128, np.uint8)
        >>> HueTransform(0.5).apply(grey).tolist()
        [[[128, 128, 128]]]
    """

    def __init__(self, value, *, order=None):
        super().__init__(order)
        if not 0 <= value <= 0.5:
            raise ValueError(f"HueTransform: value should be in [0, 0.5], got {value}")
        self.value = value

    def _apply_image(self, image):
        if self.value == 0:
            return image
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"HueTransform expects (H, W, 3) BGR images, got {image.shape}")
        alpha = np.random.uniform(-self.value, self.value)
        hsv = cv2.cvtColor(image.astype(np.uint8), cv2.COLOR_BGR2HSV_FULL)
        shift = round(alpha * 255) % 256
        hsv[..., 0] = ((hsv[..., 0].astype(np.int32) + shift) % 256).astype(np.uint8)
        return cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR_FULL).astype(image.dtype)


class ColorJitter(VisionTransform):
    r"""Applies brightness, contrast, saturation and hue changes in a random order.

    Args:
        brightness: strength of :class:`BrightnessTransform` (0: none).
        contrast: strength of :class:`ContrastTransform` (0: none).
        saturation: strength of :class:`SaturationTransform` (0: none).
        hue: strength of :class:`HueTransform`, in ``[0, 0.5]`` (0: none).
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import ColorJitter
        >>> ColorJitter(brightness=0.4, contrast=0.4).apply(np.zeros((4, 4, 3), np.uint8)).shape
        (4, 4, 3)
    """

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0, *, order=None):
        super().__init__(order)
        transforms = []
        if brightness != 0:
            transforms.append(BrightnessTransform(brightness, order=order))
        if contrast != 0:
            transforms.append(ContrastTransform(contrast, order=order))
        if saturation != 0:
            transforms.append(SaturationTransform(saturation, order=order))
        if hue != 0:
            transforms.append(HueTransform(hue, order=order))
        shuffle = [tuple(range(1, len(transforms) + 1))] if len(transforms) > 1 else None
        self.transforms = Compose(transforms, shuffle_indices=shuffle, order=order)

    def apply(self, input):
        return self.transforms.apply(input)


class Lighting(_PhotometricTransform):
    r"""AlexNet-style PCA lighting noise: adds ``eigvec @ (alpha * eigval)`` to every pixel,
    ``alpha ~ N(0, (scale * 255)^2)`` per component, with ImageNet's RGB eigenvectors reordered
    for BGR images; the result is clipped to ``[0, 255]`` in the image's dtype.

    Args:
        scale: standard deviation of ``alpha`` in units of 255; 0 leaves images unchanged.
        order: the field names of a sample.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform import Lighting
        >>> Lighting(0.1).apply(np.full((2, 2, 3), 100, np.uint8)).shape
        (2, 2, 3)
    """

    def __init__(self, scale, *, order=None):
        super().__init__(order)
        if scale < 0:
            raise ValueError("Lighting: scale should be non-negative")
        self.scale = scale
        self.eigvec = np.array(
            [
                [-0.5836, -0.6948, 0.4203],
                [-0.5808, -0.0045, -0.8140],
                [-0.5675, 0.7192, 0.4009],
            ]
        )
        self.eigval = np.array([0.2175, 0.0188, 0.0045])

    def _apply_image(self, image):
        if self.scale == 0:
            return image
        alpha = np.random.normal(scale=self.scale * 255, size=3)
        out = image.astype(np.float32) + self.eigvec.dot(alpha * self.eigval)
        return _clip_to(out, image.dtype)
