"""CIFAR-10 and CIFAR-100, read from the python-pickle batches in a local folder."""

import os
import pickle

import numpy as np

from ..meta_dataset import _gather_columns
from .meta_vision import VisionDataset
from .utils import DatasetFileError, _default_dataset_root, _progress


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
    This build cannot download; missing files raise :class:`FileNotFoundError`.

    Args:
        root: folder that contains ``cifar-10-batches-py``;
            ``~/.cache/megengine/dataset/CIFAR10`` when ``None``.
        train: the training set when ``True``, the test set otherwise.
        download: kept for MegEngine compatibility; files are never fetched.
        timeout: kept for MegEngine compatibility; unused.

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
        self.download = download
        self.timeout = timeout
        folder = os.path.join(self.root, self.raw_file_dir)
        files = self.train_batch if train else self.test_batch
        missing = [f for f in files if not os.path.isfile(os.path.join(folder, f))]
        if missing:
            raise FileNotFoundError(
                f"{type(self).__name__}: {folder} lacks {', '.join(missing)}. This build cannot "
                "download datasets (download=True does not fetch anything); unpack the "
                "python version of the dataset (https://www.cs.toronto.edu/~kriz/cifar.html) "
                f"so that {folder} holds its batches, or pass root= a folder that has them."
            )
        self.arrays = self._read(folder, files)

    def _read(self, folder, files):
        images, labels = [], [[] for _ in self._label_keys]
        with _progress(len(files), f"{type(self).__name__} batches", unit="file") as bar:
            for name in files:
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
        download: kept for MegEngine compatibility; files are never fetched.
        timeout: kept for MegEngine compatibility; unused.

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

    raw_file_dir = "cifar-100-python"
    train_batch = ("train",)
    test_batch = ("test",)
    meta_file = "meta"
    _label_keys = (b"fine_labels", b"coarse_labels")
    _order = ("image", "image_category", "image_category_coarse")
