"""Helpers shared by the vision datasets: default roots, file reading with a progress bar."""

import os
import zlib

from tqdm import tqdm


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


# Seconds of work before a progress bar appears.
PROGRESS_DELAY = 0.5


class _Bar(tqdm):
    # No monitor thread: a thread left running would make every later fork() of DataLoader
    # workers happen in a multi-threaded process.
    monitor_interval = 0


def _progress(total, desc, unit="B"):
    # The bar appears only when the work takes longer than PROGRESS_DELAY.
    return _Bar(
        total=total,
        desc=desc,
        unit=unit,
        unit_scale=unit == "B",
        delay=PROGRESS_DELAY,
        ncols=80,
        leave=False,
    )


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
