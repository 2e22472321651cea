"""MNIST and Fashion-MNIST, read from the four IDX ``.gz`` files."""

import os
import struct

import numpy as np

from ..meta_dataset import _gather_columns
from .meta_vision import VisionDataset
from .utils import DatasetFileError, _default_dataset_root, read_gzip

_IDX_UBYTE = 0x08


def parse_idx(path, expected_ndim):
    r"""Parses an unsigned-byte IDX file (gzip-compressed), checking its header.

    Args:
        path: the ``.gz`` file.
        expected_ndim: number of dimensions the header must declare (1 for labels, 3 for
            images).

    Returns:
        A ``(meta, array)`` pair: the header fields and the ``uint8`` data of the declared shape.

    Examples:
        >>> import gzip, os, struct, tempfile
        >>> from megengine.data.dataset.vision.mnist import parse_idx
        >>> path = os.path.join(tempfile.mkdtemp(), "labels.gz")
        >>> with gzip.open(path, "wb") as f:
        ...     _ = f.write(struct.pack(">BBBBi", 0, 0, 8, 1, 3) + bytes([7, 1, 2]))
        >>> meta, labels = parse_idx(path, 1)
        >>> meta["shape"], labels.tolist()
        ((3,), [7, 1, 2])
    """
    data = read_gzip(path)
    if len(data) < 4:
        raise DatasetFileError(path, "too short for an IDX header")
    zero0, zero1, dtype_code, ndim = struct.unpack_from(">BBBB", data, 0)
    if zero0 != 0 or zero1 != 0 or dtype_code != _IDX_UBYTE:
        raise DatasetFileError(
            path,
            f"bad IDX magic number 0x{int.from_bytes(data[:4], 'big'):08x} "
            "(expected an unsigned-byte IDX file)",
        )
    if ndim != expected_ndim:
        raise DatasetFileError(path, f"IDX file has {ndim} dimensions, expected {expected_ndim}")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DatasetFileError(path, "truncated IDX header")
    shape = struct.unpack_from(">" + "i" * ndim, data, 4)
    count = int(np.prod(shape, dtype=np.int64))
    if any(s < 0 for s in shape) or len(data) - header != count:
        raise DatasetFileError(
            path,
            f"IDX header declares shape {shape} ({count} bytes) but the file holds "
            f"{len(data) - header} bytes of data",
        )
    array = np.frombuffer(data, dtype=np.uint8, count=count, offset=header).reshape(shape).copy()
    meta = {"magic": int.from_bytes(data[:4], "big"), "shape": tuple(shape)}
    return meta, array


class MNIST(VisionDataset):
    r"""The MNIST handwritten digits: 60000 training and 10000 test images of 28x28.

    Reads ``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
    ``t10k-images-idx3-ubyte.gz`` and ``t10k-labels-idx1-ubyte.gz`` from ``root``; the root
    may be read-only, nothing is written there. Items are ``(image, label)``: a ``uint8`` array
    of shape ``(28, 28, 1)`` and an ``int32`` label.

    This build cannot download: when the files are missing it raises
    :class:`FileNotFoundError` that says which files to put where.

    Args:
        root: folder with the four files; ``~/.cache/megengine/dataset/MNIST`` when ``None``.
        train: the training set when ``True``, the test set otherwise.
        download: kept for MegEngine compatibility; files are never fetched, and missing files
            raise whatever its value.
        timeout: keyword-only, kept for older MegEngine scripts (the download timeout); unused.

    Returns:
        A map-style dataset of ``(image, label)`` items.

    Examples:
        >>> import gzip, os, struct, tempfile
        >>> from megengine.data.dataset import MNIST
        >>> root = tempfile.mkdtemp()
        >>> def write(name, header, payload):
        ...     with gzip.open(os.path.join(root, name), "wb") as f:
        ...         _ = f.write(struct.pack(header[0], *header[1:]) + payload)
        >>> for split in ("train", "t10k"):
        ...     write(f"{split}-images-idx3-ubyte.gz", (">iiii", 0x803, 2, 28, 28), bytes(2 * 784))
        ...     write(f"{split}-labels-idx1-ubyte.gz", (">ii", 0x801, 2), bytes([7, 3]))
        >>> ds = MNIST(root, train=True)
        >>> image, label = ds[1]
        >>> len(ds), image.shape, image.dtype, int(label), label.dtype
        (2, (28, 28, 1), dtype('uint8'), 3, dtype('int32'))
    """

    raw_file_name = (
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    )
    _how_to_get = (
        "copy the four IDX .gz files of MNIST (from http://yann.lecun.com/exdb/mnist/ or a "
        "mirror) into that folder, or pass root= a folder that has them"
    )

    def __init__(
        self,
        root: str | None = None,
        train: bool = True,
        download: bool = True,
        *,
        timeout: int = 500,
    ):
        super().__init__(
            root,
            order=("image", "image_category"),
            supported_order=("image", "image_category"),
        )
        self.root = self._default_root if root is None else root
        self.train = train
        self.download = download
        self.timeout = timeout
        missing = [f for f in self.raw_file_name if not os.path.isfile(os.path.join(self.root, f))]
        needed = self.raw_file_name[:2] if train else self.raw_file_name[2:]
        if any(f in missing for f in needed):
            raise FileNotFoundError(
                f"{type(self).__name__}: {self.root} lacks {', '.join(missing)}. This build "
                "cannot download datasets (download=True does not fetch anything); "
                + self._how_to_get
                + "."
            )
        self._process(train)

    @property
    def _default_root(self):
        return os.path.join(_default_dataset_root(), type(self).__name__)

    def _process(self, train):
        images_file, labels_file = self.raw_file_name[:2] if train else self.raw_file_name[2:]
        images_path = os.path.join(self.root, images_file)
        labels_path = os.path.join(self.root, labels_file)
        images_meta, images = parse_idx(images_path, 3)
        labels_meta, labels = parse_idx(labels_path, 1)
        if len(images) != len(labels):
            raise DatasetFileError(
                labels_path, f"holds {len(labels)} labels but {images_path} holds {len(images)}"
            )
        self._meta_data = {"images": images_meta, "labels": labels_meta}
        self.arrays = (images[..., np.newaxis], labels.astype(np.int32))

    @property
    def meta(self):
        r"""The IDX headers of the images and labels files, as a dict."""
        return self._meta_data

    def __getitem__(self, index: int) -> tuple:
        return tuple(array[index] for array in self.arrays)

    def _get_batch(self, indices):
        # The DataLoader's shortcut: the collated items at indices, or None (then it reads the
        # items one by one). Only while __getitem__ is this class's.
        if type(self).__getitem__ is not MNIST.__getitem__:
            return None
        return _gather_columns(self.arrays, indices)

    def __len__(self) -> int:
        return len(self.arrays[0])


class FashionMNIST(MNIST):
    r"""Fashion-MNIST: 28x28 grey images of ten kinds of clothing, in MNIST's file format.

    Identical to :class:`MNIST` except for the default root, ``/usr/share/datasets/fashion-mnist``
    (Debian's ``dataset-fashion-mnist`` package).

    Args:
        root: folder with the four IDX ``.gz`` files; Debian's location when ``None``.
        train: the training set when ``True``, the test set otherwise.
        download: kept for MegEngine compatibility; files are never fetched.
        timeout: kept for MegEngine compatibility; unused.

    Returns:
        A map-style dataset of ``(image, label)`` items.

    Examples:
        >>> from megengine.data.dataset import FashionMNIST
        >>> test_set = FashionMNIST(train=False)  # from Debian's dataset-fashion-mnist
        >>> len(test_set), int(test_set[0][1])  # 9: ankle boot
        (10000, 9)
    """

    default_root = "/usr/share/datasets/fashion-mnist"
    _how_to_get = (
        "install Debian's dataset-fashion-mnist package (apt-get install dataset-fashion-mnist), "
        "or copy the four IDX .gz files of Fashion-MNIST into that folder, or pass root= a "
        "folder that has them"
    )

    @property
    def _default_root(self):
        return self.default_root
