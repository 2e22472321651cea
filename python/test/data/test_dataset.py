import gzip
import os
import pickle
import stat

import cv2
import numpy as np
import pytest

from data_test_utils import write_idx
from megengine.data.dataset import (
    CIFAR10,
    CIFAR100,
    MNIST,
    ArrayDataset,
    ConcatDataset,
    Dataset,
    FashionMNIST,
    ImageFolder,
    StreamDataset,
)
from megengine.data.dataset.vision.utils import DatasetFileError

FASHION_ROOT = "/usr/share/datasets/fashion-mnist"


def test_array_dataset():
    x = np.arange(12).reshape(4, 3)
    y = np.array([1, 0, 1, 0])
    ds = ArrayDataset(x, y)
    assert len(ds) == 4
    item = ds[2]
    assert isinstance(item, tuple) and len(item) == 2
    np.testing.assert_array_equal(item[0], [6, 7, 8])
    assert item[1] == 1


def test_array_dataset_length_mismatch():
    with pytest.raises(ValueError, match="first dimensions.*4, 3"):
        ArrayDataset(np.zeros((4, 2)), np.zeros(3))
    with pytest.raises(ValueError):
        ArrayDataset()


def test_concat_dataset():
    a = ArrayDataset(np.array([0, 1, 2]))
    b = ArrayDataset(np.array([10, 11]))
    ds = ConcatDataset([a, b])
    assert len(ds) == 5
    assert [int(ds[i][0]) for i in range(5)] == [0, 1, 2, 10, 11]
    assert int(ds[-1][0]) == 11
    with pytest.raises(IndexError):
        ds[5]
    assert len(a + b) == 5


def test_stream_dataset_is_not_indexable():
    class S(StreamDataset):
        def __iter__(self):
            yield from ((i,) for i in range(3))

    s = S()
    assert list(s) == [(0,), (1,), (2,)]
    with pytest.raises(TypeError):
        s[0]
    with pytest.raises(TypeError):
        len(s)


def test_dataset_is_abstract():
    with pytest.raises(TypeError):
        Dataset()


def test_mnist_reads_idx(mnist_root):
    root, train_x, test_x = mnist_root
    ds = MNIST(str(root), train=True)
    assert len(ds) == 5
    image, label = ds[2]
    assert image.shape == (4, 3, 1) and image.dtype == np.uint8
    assert label.dtype == np.int32 and int(label) == 4
    np.testing.assert_array_equal(image[..., 0], train_x[2])
    test = MNIST(str(root), train=False, download=False)
    assert len(test) == 3 and int(test[0][1]) == 9
    np.testing.assert_array_equal(test[2][0][..., 0], test_x[2])
    assert ds.meta["images"]["magic"] == 0x803 and ds.meta["labels"]["shape"] == (5,)
    assert ds.order == ("image", "image_category")


def test_mnist_read_only_root(mnist_root):
    root = mnist_root[0]
    before = {p: os.stat(root / p).st_mtime_ns for p in os.listdir(root)}
    os.chmod(root, stat.S_IRUSR | stat.S_IXUSR)
    try:
        assert len(MNIST(str(root))) == 5
    finally:
        os.chmod(root, stat.S_IRWXU)
    assert {p: os.stat(root / p).st_mtime_ns for p in os.listdir(root)} == before


def test_mnist_missing_files_says_how_to_provide(tmp_path, monkeypatch):
    # A mirror without the files: fetching fails as without network, and nothing is left.
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    monkeypatch.setattr(MNIST, "url_path", mirror.as_uri() + "/")
    root = tmp_path / "root"
    with pytest.raises(FileNotFoundError) as info:
        MNIST(str(root), download=True)
    msg = str(info.value)
    assert "could not download" in msg and "train-images-idx3-ubyte.gz" in msg
    assert str(root) in msg
    assert not os.listdir(root)
    with pytest.raises(FileNotFoundError, match="t10k-labels.*download=False"):
        MNIST(str(root), download=False)
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist"):
        FashionMNIST(str(tmp_path / "nowhere"), download=True)


def test_mnist_bad_magic_names_file(mnist_root):
    root = mnist_root[0]
    bad = root / "train-labels-idx1-ubyte.gz"
    write_idx(bad, [1, 2, 3, 4, 5], magic_override=0x0D01)
    with pytest.raises(DatasetFileError, match="train-labels-idx1-ubyte.gz.*magic"):
        MNIST(str(root))


def test_mnist_wrong_ndim_names_file(mnist_root):
    root = mnist_root[0]
    write_idx(root / "train-images-idx3-ubyte.gz", np.zeros((5, 12)))
    with pytest.raises(DatasetFileError, match="train-images-idx3-ubyte.gz.*dimensions"):
        MNIST(str(root))


def test_mnist_truncated_gzip_names_file(mnist_root):
    root = mnist_root[0]
    path = root / "train-images-idx3-ubyte.gz"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetFileError, match="train-images-idx3-ubyte.gz.*truncated"):
        MNIST(str(root))


def test_mnist_short_payload_names_file(mnist_root):
    root = mnist_root[0]
    path = root / "train-images-idx3-ubyte.gz"
    with gzip.open(path, "rb") as f:
        raw = f.read()
    with gzip.open(path, "wb") as f:
        f.write(raw[:-7])
    with pytest.raises(DatasetFileError, match="train-images-idx3-ubyte.gz.*declares"):
        MNIST(str(root))


def test_mnist_not_gzip_names_file(mnist_root):
    root = mnist_root[0]
    (root / "t10k-labels-idx1-ubyte.gz").write_bytes(b"this is not gzip data at all")
    with pytest.raises(DatasetFileError, match="t10k-labels-idx1-ubyte.gz"):
        MNIST(str(root), train=False)


def test_mnist_count_mismatch_names_file(mnist_root):
    root = mnist_root[0]
    write_idx(root / "train-labels-idx1-ubyte.gz", [1, 2, 3])
    with pytest.raises(DatasetFileError, match="train-labels-idx1-ubyte.gz.*3 labels"):
        MNIST(str(root))


@pytest.mark.skipif(not os.path.isdir(FASHION_ROOT), reason="dataset-fashion-mnist not installed")
def test_fashion_mnist_real_files():
    train = FashionMNIST()
    test = FashionMNIST(train=False)
    assert (len(train), len(test)) == (60000, 10000)
    image, label = train[0]
    assert image.shape == (28, 28, 1) and image.dtype == np.uint8 and label.dtype == np.int32
    # The published first labels of the training set (9 = ankle boot, 0 = T-shirt/top, ...).
    assert train.arrays[1][:10].tolist() == [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]
    assert np.bincount(train.arrays[1]).tolist() == [6000] * 10
    assert np.bincount(test.arrays[1]).tolist() == [1000] * 10
    assert 0 < train.arrays[0].mean() < 255


def _write_cifar(folder, name, images_chw, label_dict):
    os.makedirs(folder, exist_ok=True)
    batch = {b"data": images_chw.reshape(len(images_chw), -1)}
    batch.update(label_dict)
    with open(os.path.join(folder, name), "wb") as f:
        pickle.dump(batch, f)


def test_cifar10(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    rng = np.random.RandomState(1)
    chunks = []
    for i in range(5):
        x = rng.randint(0, 256, size=(2, 3, 32, 32)).astype(np.uint8)
        chunks.append(x)
        _write_cifar(folder, f"data_batch_{i + 1}", x, {b"labels": [i, 9 - i]})
    _write_cifar(folder, "test_batch", chunks[0], {b"labels": [7, 8]})
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({b"label_names": [b"airplane"]}, f)
    ds = CIFAR10(str(tmp_path))
    assert len(ds) == 10
    image, label = ds[3]
    assert image.shape == (32, 32, 3) and image.dtype == np.uint8 and label.dtype == np.int32
    assert int(label) == 8
    # RGB planes in the file become BGR pixels.
    np.testing.assert_array_equal(image[..., 0], chunks[1][1][2])
    np.testing.assert_array_equal(image[..., 2], chunks[1][1][0])
    test = CIFAR10(str(tmp_path), train=False)
    assert [int(test[i][1]) for i in range(2)] == [7, 8]
    assert ds.meta[b"label_names"] == [b"airplane"]


def test_cifar100(tmp_path):
    folder = tmp_path / "cifar-100-python"
    x = np.zeros((3, 3, 32, 32), np.uint8)
    x[1, 1] = 200
    labels = {b"fine_labels": [5, 50, 99], b"coarse_labels": [1, 2, 19]}
    _write_cifar(folder, "train", x, labels)
    ds = CIFAR100(str(tmp_path))
    image, fine, coarse = ds[1]
    assert (int(fine), int(coarse)) == (50, 2)
    assert image[0, 0].tolist() == [0, 200, 0]


def test_cifar_missing_and_corrupt(tmp_path, monkeypatch):
    monkeypatch.setattr(CIFAR10, "url_path", tmp_path.as_uri() + "/nowhere/")
    with pytest.raises(FileNotFoundError, match="could not download"):
        CIFAR10(str(tmp_path), train=False)
    assert not os.listdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="download=False"):
        CIFAR10(str(tmp_path), train=False, download=False)
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    (folder / "test_batch").write_bytes(b"\x80\x04garbage")
    with pytest.raises(DatasetFileError, match="test_batch"):
        CIFAR10(str(tmp_path), train=False)
    with open(folder / "test_batch", "wb") as f:
        pickle.dump({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, f)
    with pytest.raises(DatasetFileError, match="test_batch.*3072"):
        CIFAR10(str(tmp_path), train=False)
    with open(folder / "test_batch", "wb") as f:
        pickle.dump({b"data": np.zeros((2, 3072), np.uint8)}, f)
    with pytest.raises(DatasetFileError, match="test_batch.*labels"):
        CIFAR10(str(tmp_path), train=False)


def test_image_folder(tmp_path):
    red_bgr = np.zeros((3, 4, 3), np.uint8)
    red_bgr[..., 2] = 255
    for cls, n in (("b_dog", 2), ("a_cat", 1)):
        (tmp_path / cls / "sub").mkdir(parents=True)
        for i in range(n):
            cv2.imwrite(str(tmp_path / cls / "sub" / f"{i}.png"), red_bgr)
    (tmp_path / "a_cat" / "notes.txt").write_text("not an image")
    ds = ImageFolder(str(tmp_path))
    assert len(ds) == 3
    assert ds.class_dict == {"a_cat": 0, "b_dog": 1}
    image, label = ds[0]
    assert label == 0 and label.dtype == np.int32
    assert image.shape == (3, 4, 3) and image.dtype == np.uint8
    np.testing.assert_array_equal(image, red_bgr)
    assert [ds[i][1] for i in range(3)] == [0, 1, 1]
    named = ImageFolder(str(tmp_path), class_name=True)
    assert [named[i][1] for i in range(3)] == ["a_cat", "b_dog", "b_dog"]
    only_first = ImageFolder(str(tmp_path), check_valid_func=lambda p: p.endswith("0.png"))
    assert len(only_first) == 2


def test_image_folder_corrupt_image_names_file(tmp_path):
    (tmp_path / "c").mkdir()
    _, buf = cv2.imencode(".png", np.zeros((8, 8, 3), np.uint8))
    (tmp_path / "c" / "broken.png").write_bytes(buf.tobytes()[:20])
    ds = ImageFolder(str(tmp_path))
    with pytest.raises(DatasetFileError, match="broken.png"):
        ds[0]


def test_image_folder_empty(tmp_path):
    with pytest.raises(FileNotFoundError, match="no images"):
        ImageFolder(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        ImageFolder(str(tmp_path / "missing"))


def test_progress_bar_when_loading_is_slow(mnist_root, monkeypatch, capsys):
    import threading

    from megengine.utils import progress

    MNIST(str(mnist_root[0]))
    assert "%|" not in capsys.readouterr().err  # quick loads show no bar
    monkeypatch.setattr(progress, "PROGRESS_DELAY", 0)
    threads = threading.active_count()
    MNIST(str(mnist_root[0]))
    err = capsys.readouterr().err
    assert "train-images-idx3-ubyte.gz" in err and "%|" in err
    assert threading.active_count() == threads  # no tqdm monitor thread left behind
