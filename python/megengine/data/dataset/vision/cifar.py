"""CIFAR-10 and CIFAR-100, read from the python-pickle batches in a local folder."""

import os
import pickle
import tarfile

import numpy as np

from ..meta_dataset import _gather_columns
from .meta_vision import VisionDataset
from .utils import (
    DatasetFileError,
    _default_dataset_root,
    _extract_tar,
    _progress,
    calculate_md5,
    download_file,
)


def _load_batch(path, label_keys):
    try:
        with open(path, "rb") as f:
            d = pickle.load(f, encoding="bytes")
    except FileNotFoundError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as e:
        raise DatasetFileError(path, f"not a valid CIFAR pickle batch ({type(e).__name__}: {e})")
    if not isinstance(d, dict) or b"data" not in d or any(k not in d for k in label_keys):
        raise DatasetFileError(
            path, f"CIFAR batch lacks the keys b'data' and {', '.join(map(repr, label_keys))}"
        )
    data = np.asarray(d[b"data"], dtype=np.uint8)
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise DatasetFileError(path, f"CIFAR data has shape {data.shape}, expected (N, 3072)")
    labels = [np.asarray(d[k], dtype=np.int32) for k in label_keys]
    for k, lab in zip(label_keys, labels):
        if lab.shape != (len(data),):
            raise DatasetFileError(path, f"{len(data)} images but {k!r} holds {lab.size} labels")
    # CHW rows -> HWC, RGB -> BGR (the channel order of MegEngine's OpenCV-based transforms).
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)[..., ::-1]
    return np.ascontiguousarray(images), labels


class CIFAR10(VisionDataset):
    r"""CIFAR-10: 50000 training and 10000 test colour images of 32x32 in ten classes.

    Reads the python-pickle batches (``data_batch_1`` ... ``data_batch_5``, ``test_batch``)
    from ``root/cifar-10-batches-py``. Items are ``(image, label)``: a ``uint8`` array of shape
    ``(32, 32, 3)`` in BGR channel order, as MegEngine gives it, and an ``int32`` label.

    When the split's batches are missing and ``download`` is true, :meth:`download` fetches
    ``cifar-10-python.tar.gz`` from ``url_path`` into ``root`` (unless it is there), checks its
    MD5 and unpacks it; otherwise, or when that fails, :class:`FileNotFoundError` says what to
    put where.

    Args:
        root: folder that contains ``cifar-10-batches-py``;
            ``~/.cache/megengine/dataset/CIFAR10`` when ``None``.
        train: the training set when ``True``, the test set otherwise.
        download: whether to fetch and unpack the archive when batches are missing.
        timeout: seconds to wait for the server when fetching.

    Returns:
        A map-style dataset of ``(image, label)`` items.

    Examples:
        >>> import os, pickle, tempfile
        >>> import numpy as np
        >>> from megengine.data.dataset import CIFAR10
        >>> root = tempfile.mkdtemp()
        >>> os.mkdir(os.path.join(root, "cifar-10-batches-py"))
        >>> batch = {b"data": np.zeros((2, 3072), np.uint8), b"labels": [3, 5]}
        >>> with open(os.path.join(root, "cifar-10-batches-py", "test_batch"), "wb") as f:
        ...     pickle.dump(batch, f)
        >>> ds = CIFAR10(root, train=False)
        >>> len(ds), ds[1][0].shape, int(ds[1][1])
        (2, (32, 32, 3), 5)
    """

    url_path = "https://www.cs.toronto.edu/~kriz/"
    raw_file_name = "cifar-10-python.tar.gz"
    raw_file_md5 = "c58f30108f718f92721af3b95e74349a"
    raw_file_dir = "cifar-10-batches-py"
    train_batch = ("data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5")
    test_batch = ("test_batch",)
    meta_file = "batches.meta"
    _label_keys = (b"labels",)
    _order = ("image", "image_category")

    def __init__(
        self, root: str | None = None, train: bool = True, download: bool = True, timeout: int = 500
    ):
        super().__init__(root, order=self._order, supported_order=self._order)
        self.root = self._default_root if root is None else root
        self.timeout = timeout
        files = self.train_batch if train else self.test_batch
        if self._missing(files):
            if not download:
                raise FileNotFoundError(self._missing_message(files, "download=False"))
            self.download()
            if self._missing(files):
                raise FileNotFoundError(
                    self._missing_message(files, f"{self.raw_file_name} does not hold them")
                )
        self.arrays = self.bytes2array(files)

    def _missing(self, files):
        folder = os.path.join(self.root, self.raw_file_dir)
        return [f for f in files if not os.path.isfile(os.path.join(folder, f))]

    def _missing_message(self, files, why):
        folder = os.path.join(self.root, self.raw_file_dir)
        return (
            f"{type(self).__name__}: {folder} lacks {', '.join(self._missing(files))} and "
            f"{why}; unpack the python version of the dataset "
            f"(https://www.cs.toronto.edu/~kriz/cifar.html) so that {folder} holds its "
            "batches, or pass root= a folder that has them."
        )

    def download(self):
        r"""Fetches the archive into ``root`` unless it is there, checks its MD5, unpacks it.

        Raises:
            FileNotFoundError: the archive could not be fetched (no network, no such URL, a
                read-only ``root``).
            RuntimeError: the archive does not match its MD5 (it is kept, not deleted).

        Examples:
            >>> import os, pathlib, pickle, tarfile, tempfile
            >>> import numpy as np
            >>> from megengine.data.dataset import CIFAR10
            >>> from megengine.data.dataset.vision.utils import calculate_md5
            >>> mirror, root = tempfile.mkdtemp(), tempfile.mkdtemp()
            >>> batch = os.path.join(mirror, "test_batch")
            >>> with open(batch, "wb") as f:
            ...     pickle.dump({b"data": np.zeros((1, 3072), np.uint8), b"labels": [6]}, f)
            >>> archive = os.path.join(mirror, "cifar-10-python.tar.gz")
            >>> with tarfile.open(archive, "w:gz") as tar:
            ...     tar.add(batch, arcname="cifar-10-batches-py/test_batch")
            >>> class LocalCIFAR10(CIFAR10):  # a local mirror with its own archive
            ...     url_path = pathlib.Path(mirror).as_uri() + "/"
            ...     raw_file_md5 = calculate_md5(archive)
            >>> int(LocalCIFAR10(root, train=False)[0][1])  # fetches, unpacks, reads
            6
        """
        path = os.path.join(self.root, self.raw_file_name)
        url = self.url_path + self.raw_file_name
        if os.path.isfile(path):
            md5 = calculate_md5(path)
            if md5 != self.raw_file_md5:
                raise RuntimeError(
                    f"{path} has MD5 {md5}, expected {self.raw_file_md5}: damaged or not the "
                    f"archive of {url}; remove it to fetch it again"
                )
        else:
            try:
                os.makedirs(self.root, exist_ok=True)
                download_file(url, path, self.raw_file_md5, self.timeout)
            except OSError as e:
                raise FileNotFoundError(
                    f"{type(self).__name__}: could not download {url} into {self.root} ({e}); "
                    "put the archive or its unpacked batches there instead"
                ) from e
        self.process()

    def process(self):
        r"""Unpacks the archive ``root/<raw_file_name>`` into ``root``.

        Examples:
            >>> import os, pickle, tarfile, tempfile
            >>> import numpy as np
            >>> from megengine.data.dataset import CIFAR10
            >>> root = tempfile.mkdtemp()
            >>> batch = os.path.join(root, "test_batch")
            >>> with open(batch, "wb") as f:
            ...     pickle.dump({b"data": np.zeros((1, 3072), np.uint8), b"labels": [2]}, f)
            >>> with tarfile.open(os.path.join(root, "cifar-10-python.tar.gz"), "w:gz") as tar:
            ...     tar.add(batch, arcname="cifar-10-batches-py/test_batch")
            >>> ds = CIFAR10.__new__(CIFAR10)  # process needs only root
            >>> ds.root = root
            >>> ds.process()
            >>> os.listdir(os.path.join(root, "cifar-10-batches-py"))
            ['test_batch']
        """
        self.untar(os.path.join(self.root, self.raw_file_name), self.root)

    def untar(self, file_path, dirs):
        r"""Unpacks a ``.tar.gz`` archive into the folder ``dirs``.

        Members that would land outside ``dirs`` (absolute paths, ``..``, links) are refused.

        Args:
            file_path: the archive; its name must end in ``.tar.gz``.
            dirs: the folder to unpack into.

        Examples:
            >>> import io, os, tarfile, tempfile
            >>> from megengine.data.dataset import CIFAR10
            >>> folder = tempfile.mkdtemp()
            >>> archive = os.path.join(folder, "a.tar.gz")
            >>> with tarfile.open(archive, "w:gz") as tar:
            ...     info = tarfile.TarInfo("inner/x.txt")
            ...     info.size = 2
            ...     tar.addfile(info, io.BytesIO(b"hi"))
            >>> CIFAR10.untar(None, archive, os.path.join(folder, "out"))
            >>> open(os.path.join(folder, "out", "inner", "x.txt")).read()
            'hi'
        """
        if not file_path.endswith(".tar.gz"):
            raise ValueError(f"{file_path}: expected a .tar.gz archive")
        try:
            _extract_tar(file_path, dirs)
        except tarfile.TarError as e:
            raise DatasetFileError(file_path, f"not a valid tar.gz archive ({e})") from e

    def bytes2array(self, filenames):
        r"""Reads pickle batches of ``root/<raw_file_dir>`` into arrays.

        Args:
            filenames: the batch files, read in this order.

        Returns:
            ``(images, labels)`` for CIFAR-10, ``(images, fine_labels, coarse_labels)`` for
            CIFAR-100: ``uint8`` BGR images of shape ``(N, 32, 32, 3)`` and ``int32`` labels.

        Examples:
            >>> import os, pickle, tempfile
            >>> import numpy as np
            >>> from megengine.data.dataset import CIFAR10
            >>> root = tempfile.mkdtemp()
            >>> os.mkdir(os.path.join(root, "cifar-10-batches-py"))
            >>> for name, label in (("data_batch_1", 1), ("test_batch", 2)):
            ...     batch = {b"data": np.full((1, 3072), label, np.uint8), b"labels": [label]}
            ...     with open(os.path.join(root, "cifar-10-batches-py", name), "wb") as f:
            ...         pickle.dump(batch, f)
            >>> ds = CIFAR10(root, train=False)
            >>> images, labels = ds.bytes2array(["data_batch_1", "test_batch"])
            >>> images.shape, labels
            ((2, 32, 32, 3), array([1, 2], dtype=int32))
        """
        folder = os.path.join(self.root, self.raw_file_dir)
        images, labels = [], [[] for _ in self._label_keys]
        with _progress(len(filenames), f"{type(self).__name__} batches", unit="file") as bar:
            for name in filenames:
                im, labs = _load_batch(os.path.join(folder, name), self._label_keys)
                images.append(im)
                for acc, lab in zip(labels, labs):
                    acc.append(lab)
                bar.update(1)
        return (np.concatenate(images),) + tuple(np.concatenate(acc) for acc in labels)

    @property
    def _default_root(self):
        return os.path.join(_default_dataset_root(), type(self).__name__)

    @property
    def meta(self):
        r"""The dataset's meta file (class names), unpickled."""
        path = os.path.join(self.root, self.raw_file_dir, self.meta_file)
        try:
            with open(path, "rb") as f:
                return pickle.load(f, encoding="bytes")
        except (pickle.UnpicklingError, EOFError) as e:
            raise DatasetFileError(path, f"not a valid pickle ({e})") from e

    def __getitem__(self, index: int) -> tuple:
        return tuple(array[index] for array in self.arrays)

    def _get_batch(self, indices):
        # The DataLoader's shortcut: the collated items at indices, or None (then it reads the
        # items one by one). Only while __getitem__ is this class's.
        if type(self).__getitem__ is not CIFAR10.__getitem__:
            return None
        return _gather_columns(self.arrays, indices)

    def __len__(self) -> int:
        return len(self.arrays[0])


class CIFAR100(CIFAR10):
    r"""CIFAR-100: 50000 training and 10000 test colour images of 32x32 in 100 classes.

    Reads ``train`` or ``test`` from ``root/cifar-100-python``. Items are
    ``(image, fine_label, coarse_label)``: a ``uint8`` BGR array of shape ``(32, 32, 3)`` and
    two ``int32`` labels (100 fine classes, 20 coarse superclasses).

    Args:
        root: folder that contains ``cifar-100-python``;
            ``~/.cache/megengine/dataset/CIFAR100`` when ``None``.
        train: the training set when ``True``, the test set otherwise.
        download: whether to fetch and unpack ``cifar-100-python.tar.gz`` when the batches
            are missing, as :class:`CIFAR10` does.
        timeout: seconds to wait for the server when fetching.

    Returns:
        A map-style dataset of ``(image, fine_label, coarse_label)`` items.

    Examples:
        >>> import os, pickle, tempfile
        >>> import numpy as np
        >>> from megengine.data.dataset import CIFAR100
        >>> root = tempfile.mkdtemp()
        >>> os.mkdir(os.path.join(root, "cifar-100-python"))
        >>> batch = {b"data": np.zeros((1, 3072), np.uint8), b"fine_labels": [42],
        ...          b"coarse_labels": [7]}
        >>> with open(os.path.join(root, "cifar-100-python", "test"), "wb") as f:
        ...     pickle.dump(batch, f)
        >>> _, fine, coarse = CIFAR100(root, train=False)[0]
        >>> int(fine), int(coarse)
        (42, 7)
    """

    raw_file_name = "cifar-100-python.tar.gz"
    raw_file_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    raw_file_dir = "cifar-100-python"
    train_batch = ("train",)
    test_batch = ("test",)
    meta_file = "meta"
    _label_keys = (b"fine_labels", b"coarse_labels")
    _order = ("image", "image_category", "image_category_coarse")
