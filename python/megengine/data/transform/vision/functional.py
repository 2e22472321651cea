"""Image functions used by the vision transforms. Images are ``(H, W, C)`` arrays, colour images in
BGR channel order (OpenCV's)."""

import collections.abc

import cv2
import numpy as np


def _keep_channels(fn, image, *args, **kwargs):
    # OpenCV drops a trailing channel axis of size 1; put it back.
    out = fn(image, *args, **kwargs)
    if image.ndim == 3 and out.ndim == 2:
        out = out[:, :, np.newaxis]
    return out


def pad(input, size, value):
    r"""Pads an image on its four sides with a constant.

    Args:
        input: image of shape ``(H, W, C)`` or ``(H, W)``.
        size: ``(top, bottom, left, right)`` amounts, or ``(bottom, right)``.
        value: padding value: a number, or one number per channel.

    Returns:
        The padded image; ``float32`` when ``value`` has a float and the image is integral.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform.vision import functional as F
        >>> F.pad(np.ones((1, 1, 1), np.uint8), (1, 0, 0, 1), 0)[..., 0].tolist()
        [[0, 0], [1, 0]]
    """
    if len(size) == 2:
        size = (0, size[0], 0, size[1])
    top, bottom, left, right = (int(s) for s in size)
    if min(top, bottom, left, right) < 0:
        raise ValueError(f"pad sizes should be non-negative, got {size}")
    values = np.asarray(value)
    if values.dtype.kind == "f" and input.dtype.kind in "iub":
        input = input.astype(np.float32)
    spec = ((top, bottom), (left, right)) + ((0, 0),) * (input.ndim - 2)
    if values.ndim == 0:
        return np.pad(input, spec, mode="constant", constant_values=values.item())
    if input.ndim != 3 or values.shape != (input.shape[2],):
        raise ValueError(
            f"pad value should be a number or one per channel, got {value!r} for an image of "
            f"shape {input.shape}"
        )
    out = np.empty(
        (input.shape[0] + top + bottom, input.shape[1] + left + right, input.shape[2]),
        dtype=input.dtype,
    )
    out[...] = values.astype(input.dtype)
    out[top : top + input.shape[0], left : left + input.shape[1]] = input
    return out


def flip(image, flipCode):
    r"""Flips an image.

    Args:
        image: image of shape ``(H, W, C)`` or ``(H, W)``.
        flipCode: 1 flips horizontally (left-right), 0 vertically (up-down), -1 both, as in
            ``cv2.flip``.

    Returns:
        The flipped image (a new contiguous array).

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform.vision import functional as F
        >>> F.flip(np.array([[1, 2], [3, 4]]), 1).tolist()
        [[2, 1], [4, 3]]
    """
    if flipCode == 1:
        out = image[:, ::-1]
    elif flipCode == 0:
        out = image[::-1]
    elif flipCode == -1:
        out = image[::-1, ::-1]
    else:
        raise ValueError(f"flipCode should be 1, 0 or -1, got {flipCode!r}")
    return np.ascontiguousarray(out)


def resize(input, size, interpolation=cv2.INTER_LINEAR):
    r"""Resizes an image with OpenCV.

    Args:
        input: image of shape ``(H, W, C)`` or ``(H, W)``.
        size: target ``(height, width)``.
        interpolation: an OpenCV interpolation flag, e.g. ``cv2.INTER_LINEAR``.

    Returns:
        The resized image, with the input's number of dimensions.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform.vision import functional as F
        >>> F.resize(np.zeros((4, 6, 1), np.uint8), (2, 3)).shape
        (2, 3, 1)
    """
    h, w = size
    if h <= 0 or w <= 0:
        raise ValueError(f"resize target size should be positive, got {size}")
    return _keep_channels(cv2.resize, input, (int(w), int(h)), interpolation=interpolation)


def to_gray(image):
    r"""Converts a BGR image to grey, keeping a channel axis of size 1.

    Args:
        image: image of shape ``(H, W, 3)`` (BGR) or ``(H, W, 1)`` (already grey).

    Returns:
        The grey image, shape ``(H, W, 1)``.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform.vision import functional as F
        >>> round(float(F.to_gray(np.array([[[0, 0, 100]]], np.float32))[0, 0, 0]), 3)
        29.9
    """
    if image.ndim == 3 and image.shape[2] == 1:
        return image
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"to_gray expects an (H, W, 3) BGR image, got shape {image.shape}")
    return cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)[:, :, np.newaxis]


def to_bgr(image):
    r"""Converts a grey image to BGR by repeating its channel.

    Args:
        image: image of shape ``(H, W, 1)`` or ``(H, W)``.

    Returns:
        The image of shape ``(H, W, 3)``.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.transform.vision import functional as F
        >>> F.to_bgr(np.zeros((2, 2, 1), np.uint8)).shape
        (2, 2, 3)
    """
    if image.ndim == 2:
        image = image[:, :, np.newaxis]
    if image.shape[2] != 1:
        raise ValueError(f"to_bgr expects a grey image, got shape {image.shape}")
    return np.repeat(image, 3, axis=2)


def _as_pair(value, name):
    if isinstance(value, (int, np.integer)):
        return int(value), int(value)
    if isinstance(value, collections.abc.Sequence) and len(value) == 2:
        return int(value[0]), int(value[1])
    raise ValueError(f"{name} should be an int or a (height, width) pair, got {value!r}")
