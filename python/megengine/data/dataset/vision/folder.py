"""ImageFolder: one class per subfolder, images decoded with OpenCV."""

import os

import cv2
import numpy as np

from .meta_vision import VisionDataset
from .utils import DatasetFileError

IMG_EXT = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def _decode_image(path):
    try:
        raw = np.fromfile(path, dtype=np.uint8)
    except OSError as e:
        raise DatasetFileError(path, f"cannot read ({e})") from e
    image = cv2.imdecode(raw, cv2.IMREAD_COLOR) if raw.size else None
    if image is None:
        raise DatasetFileError(
            path, "cannot decode the image (corrupt, truncated or unknown format)"
        )
    return image


class ImageFolder(VisionDataset):
    r"""Images arranged one class per subfolder: ``root/<class>/<image>``.

    Classes are the subfolders of ``root`` in sorted order, numbered from 0 (``class_dict``
    maps names to numbers). Images are found recursively under each class folder (following
    symbolic links) and decoded with OpenCV on access. Items are ``(image, label)``: a
    ``uint8`` BGR array of shape ``(H, W, 3)`` and an ``int32`` label, or with
    ``class_name=True`` the class folder's name instead of the label.

    Args:
        root: the folder of class folders.
        check_valid_func: a function of a file path that says whether it is an image to
            include; by default files with a common image extension.
        class_name: whether items carry the class name instead of its number.

    Returns:
        A map-style dataset of ``(image, label)`` or ``(image, class_name)`` items.

    Examples:
        >>> import os, tempfile
        >>> import cv2, numpy as np
        >>> from megengine.data.dataset import ImageFolder
        >>> root = tempfile.mkdtemp()
        >>> for cls in ("cat", "dog"):
        ...     os.mkdir(os.path.join(root, cls))
        ...     _ = cv2.imwrite(os.path.join(root, cls, "a.png"), np.zeros((4, 5, 3), np.uint8))
        >>> ds = ImageFolder(root)
        >>> len(ds), ds[1][0].shape, int(ds[1][1]), ImageFolder(root, class_name=True)[1][1]
        (2, (4, 5, 3), 1, 'dog')
    """

    def __init__(self, root: str, check_valid_func=None, class_name: bool = False):
        order = ("image", "image_category")
        super().__init__(root, order=order, supported_order=order)
        self.root = root
        self.class_name = class_name
        if not os.path.isdir(root):
            raise FileNotFoundError(f"ImageFolder: {root} is not a folder")
        if check_valid_func is None:

            def check_valid_func(path):
                return path.lower().endswith(IMG_EXT)

        classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
        self.class_dict = {c: np.int32(i) for i, c in enumerate(classes)}
        self.samples = []
        for c in classes:
            walk = os.walk(os.path.join(root, c), followlinks=True)
            for dirpath, dirnames, filenames in sorted(walk):
                dirnames.sort()
                for name in sorted(filenames):
                    path = os.path.join(dirpath, name)
                    if check_valid_func(path):
                        self.samples.append((path, c if class_name else self.class_dict[c]))
        if not self.samples:
            raise FileNotFoundError(f"ImageFolder: found no images under {root}")

    def __getitem__(self, index: int) -> tuple:
        path, label = self.samples[index]
        return _decode_image(path), label

    def __len__(self) -> int:
        return len(self.samples)
