"""ImageNet (ILSVRC2012): an ImageFolder over the train or val images, unpacked if need be."""

import os
import pickle
from typing import ClassVar

from .folder import ImageFolder
from .utils import _default_dataset_root, _extract_tar, calculate_md5


class ImageNet(ImageFolder):
    r"""ImageNet 2012 classification: ``root/train/<wnid>/*.JPEG`` or ``root/val/<wnid>/*.JPEG``.

    When the split's folder is missing, it is made from the official archives in ``root``
    (all of ``ILSVRC2012_img_train.tar``, ``ILSVRC2012_img_val.tar`` and
    ``ILSVRC2012_devkit_t12.tar.gz`` must be there, see :meth:`check_raw_file`; each is checked
    against its MD5 first): the train archive holds one tar per class, unpacked into a folder
    each; the val images are sorted into class folders by the devkit's ground truth, which
    needs ``ILSVRC2012_devkit_t12/meta.pkl`` or SciPy to read ``data/meta.mat``. The devkit
    folder ``root/ILSVRC2012_devkit_t12`` is unpacked from its archive when missing. Items are
    :class:`ImageFolder`'s: ``(image, label)``, labels numbering the sorted class folders.

    Args:
        root: the ImageNet folder; ``~/.cache/megengine/dataset/ImageNet`` when ``None``.
        train: the training split when ``True``, the validation split otherwise.
        kwargs: passed to :class:`ImageFolder` (``check_valid_func``, ``class_name``).

    Returns:
        A map-style dataset of ``(image, label)`` items.

    Examples:
        >>> import os, tempfile
        >>> import cv2, numpy as np
        >>> from megengine.data.dataset import ImageNet
        >>> root = tempfile.mkdtemp()
        >>> os.makedirs(os.path.join(root, "ILSVRC2012_devkit_t12"))
        >>> for wnid in ("n01440764", "n01443537"):
        ...     os.makedirs(os.path.join(root, "val", wnid))
        ...     _ = cv2.imwrite(os.path.join(root, "val", wnid, "1.png"), np.zeros((3, 2, 3), np.uint8))
        >>> ds = ImageNet(root, train=False)
        >>> len(ds), ds[1][0].shape, int(ds[1][1]), ds.check_raw_file()
        (2, (3, 2, 3), 1, False)
    """

    raw_file_meta: ClassVar[dict] = {
        "train": ("ILSVRC2012_img_train.tar", "1d675b47d978889d74fa0da5fadfb00e"),
        "val": ("ILSVRC2012_img_val.tar", "29b22e2961454d5413ddabcf34fc5622"),
        "devkit": ("ILSVRC2012_devkit_t12.tar.gz", "fa75699e90414af021442c21a62c3abf"),
    }
    default_train_dir = "train"
    default_val_dir = "val"
    default_devkit_dir = "ILSVRC2012_devkit_t12"

    def __init__(self, root: str | None = None, train: bool = True, **kwargs):
        self.root = self._default_root if root is None else root
        # ImageFolder makes root the split's folder; the archives stay found here.
        self._archive_root = self.root
        if not os.path.isdir(self.root):
            raise FileNotFoundError(f"ImageNet: {self.root} is not a folder")
        self.train = train
        self.devkit_dir = os.path.join(self.root, self.default_devkit_dir)
        if not os.path.exists(self.devkit_dir):
            self._unpack("devkit", self.root)
        split_dir = self.default_train_dir if train else self.default_val_dir
        self.target_folder = os.path.join(self.root, split_dir)
        if not os.path.exists(self.target_folder):
            if not self.check_raw_file():
                raise FileNotFoundError(
                    f"ImageNet: {self.target_folder} does not exist, and {self.root} lacks "
                    "the archives to make it from: "
                    + ", ".join(name for name, _ in self.raw_file_meta.values())
                )
            if train:
                self._prepare_train()
            else:
                self._prepare_val()
        super().__init__(self.target_folder, **kwargs)

    @property
    def _default_root(self):
        return os.path.join(_default_dataset_root(), type(self).__name__)

    def check_raw_file(self) -> bool:
        r"""Whether ``root`` holds all three official archives (by name; MD5s are checked on
        unpacking).

        Returns:
            ``True`` when ``ILSVRC2012_img_train.tar``, ``ILSVRC2012_img_val.tar`` and
            ``ILSVRC2012_devkit_t12.tar.gz`` all exist in ``root``.

        Examples:
            >>> import os, tempfile
            >>> import cv2, numpy as np
            >>> from megengine.data.dataset import ImageNet
            >>> root = tempfile.mkdtemp()
            >>> os.makedirs(os.path.join(root, "ILSVRC2012_devkit_t12"))
            >>> os.makedirs(os.path.join(root, "train", "n01"))
            >>> _ = cv2.imwrite(os.path.join(root, "train/n01/a.png"), np.zeros((1, 1, 3), np.uint8))
            >>> ImageNet(root).check_raw_file()
            False
        """
        return all(
            os.path.exists(os.path.join(self._archive_root, name))
            for name, _ in self.raw_file_meta.values()
        )

    def _unpack(self, key, to):
        name, md5 = self.raw_file_meta[key]
        path = os.path.join(self._archive_root, name)
        if not os.path.exists(path):
            raise FileNotFoundError(f"ImageNet: {path} does not exist")
        if calculate_md5(path) != md5:
            raise RuntimeError(f"ImageNet: {path} fails its MD5 check ({md5}); it may be damaged")
        _extract_tar(path, to)

    @property
    def valid_ground_truth(self):
        r"""The devkit's validation labels (ILSVRC2012 ids, 1..1000), in image-name order."""
        path = os.path.join(self.devkit_dir, "data", "ILSVRC2012_validation_ground_truth.txt")
        with open(path) as f:
            return [int(line) for line in f if line.strip()]

    @property
    def meta(self):
        r"""``(idx_to_wnid, wnid_to_classes)`` from the devkit, cached in ``meta.pkl``."""
        cache = os.path.join(self.devkit_dir, "meta.pkl")
        if os.path.exists(cache):
            with open(cache, "rb") as f:
                return pickle.load(f)
        try:
            import scipy.io
        except ImportError:
            raise ImportError(
                f"ImageNet: reading the devkit's meta.mat needs SciPy (or a {cache})"
            ) from None
        synsets = scipy.io.loadmat(
            os.path.join(self.devkit_dir, "data", "meta.mat"), squeeze_me=True
        )["synsets"]
        leaves = [s for s in synsets if s[4] == 0]  # no children: the 1000 classes
        idx_to_wnid = {s[0]: s[1] for s in leaves}
        wnid_to_classes = {s[1]: tuple(s[2].split(", ")) for s in leaves}
        with open(cache, "wb") as f:
            pickle.dump((idx_to_wnid, wnid_to_classes), f)
        return idx_to_wnid, wnid_to_classes

    def _prepare_train(self):
        self._unpack("train", self.target_folder)
        for name in sorted(os.listdir(self.target_folder)):
            path = os.path.join(self.target_folder, name)
            if name.endswith(".tar"):
                _extract_tar(path, os.path.splitext(path)[0])
                os.remove(path)

    def _prepare_val(self):
        self._unpack("val", self.target_folder)
        id_to_wnid = self.meta[0]
        wnids = [id_to_wnid[i] for i in self.valid_ground_truth]
        images = sorted(os.listdir(self.target_folder))
        if len(images) != len(wnids):
            raise RuntimeError(
                f"ImageNet: {len(images)} validation images but {len(wnids)} ground-truth labels"
            )
        for wnid in set(wnids):
            os.makedirs(os.path.join(self.target_folder, wnid), exist_ok=True)
        for wnid, name in zip(wnids, images):
            os.replace(
                os.path.join(self.target_folder, name), os.path.join(self.target_folder, wnid, name)
            )
