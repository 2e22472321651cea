"""MNIST and CIFAR fetch, check and unpack their raw files (from local ``file://`` mirrors: CI
has no network), and CIFAR's process/untar/bytes2array work on synthetic archives."""

import gzip
import io
import os
import pickle
import tarfile

import numpy as np
import pytest

from data_test_utils import write_idx
from megengine.data.dataset import CIFAR10, CIFAR100, MNIST, FashionMNIST
from megengine.data.dataset.vision.utils import DatasetFileError, calculate_md5, download_file


def _mnist_mirror(folder, n=3):
    folder.mkdir()
    rng = np.random.RandomState(0)
    arrays = {}
    for split in ("train", "t10k"):
        images = rng.randint(0, 256, size=(n, 28, 28)).astype(np.uint8)
        labels = rng.randint(0, 10, size=n).astype(np.uint8)
        write_idx(folder / f"{split}-images-idx3-ubyte.gz", images)
        write_idx(folder / f"{split}-labels-idx1-ubyte.gz", labels)
        arrays[split] = (images, labels)
    md5 = tuple(calculate_md5(folder / name) for name in MNIST.raw_file_name)
    return arrays, md5


@pytest.fixture
def mnist_mirror(tmp_path, monkeypatch):
    arrays, md5 = _mnist_mirror(tmp_path / "mirror")
    monkeypatch.setattr(MNIST, "url_path", (tmp_path / "mirror").as_uri() + "/")
    monkeypatch.setattr(MNIST, "raw_file_md5", md5)
    return arrays


def test_mnist_downloads_missing_files(tmp_path, mnist_mirror):
    root = tmp_path / "new" / "root"  # created by download
    ds = MNIST(str(root), train=False)
    assert sorted(os.listdir(root)) == sorted(MNIST.raw_file_name)
    images, labels = mnist_mirror["t10k"]
    assert len(ds) == 3
    np.testing.assert_array_equal(ds[2][0][..., 0], images[2])
    assert ds[2][1] == labels[2] and ds[2][1].dtype == np.int32
    # process switches split in place.
    ds.process(True)
    np.testing.assert_array_equal(ds[0][0][..., 0], mnist_mirror["train"][0][0])


def test_mnist_download_keeps_present_files(tmp_path, mnist_mirror):
    root = tmp_path / "root"
    root.mkdir()
    mine = np.full((1, 28, 28), 7, np.uint8)
    write_idx(root / "train-images-idx3-ubyte.gz", mine)
    write_idx(root / "train-labels-idx1-ubyte.gz", np.array([4], np.uint8))
    # The train split is complete: nothing is fetched.
    assert len(MNIST(str(root))) == 1 and len(os.listdir(root)) == 2
    # The test split is not: only the two missing files come, the present ones stay.
    ds = MNIST(str(root), train=False)
    assert len(ds) == 3 and len(os.listdir(root)) == 4
    assert MNIST(str(root))[0][0].max() == 7


def test_mnist_download_md5_mismatch_keeps_nothing(tmp_path, mnist_mirror, monkeypatch):
    monkeypatch.setattr(MNIST, "raw_file_md5", ("0" * 32,) * 4)
    root = tmp_path / "root"
    with pytest.raises(RuntimeError, match="MD5"):
        MNIST(str(root))
    assert os.listdir(root) == []


def test_fashion_mnist_never_downloads(tmp_path):
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist"):
        FashionMNIST(str(tmp_path), download=True)
    assert os.listdir(tmp_path) == []


def _cifar_archive(path, inner, batches):
    with tarfile.open(path, "w:gz") as tar:
        for name, batch in batches.items():
            data = pickle.dumps(batch)
            info = tarfile.TarInfo(f"{inner}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _planes(n, seed):
    return np.random.RandomState(seed).randint(0, 256, size=(n, 3, 32, 32)).astype(np.uint8)


def test_cifar10_downloads_and_unpacks(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    x = _planes(2, 1)
    batches = {
        f"data_batch_{i}": {b"data": x.reshape(2, -1), b"labels": [i, 9]} for i in range(1, 6)
    }
    batches["test_batch"] = {b"data": x.reshape(2, -1)[::-1], b"labels": [3, 4]}
    archive = mirror / "cifar-10-python.tar.gz"
    _cifar_archive(archive, "cifar-10-batches-py", batches)
    monkeypatch.setattr(CIFAR10, "url_path", mirror.as_uri() + "/")
    monkeypatch.setattr(CIFAR10, "raw_file_md5", calculate_md5(archive))
    root = tmp_path / "root"
    ds = CIFAR10(str(root), train=False)
    assert (root / "cifar-10-python.tar.gz").is_file()
    assert sorted(os.listdir(root / "cifar-10-batches-py")) == sorted(batches)
    assert len(ds) == 2 and [int(ds[i][1]) for i in range(2)] == [3, 4]
    # Planes RGB -> pixels BGR, the reversed order of the test batch.
    np.testing.assert_array_equal(ds[0][0], x[1].transpose(1, 2, 0)[..., ::-1])
    train = CIFAR10(str(root))  # unpacked already: read without fetching
    assert len(train) == 10 and [int(train[i][1]) for i in (0, 1, 8)] == [1, 9, 5]
    images, labels = train.bytes2array(["data_batch_2", "test_batch"])
    assert images.shape == (4, 32, 32, 3) and images.dtype == np.uint8
    assert labels.tolist() == [2, 9, 3, 4] and labels.dtype == np.int32


def test_cifar_archive_present_is_checked_not_fetched(tmp_path, monkeypatch):
    monkeypatch.setattr(CIFAR10, "url_path", (tmp_path / "nowhere").as_uri() + "/")
    root = tmp_path / "root"
    root.mkdir()
    _cifar_archive(root / "cifar-10-python.tar.gz", "cifar-10-batches-py", {})
    with pytest.raises(RuntimeError, match="MD5.*remove it"):
        CIFAR10(str(root))
    assert os.listdir(root) == ["cifar-10-python.tar.gz"]  # kept, not unpacked
    # The right archive, but without the split's batches.
    monkeypatch.setattr(CIFAR10, "raw_file_md5", calculate_md5(root / "cifar-10-python.tar.gz"))
    with pytest.raises(FileNotFoundError, match="does not hold them"):
        CIFAR10(str(root))


def test_cifar100_process_and_bytes2array(tmp_path):
    x = _planes(3, 2)
    batch = {b"data": x.reshape(3, -1), b"fine_labels": [1, 50, 99], b"coarse_labels": [0, 9, 19]}
    _cifar_archive(tmp_path / "cifar-100-python.tar.gz", "cifar-100-python", {"test": batch})
    # The archive is in root: download checks it (this md5 is not the real one) ...
    with pytest.raises(RuntimeError, match="MD5"):
        CIFAR100(str(tmp_path), train=False)
    # ... while process only unpacks.
    ds = CIFAR100.__new__(CIFAR100)
    ds.root = str(tmp_path)
    ds.process()
    images, fine, coarse = ds.bytes2array(["test"])
    np.testing.assert_array_equal(images, x.transpose(0, 2, 3, 1)[..., ::-1])
    assert fine.tolist() == [1, 50, 99] and coarse.tolist() == [0, 9, 19]
    assert fine.dtype == coarse.dtype == np.int32
    assert int(CIFAR100(str(tmp_path), train=False)[2][2]) == 19


def test_untar_refuses_bad_and_unsafe_archives(tmp_path):
    with pytest.raises(ValueError, match=r"\.tar\.gz"):
        CIFAR10.untar(None, str(tmp_path / "a.tar"), str(tmp_path))
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(gzip.compress(b"not a tar"))
    with pytest.raises(DatasetFileError, match="bad.tar.gz"):
        CIFAR10.untar(None, str(bad), str(tmp_path / "out"))
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises((DatasetFileError, tarfile.TarError)):
        CIFAR10.untar(None, str(evil), str(tmp_path / "out"))
    assert not (tmp_path / "escaped.txt").exists()


def test_download_file(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"x" * 3000)
    md5 = calculate_md5(src)
    dst = tmp_path / "dst.bin"
    assert download_file(src.as_uri(), str(dst), md5, chunk_size=1000) == str(dst)
    assert dst.read_bytes() == b"x" * 3000
    with pytest.raises(RuntimeError, match="MD5"):
        download_file(src.as_uri(), str(tmp_path / "other.bin"), "0" * 32)
    with pytest.raises(OSError):
        download_file((tmp_path / "missing").as_uri(), str(tmp_path / "m.bin"), md5)
    assert sorted(os.listdir(tmp_path)) == ["dst.bin", "src.bin"]
