"""Helpers shared by the vision datasets: default roots, reading, fetching and unpacking files."""

import hashlib
import os
import tarfile
import zlib

import cv2

from ....utils import progress as _progress_module
from ....utils.http_download import download_from_url


class DatasetFileError(ValueError):
    r"""A dataset file is missing, truncated or not in the expected format.

    The message names the file. Subclass of :class:`ValueError`.

    Examples:
        >>> from megengine.data.dataset.vision.utils import DatasetFileError
        >>> str(DatasetFileError("/data/x.gz", "truncated"))
        '/data/x.gz: truncated'
    """

    def __init__(self, path, reason):
        self.path = path
        super().__init__(f"{path}: {reason}")


def _default_dataset_root():
    return os.path.join(os.path.expanduser("~"), ".cache", "megengine", "dataset")


def _progress(total, desc, unit="B"):
    return _progress_module.progress(total, desc, unit)


def read_gzip(path, desc=None, chunk_size=1 << 20):
    r"""Reads and decompresses a gzip file, with a progress bar for slow reads.

    Args:
        path: the ``.gz`` file.
        desc: label of the progress bar; the file name by default.
        chunk_size: bytes read at a time.

    Returns:
        The decompressed bytes.

    Examples:
        >>> import gzip, os, tempfile
        >>> from megengine.data.dataset.vision.utils import read_gzip
        >>> path = os.path.join(tempfile.mkdtemp(), "a.gz")
        >>> with gzip.open(path, "wb") as f:
        ...     _ = f.write(b"hello")
        >>> read_gzip(path)
        b'hello'
    """
    try:
        size = os.path.getsize(path)
        decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
        parts = []
        with open(path, "rb") as f, _progress(size, desc or os.path.basename(path)) as bar:
            while True:
                buf = f.read(chunk_size)
                if not buf:
                    break
                parts.append(decomp.decompress(buf))
                bar.update(len(buf))
        parts.append(decomp.flush())
    except zlib.error as e:
        raise DatasetFileError(path, f"corrupt gzip data ({e})") from e
    except OSError as e:
        raise DatasetFileError(path, f"cannot read ({e})") from e
    if not decomp.eof:
        raise DatasetFileError(path, "truncated gzip file (compressed stream ends early)")
    return b"".join(parts)


def _imread(path, flags):
    image = cv2.imread(path, flags)
    if image is None:
        raise DatasetFileError(path, "cannot read or decode the image")
    return image


def calculate_md5(path, chunk_size=1 << 20):
    r"""The MD5 hex digest of a file, read in chunks.

    Args:
        path: the file.
        chunk_size: bytes read at a time.

    Returns:
        The digest as 32 lowercase hex digits.

    Examples:
        >>> import os, tempfile
        >>> from megengine.data.dataset.vision.utils import calculate_md5
        >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> with open(path, "wb") as f:
        ...     _ = f.write(b"hello")
        >>> calculate_md5(path)
        '5d41402abc4b2a76b9719d911017c592'
    """
    m = hashlib.md5()
    with open(path, "rb") as f:
        for buf in iter(lambda: f.read(chunk_size), b""):
            m.update(buf)
    return m.hexdigest()


def download_file(url, dst, md5, timeout=500, chunk_size=1 << 20):
    r"""Fetches ``url`` to ``dst`` and checks its MD5, keeping no partial or damaged file.

    The data goes to a temporary file next to ``dst``, renamed to ``dst`` only once complete
    and matching ``md5``.

    Args:
        url: what to fetch (any URL :func:`urllib.request.urlopen` opens, ``file://`` too).
        dst: the file to write; its folder must exist.
        md5: the expected MD5 hex digest.
        timeout: seconds to wait for the server before giving up.
        chunk_size: bytes read at a time.

    Returns:
        ``dst``.

    Examples:
        >>> import os, pathlib, tempfile
        >>> from megengine.data.dataset.vision.utils import download_file
        >>> folder = tempfile.mkdtemp()
        >>> src = pathlib.Path(folder, "src.bin")
        >>> _ = src.write_bytes(b"hello")
        >>> dst = download_file(src.as_uri(), os.path.join(folder, "dst.bin"),
        ...                     "5d41402abc4b2a76b9719d911017c592")
        >>> open(dst, "rb").read()
        b'hello'
    """
    download_from_url(url, dst, md5=md5, timeout=timeout, chunk_size=chunk_size)
    return dst


def _extract_tar(path, to):
    # The "data" filter refuses absolute paths, links out of `to` and device files.
    with tarfile.open(path) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(path=to, filter="data")
        else:  # Python before 3.11.4 (and 3.10.12): no filters; refuse unsafe members by hand
            root = os.path.realpath(to)
            for m in tar.getmembers():
                target = os.path.realpath(os.path.join(to, m.name))
                if os.path.commonpath([root, target]) != root or m.issym() or m.islnk():
                    raise DatasetFileError(path, f"unsafe member {m.name!r} in the archive")
            tar.extractall(path=to)
