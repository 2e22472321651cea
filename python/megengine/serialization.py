"""``megengine.save`` and ``megengine.load``: pickle-based checkpoints.

Tensors and Parameters are stored by value (a numpy array) with their dtype, device and kind,
as a call of ``_rebuild`` that ``load`` intercepts to move them with ``map_location`` before
they are created. A save to a path writes a temporary file in the same folder and renames it over
the target, so an interrupted save never leaves a truncated checkpoint in place of the old one.

As with any pickle, load only files you trust: unpickling can run arbitrary code.
"""

import os
import pickle
import tempfile

import numpy as np

from .tensor import Parameter, Tensor

__all__ = ["dmap", "load", "save"]

# MegEngine's class attribute: the device map of the unpickling in progress (see dmap)
Tensor.dmap_callback = None


class dmap:
    """Maps the devices of the tensors unpickled inside a ``with`` block, by plain ``pickle``
    or by :func:`load` without a ``map_location`` (an explicit one takes precedence).

    Args:
        map_location: a callable that takes the device name a tensor was saved from (e.g.
            ``"cpu0"``) and returns the device name to create it on.

    Returns:
        the context manager; ``with`` gives the dmap itself.

    Examples:
        >>> import pickle
        >>> import megengine as mge
        >>> from megengine.serialization import dmap
        >>> data = pickle.dumps(mge.Tensor([1.0, 2.0], device="cpu0"))
        >>> with dmap(lambda device: "cpu1"):
        ...     t = pickle.loads(data)
        >>> t.device
        'cpu1'
    """

    def __init__(self, map_location):
        if not callable(map_location):
            raise TypeError(
                "dmap: map_location must be a callable from a device name to a device name, "
                f"got {type(map_location).__name__}"
            )
        self.map_location = map_location
        self._outer = None

    def __enter__(self):
        # a staticmethod, so that reading it from the class gives the plain callable; the
        # outer block's map is restored on exit (MegEngine's resets it to None)
        self._outer = vars(Tensor).get("dmap_callback")
        Tensor.dmap_callback = staticmethod(self.map_location)
        return self

    def __exit__(self, exc_type, exc, tb):
        Tensor.dmap_callback = self._outer


def _rebuild(kind, array, dtype, device, map_location=None):
    """Rebuilds a saved Tensor or Parameter (a plain ``pickle.load`` calls it too)."""
    if not isinstance(array, np.ndarray) or kind not in ("Tensor", "Parameter"):
        raise pickle.UnpicklingError("malformed tensor record")
    cls = Parameter if kind == "Parameter" else Tensor
    if map_location is None:
        map_location = Tensor.dmap_callback
    return cls(array, dtype=dtype, device=_target_device(device, map_location))


def _pickler(pickle_module, f, protocol):
    class Pickler(pickle_module.Pickler):
        # A reduction (unlike a persistent id) is memoized: a tensor referenced twice is
        # saved once and comes back as one object.
        def reducer_override(self, obj):
            if isinstance(obj, Tensor):
                kind = "Parameter" if isinstance(obj, Parameter) else "Tensor"
                return (_rebuild, (kind, obj.numpy(), obj._dtype_name, obj.device))
            return NotImplemented

    return Pickler(f, protocol=protocol)


def save(obj, f, pickle_module=pickle, pickle_protocol=pickle.DEFAULT_PROTOCOL):
    r"""Saves an object (a state dict, a module, an optimizer's state ...) to a file.

    Tensors and Parameters keep their dtype, device and kind. Saving to a path is atomic:
    the data goes to a temporary file in the same folder, which then replaces ``f``.

    Args:
        obj: the object to save; anything picklable.
        f: a path (str or ``os.PathLike``) or a binary file object opened for writing.
        pickle_module: the module whose ``Pickler`` writes the data.
        pickle_protocol: the pickle protocol to use.

    Returns:
        None

    Examples:
        >>> import io
        >>> import megengine as mge
        >>> buf = io.BytesIO()
        >>> mge.save({"w": mge.Parameter([1.0, 2.0]), "step": 3}, buf)
        >>> _ = buf.seek(0)
        >>> ckpt = mge.load(buf)
        >>> type(ckpt["w"]).__name__, ckpt["w"].numpy().tolist(), ckpt["step"]
        ('Parameter', [1.0, 2.0], 3)
    """
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fspath(f)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fo:
                _pickler(pickle_module, fo, pickle_protocol).dump(obj)
                fo.flush()
                os.fsync(fo.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
            _fsync_dir(folder)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    elif hasattr(f, "write"):
        _pickler(pickle_module, f, pickle_protocol).dump(obj)
    else:
        raise TypeError(f"save: f must be a path or a writable file, got {type(f).__name__}")


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


class _DeviceError(Exception):
    """Carries an error of map_location (or of creating a tensor) out of the unpickler."""


def _target_device(device, map_location):
    if map_location is None:
        return device
    if isinstance(map_location, str):
        return map_location
    if isinstance(map_location, dict):
        # "gpu0:1" (a stream of gpu0) matches the key "gpu0" too, as in MegEngine
        return map_location.get(device, map_location.get(device.split(":")[0], device))
    if callable(map_location):
        out = map_location(device)
        if not isinstance(out, str):
            raise TypeError(
                f"load: map_location must return a device string, got {type(out).__name__}"
            )
        return out
    raise TypeError(
        "load: map_location must be None, a device string, a dict or a callable, got "
        f"{type(map_location).__name__}"
    )


def _unpickler(pickle_module, f, map_location):
    def rebuild(kind, array, dtype, device):
        if not isinstance(array, np.ndarray) or kind not in ("Tensor", "Parameter"):
            raise pickle.UnpicklingError("malformed tensor record")
        try:
            return _rebuild(kind, array, dtype, device, map_location)
        except TypeError as e:  # a bad map_location
            raise _DeviceError(e) from e
        except Exception as e:  # the device cannot be used here, not a corrupt file
            msg = f"load: cannot place a tensor saved on {device!r} ({e}); map_location can move it"
            raise _DeviceError(ValueError(msg)) from e

    class Unpickler(pickle_module.Unpickler):
        def find_class(self, module, name):
            if module == __name__ and name == "_rebuild":
                return rebuild
            return super().find_class(module, name)

    return Unpickler(f)


_CORRUPT = (
    EOFError,
    pickle.UnpicklingError,
    AttributeError,
    ImportError,
    IndexError,
    KeyError,
    TypeError,
    ValueError,
    UnicodeDecodeError,
    OverflowError,
    MemoryError,
)


def load(f, map_location=None, pickle_module=pickle):
    r"""Loads an object saved by :func:`save`.

    Args:
        f: a path (str or ``os.PathLike``) or a binary file object opened for reading.
        map_location: where the tensors go: None keeps the devices they were saved from; a
            device string (``"cpu0"``) sends all of them there; a dict maps saved devices to
            new ones (others stay); a callable takes the saved device string and returns the
            new one.
        pickle_module: the module whose ``Unpickler`` reads the data.

    Returns:
        the saved object, with Tensors and Parameters rebuilt on their devices.

    Examples:
        >>> import io
        >>> import megengine as mge
        >>> buf = io.BytesIO()
        >>> mge.save([mge.Tensor([1, 2], dtype="int32")], buf)
        >>> _ = buf.seek(0)
        >>> (t,) = mge.load(buf, map_location={"cpu0": "cpu1"})
        >>> t.device, t.dtype.name
        ('cpu1', 'int32')
    """
    if isinstance(f, (str, bytes, os.PathLike)):
        name = os.fsdecode(os.fspath(f))
        with open(name, "rb") as fo:
            return _load(fo, map_location, pickle_module, repr(name))
    if not hasattr(f, "read"):
        raise TypeError(f"load: f must be a path or a readable file, got {type(f).__name__}")
    return _load(f, map_location, pickle_module, "the file")


def _load(f, map_location, pickle_module, name):
    if not (
        map_location is None or isinstance(map_location, (str, dict)) or callable(map_location)
    ):
        _target_device("cpu0", map_location)  # raises the TypeError naming the argument
    try:
        return _unpickler(pickle_module, f, map_location).load()
    except _DeviceError as e:
        raise e.args[0] from e.__cause__
    except _CORRUPT as e:
        raise pickle.UnpicklingError(
            f"load: {name} is truncated or is not a checkpoint written by megengine.save "
            f"({type(e).__name__}: {e})"
        ) from e
