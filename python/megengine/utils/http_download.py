"""Downloading a file to a path without ever leaving a partial or damaged one there (MegEngine's
``megengine.utils.http_download``). Used by ``megengine.hub`` and the datasets' ``download``."""

import hashlib
import os
import tempfile
import urllib.error
import urllib.request

from . import progress as _progress

__all__ = ["HTTPDownloadError", "download_from_url"]


class HTTPDownloadError(RuntimeError):
    r"""A download failed: the server answered with an error status, or sent data whose MD5
    differs from the expected one. (MegEngine's derives from ``BaseException``, which
    ``except Exception`` does not catch; this one is a ``RuntimeError``.)

    Args:
        message: what failed, with the URL.

    Examples:
        >>> from megengine.utils.http_download import HTTPDownloadError
        >>> str(HTTPDownloadError("http://x/y.pkl: 404"))
        'http://x/y.pkl: 404'
    """


def download_from_url(url, dst, *, md5=None, timeout=120, chunk_size=1 << 20):
    r"""Fetches ``url`` to the file ``dst`` and returns the data's MD5 hex digest.

    The data goes to a temporary file next to ``dst``, renamed to ``dst`` only once complete
    (and, with ``md5``, matching it), so an interrupted or damaged download leaves nothing at
    ``dst``. A progress bar shows on stderr when the download is slow. A server that cannot be
    reached (or a missing ``file://`` path) raises the :class:`OSError` of
    :func:`urllib.request.urlopen`.

    Args:
        url: what to fetch: any URL :func:`urllib.request.urlopen` opens (``https://``,
            ``http://``, ``file://``).
        dst: the file to write (``~`` is expanded); its folder is created when missing.
        md5: the expected MD5 hex digest, or None to accept any data.
        timeout: seconds to wait for the server before giving up.
        chunk_size: bytes read at a time.

    Returns:
        The MD5 hex digest of the data.

    Examples:
        >>> import os, pathlib, tempfile
        >>> from megengine.utils.http_download import download_from_url
        >>> folder = tempfile.mkdtemp()
        >>> src = pathlib.Path(folder, "src.bin")
        >>> _ = src.write_bytes(b"hello")
        >>> download_from_url(src.as_uri(), os.path.join(folder, "sub", "dst.bin"))
        '5d41402abc4b2a76b9719d911017c592'
    """
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(dst) + ".", dir=folder)
    try:
        m = hashlib.md5()
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as r:
                size = r.headers.get("Content-Length")
                total = int(size) if size else None
                with _progress.progress(total, os.path.basename(dst)) as bar:
                    for buf in iter(lambda: r.read(chunk_size), b""):
                        out.write(buf)
                        m.update(buf)
                        bar.update(len(buf))
        except urllib.error.HTTPError as e:  # the server answered, with an error
            raise HTTPDownloadError(f"{url}: {e}") from e
        if md5 is not None and m.hexdigest() != md5:
            raise HTTPDownloadError(
                f"{url}: downloaded data has MD5 {m.hexdigest()}, expected {md5} "
                "(damaged or changed file); nothing was kept"
            )
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return m.hexdigest()
