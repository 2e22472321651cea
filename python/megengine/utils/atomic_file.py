"""Writing a file so that a crash never leaves half of it in place of the old one: the data goes
to a temporary file in the same folder, which is synced and then renamed over the target. Used by
``megengine.save``, ``trace.dump`` and ``Network.dump``."""

import os
import tempfile


def write_atomic(path, write):
    """Calls ``write(fileobj)`` on a temporary file beside ``path``, then renames it over ``path``.

    The file gets the permissions a plain ``open(path, "wb")`` would give (``0o666`` less the
    umask), and the rename is synced to the folder where the platform allows it.

    Args:
        path: the target, a str, bytes or ``os.PathLike``.
        write: called with the binary file object to fill.

    Returns:
        None

    Examples:
        >>> import os, tempfile
        >>> from megengine.utils.atomic_file import write_atomic
        >>> target = os.path.join(tempfile.mkdtemp(), "out.bin")
        >>> write_atomic(target, lambda f: f.write(b"abc"))
        >>> open(target, "rb").read()
        b'abc'
    """
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
        _fsync_dir(folder)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_dump(file, data, append, who):
    """Writes a dumped model's bytes ``data`` to ``file``: a path (atomically, or appended to when
    ``append``) or a binary file object; ``who`` names the dumping function in the TypeError for
    anything else."""
    if isinstance(file, (str, os.PathLike)):
        if append:
            with open(file, "ab") as f:
                f.write(data)
        else:
            write_atomic(file, lambda f: f.write(data))
    elif hasattr(file, "write"):
        file.write(data)
    else:
        raise TypeError(f"{who}: file must be a path or a binary file object, got {file!r}")


def _fsync_dir(folder):
    """Makes the rename durable (best effort: not every platform can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
