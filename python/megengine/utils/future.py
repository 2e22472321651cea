"""Future: a value that one party sets and another waits for."""

import threading

__all__ = ["Future"]


class Future:
    r"""A value set once and read after (GradManager resolves gradient futures after backward).

    Args:
        ack: when True, ``set`` blocks until the value has been read.

    Examples:
        >>> from megengine.utils.future import Future
        >>> f = Future(ack=False)  # with ack, set() would wait for a reader
        >>> f.set(3)
        >>> f.get()
        3
    """

    def __init__(self, ack=True):
        self.ready = threading.Event()
        self.ack = threading.Event() if ack else None

    def set(self, value):
        """Sets the value and wakes the readers.

        Args:
            value: anything.
        """
        self.value = value
        self.ready.set()
        if self.ack:
            self.ack.wait()

    def get(self):
        """Waits for the value.

        Returns:
            the value given to ``set``.
        """
        self.ready.wait()
        if self.ack:
            self.ack.set()
        return self.value
