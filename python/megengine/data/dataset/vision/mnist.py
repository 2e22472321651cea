"""MNIST and Fashion-MNIST, read from the four IDX ``.gz`` files."""

import os
import struct

import numpy as np

from ..meta_dataset import _gather_columns
from .meta_vision import VisionDataset
from .utils import DatasetFileError, _default_dataset_root, download_file, read_gzip

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
    ``t10k-images-idx3-ubyte.gz`` and ``t10k-labels-idx1-ubyte.gz`` from ``root``. Items are
    ``(image, label)``: a ``uint8`` array of shape ``(28, 28, 1)`` and an ``int32`` label.

    When the split's two files are there, ``root`` may be read-only: nothing is written. When
    they are missing and ``download`` is true, :meth:`download` fetches the missing files from
    ``url_path`` (MegEngine's mirror), checking their MD5; otherwise, or when fetching fails,
    it raises :class:`FileNotFoundError` that says which files to put where.

    Args:
        root: folder with the four files; ``~/.cache/megengine/dataset/MNIST`` when ``None``.
        train: the training set when ``True``, the test set otherwise.
        download: whether to fetch missing files.
        timeout: keyword-only: seconds to wait for the server when fetching.

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

    # The mirror MegEngine 1.11+ fetches from, as the MNIST authors ask.
    url_path = "https://ossci-datasets.s3.amazonaws.com/mnist/"
    raw_file_name = (
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    )
    raw_file_md5 = (
        "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "d53e105ee54ea40749a09fcbcd1e9432",
        "9fb629c4189551a2d022fa330f9573f3",
        "ec29112dd5afa0611ce80d1b7f02629c",
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
        self.timeout = timeout
        needed = self.raw_file_name[:2] if train else self.raw_file_name[2:]
        if not all(os.path.isfile(os.path.join(self.root, f)) for f in needed):
            if not download:
                raise FileNotFoundError(
                    f"{type(self).__name__}: {self.root} lacks {', '.join(self._missing())} "
                    f"and download=False; {self._how_to_get}."
                )
            self.download()
        self.process(train)

    def _missing(self):
        return [f for f in self.raw_file_name if not os.path.isfile(os.path.join(self.root, f))]

    def download(self):
        r"""Fetches the raw files missing from ``root`` (creating it), checking their MD5.

        Files already in ``root`` are kept as they are. A file is written only once complete
        and matching its MD5.

        Raises:
            FileNotFoundError: a file could not be fetched (no network, no such URL, a
                read-only ``root``); it says where to put the files instead.
            RuntimeError: a fetched file does not match its MD5.

        Examples:
            >>> import gzip, os, pathlib, struct, tempfile
            >>> from megengine.data.dataset import MNIST
            >>> mirror, root = tempfile.mkdtemp(), tempfile.mkdtemp()
            >>> def write(name, header, payload):
            ...     with gzip.open(os.path.join(mirror, name), "wb") as f:
            ...         _ = f.write(struct.pack(header[0], *header[1:]) + payload)
            >>> for split in ("train", "t10k"):
            ...     write(f"{split}-images-idx3-ubyte.gz", (">iiii", 0x803, 1, 28, 28), bytes(784))
            ...     write(f"{split}-labels-idx1-ubyte.gz", (">ii", 0x801, 1), bytes([4]))
            >>> from megengine.data.dataset.vision.utils import calculate_md5
            >>> class LocalMNIST(MNIST):  # a local mirror with its own files
            ...     url_path = pathlib.Path(mirror).as_uri() + "/"
            ...     raw_file_md5 = tuple(calculate_md5(os.path.join(mirror, f))
            ...                          for f in MNIST.raw_file_name)
            >>> ds = LocalMNIST(root)  # fetches, then reads
            >>> sorted(os.listdir(root)) == sorted(MNIST.raw_file_name), int(ds[0][1])
            (True, 4)
        """
        try:
            os.makedirs(self.root, exist_ok=True)
            for name, md5 in zip(self.raw_file_name, self.raw_file_md5):
                path = os.path.join(self.root, name)
                if not os.path.isfile(path):
                    download_file(self.url_path + name, path, md5, self.timeout)
        except OSError as e:
            raise FileNotFoundError(
                f"{type(self).__name__}: could not download into {self.root} ({e}); it lacks "
                f"{', '.join(self._missing())}: {self._how_to_get}."
            ) from e

    @property
    def _default_root(self):
        return os.path.join(_default_dataset_root(), type(self).__name__)

    def process(self, train):
        r"""Reads the split's two IDX files into ``arrays`` (images, labels) and ``meta``.

        Args:
            train: the training files when ``True``, the test files otherwise.

        Examples:
            >>> import gzip, os, struct, tempfile
            >>> from megengine.data.dataset import MNIST
            >>> root = tempfile.mkdtemp()
            >>> def write(name, header, payload):
            ...     with gzip.open(os.path.join(root, name), "wb") as f:
            ...         _ = f.write(struct.pack(header[0], *header[1:]) + payload)
            >>> for split, n in (("train", 1), ("t10k", 2)):
            ...     write(f"{split}-images-idx3-ubyte.gz", (">iiii", 0x803, n, 28, 28), bytes(n * 784))
            ...     write(f"{split}-labels-idx1-ubyte.gz", (">ii", 0x801, n), bytes(range(n)))
            >>> ds = MNIST(root)
            >>> ds.process(False)  # now the test split
            >>> len(ds), ds.meta["labels"]["shape"]
            (2, (2,))
        """
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
        download: kept for MegEngine compatibility; files are never fetched (see
            :meth:`download`).
        timeout: unused, as nothing is fetched.

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

    def download(self):
        r"""Refuses: this build knows no checked source of the Fashion-MNIST files.

        Raises:
            FileNotFoundError: always, saying where to get the files.

        Examples:
            >>> import tempfile
            >>> from megengine.data.dataset import FashionMNIST
            >>> FashionMNIST(tempfile.mkdtemp(), download=True)  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            FileNotFoundError: FashionMNIST: ... lacks ...; install Debian's dataset-fashion-mnist ...
        """
        raise FileNotFoundError(
            f"{type(self).__name__}: {self.root} lacks {', '.join(self._missing())}; "
            f"{self._how_to_get}."
        )
