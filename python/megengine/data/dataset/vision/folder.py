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

        self.check_valid = check_valid_func
        self.class_dict = self.collect_class()
        self.samples = self.collect_samples()
        if not self.samples:
            raise FileNotFoundError(f"ImageFolder: found no images under {root}")

    def collect_class(self) -> dict:
        r"""The classes: the subfolders of ``root``, sorted, numbered from 0.

        Returns:
            A dict from class folder name to its ``int32`` label.

        Examples:
            >>> import os, tempfile
            >>> import cv2, numpy as np
            >>> from megengine.data.dataset import ImageFolder
            >>> root = tempfile.mkdtemp()
            >>> for cls in ("b", "a"):
            ...     os.mkdir(os.path.join(root, cls))
            ...     _ = cv2.imwrite(os.path.join(root, cls, "x.png"), np.zeros((2, 2, 3), np.uint8))
            >>> classes = ImageFolder(root).collect_class()
            >>> {name: (int(label), label.dtype.name) for name, label in classes.items()}
            {'a': (0, 'int32'), 'b': (1, 'int32')}
        """
        classes = sorted(e.name for e in os.scandir(self.root) if e.is_dir())
        return {c: np.int32(i) for i, c in enumerate(classes)}

    def collect_samples(self) -> list:
        r"""The images of every class in ``class_dict``, found recursively, in sorted order.

        Symbolic links are followed; ``check_valid_func`` decides which files are images.

        Returns:
            A list of ``(path, label)`` pairs, or ``(path, class_name)`` with
            ``class_name=True``.

        Examples:
            >>> import os, tempfile
            >>> import cv2, numpy as np
            >>> from megengine.data.dataset import ImageFolder
            >>> root = tempfile.mkdtemp()
            >>> os.makedirs(os.path.join(root, "cat", "sub"))
            >>> for name in ("b.png", "sub/a.png"):
            ...     _ = cv2.imwrite(os.path.join(root, "cat", name), np.zeros((2, 2, 3), np.uint8))
            >>> _ = open(os.path.join(root, "cat", "notes.txt"), "w").write("not an image")
            >>> [(os.path.relpath(p, root), int(c)) for p, c in ImageFolder(root).collect_samples()]
            [('cat/b.png', 0), ('cat/sub/a.png', 0)]
        """
        samples = []
        directory = os.path.expanduser(self.root)
        for c in sorted(self.class_dict):
            folder = os.path.join(directory, c)
            if not os.path.isdir(folder):
                continue
            for dirpath, dirnames, filenames in sorted(os.walk(folder, followlinks=True)):
                dirnames.sort()
                for name in sorted(filenames):
                    path = os.path.join(dirpath, name)
                    if self.check_valid(path):
                        samples.append((path, c if self.class_name else self.class_dict[c]))
        return samples

    def __getitem__(self, index: int) -> tuple:
        path, label = self.samples[index]
        return _decode_image(path), label

    def __len__(self) -> int:
        return len(self.samples)
