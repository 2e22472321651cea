"""Progress bars for slow file work (downloads, reading datasets): tqdm, shown only when the
work takes longer than :data:`PROGRESS_DELAY` seconds."""

from tqdm import tqdm

# Seconds of work before a progress bar appears.
PROGRESS_DELAY = 0.5


class _Bar(tqdm):
    # No monitor thread: a thread left running would make every later fork() of DataLoader
    # workers happen in a multi-threaded process.
    monitor_interval = 0


def progress(total, desc, unit="B"):
    r"""A progress bar (a context manager with ``update(n)``) that appears only for slow work.

    Args:
        total: the amount of work, or None where it is unknown.
        desc: the label.
        unit: ``"B"`` (bytes, shown scaled: kB, MB, ...) or another unit name.

    Returns:
        A :class:`tqdm.tqdm` bar.

    Examples:
        >>> from megengine.utils.progress import progress
        >>> with progress(3, "files", unit="file") as bar:
        ...     bar.update(3)
    """
    return _Bar(
        total=total,
        desc=desc,
        unit=unit,
        unit_scale=unit == "B",
        delay=PROGRESS_DELAY,
        ncols=80,
        leave=False,
    )
