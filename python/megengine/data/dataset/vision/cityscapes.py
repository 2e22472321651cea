"""Cityscapes: semantic segmentation of street scenes, from the dataset's folder layout."""

import os

import cv2
import numpy as np

from .meta_vision import VisionDataset
from .utils import _imread

# The labelIds of the 19 evaluated classes, in class_names order; other ids become 255.
_TRAIN_LABEL_IDS = (7, 8, 11, 12, 13, 17, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 31, 32, 33)


class Cityscapes(VisionDataset):
    r"""`Cityscapes <http://www.cityscapes-dataset.com/>`_: street scenes with class masks.

    Images are ``root/leftImg8bit/<image_set>/<city>/<stem>_leftImg8bit.png`` and masks
    ``root/<mode>/<image_set>/<city>/<stem>_<mode>_labelIds.png``. Items are tuples of the fields
    named by ``order``: ``"image"`` (``uint8`` BGR ``(H, W, 3)``), ``"mask"`` (``uint8``
    ``(H, W, 1)``: the 19 evaluated classes numbered 0..18 in ``class_names`` order, 255
    elsewhere) and ``"info"`` (``[height, width, image_path]``). Cities and files are in sorted
    order (MegEngine lists them in the file system's order).

    Args:
        root: the Cityscapes folder.
        image_set: ``"train"``, ``"val"``, ``"test"`` (or ``"train_extra"`` with ``gtCoarse``).
        mode: the annotation folder: ``"gtFine"`` or ``"gtCoarse"``.
        order: the fields of each item; ``("image",)`` when ``None``.

    Returns:
        A map-style dataset of tuples in ``order``.

    Examples:
        >>> import os, tempfile
        >>> import cv2, numpy as np
        >>> from megengine.data.dataset import Cityscapes
        >>> root = tempfile.mkdtemp()
        >>> for d in ("leftImg8bit/val/bonn", "gtFine/val/bonn"):
        ...     os.makedirs(os.path.join(root, d))
        >>> _ = cv2.imwrite(os.path.join(root, "leftImg8bit/val/bonn/b_0_leftImg8bit.png"),
        ...                 np.zeros((2, 3, 3), np.uint8))
        >>> _ = cv2.imwrite(os.path.join(root, "gtFine/val/bonn/b_0_gtFine_labelIds.png"),
        ...                 np.array([[7, 8, 0], [26, 33, 4]], np.uint8))
        >>> image, mask = Cityscapes(root, "val", "gtFine", order=("image", "mask"))[0]
        >>> image.shape, mask[..., 0]
        ((2, 3, 3), array([[  0,   1, 255],
               [ 13,  18, 255]], dtype=uint8))
    """

    supported_order = ("image", "mask", "info")
    class_names = (
        "road",
        "sidewalk",
        "building",
        "wall",
        "fence",
        "pole",
        "traffic light",
        "traffic sign",
        "vegetation",
        "terrain",
        "sky",
        "person",
        "rider",
        "car",
        "truck",
        "bus",
        "train",
        "motorcycle",
        "bicycle",
    )

    def __init__(self, root, image_set, mode, *, order=None):
        super().__init__(root, order=order, supported_order=self.supported_order)
        if not os.path.isdir(self.root):
            raise FileNotFoundError(f"Cityscapes: {self.root} is not a folder")
        self.mode = mode
        self.images_dir = os.path.join(self.root, "leftImg8bit", image_set)
        self.masks_dir = os.path.join(self.root, mode, image_set)
        if not os.path.isdir(self.images_dir):
            raise FileNotFoundError(f"Cityscapes: {self.images_dir} is not a folder")
        self.images, self.masks = [], []
        for city in sorted(os.listdir(self.images_dir)):
            img_dir = os.path.join(self.images_dir, city)
            for file_name in sorted(os.listdir(img_dir)):
                stem = file_name.split("_leftImg8bit")[0]
                self.images.append(os.path.join(img_dir, file_name))
                self.masks.append(os.path.join(self.masks_dir, city, f"{stem}_{mode}_labelIds.png"))

    def __getitem__(self, index: int) -> tuple:
        target = []
        image = None
        for k in self.order:
            if k == "image":
                image = _imread(self.images[index], cv2.IMREAD_COLOR)
                target.append(image)
            elif k == "mask":
                mask = self._trans_mask(_imread(self.masks[index], cv2.IMREAD_GRAYSCALE))
                target.append(mask[:, :, np.newaxis])
            elif k == "info":
                if image is None:
                    image = _imread(self.images[index], cv2.IMREAD_COLOR)
                target.append([image.shape[0], image.shape[1], self.images[index]])
        return tuple(target)

    def __len__(self) -> int:
        return len(self.images)

    def _trans_mask(self, mask):
        lut = np.full(256, 255, dtype=np.uint8)
        lut[list(_TRAIN_LABEL_IDS)] = np.arange(len(_TRAIN_LABEL_IDS), dtype=np.uint8)
        return lut[mask]
