"""``megengine.save`` and ``megengine.load``: pickle-based checkpoints.

Tensors and Parameters are stored by value (a numpy array) with their dtype, device and kind, in
MegEngine's own pickle form (``Tensor.__reduce__``: the class made without arguments, then a
state ``{"data", "dtype", "device"}``), so MegEngine 1.13 loads the files NeoMeg saves; ``load``
checks each state and moves it with ``map_location`` before the tensor is created. Files that
earlier NeoMeg versions wrote (tensors as calls of ``_rebuild``) still load. A save to a path writes a temporary file in the same folder and renames it over
the target, so an interrupted save never leaves a truncated checkpoint in place of the old one.

``load`` also reads the files MegEngine wrote (1.0 to 1.13). MegEngine pickles a tensor by its
class (``megengine.tensor.Tensor``/``Parameter``), whose ``__new__`` gets the values (1.2 and
later) or whose ``__setstate__`` does (1.0, 1.1). Our Tensor is a C++ class built by
``__init__``: its ``__new__`` ignores arguments, so a plain unpickling of such a file gives a
Tensor without a value. ``load`` therefore hands the unpickler, for every Tensor class it asks
for, a stand-in whose ``__new__`` builds the tensor from those arguments; ``Tensor.__setstate__``
(installed by ``_checked_unpickling``, the loader) reads the state forms. Every tensor state is checked (class, dtype, shape,
bytes, device) before a tensor is made from it, and a state that cannot be used is a ValueError.
The default unpickler is pickle's pure-Python one, whose BUILD is checked for numpy's dtype and
array states too: numpy trusts some of them, and a corrupt file must raise, not crash.

As with any pickle, load only files you trust: unpickling can run arbitrary code.
"""

import os
import pickle

from . import _checked_unpickling
from .tensor import Tensor
from .utils.atomic_file import write_atomic

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
        >>> t.device == "cpu1"
        True
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
    """Rebuilds a Tensor or Parameter that an earlier NeoMeg saved (a plain ``pickle.load``
    calls it too; those files name it as ``megengine.serialization._rebuild``, so it stays)."""
    if map_location is None:
        map_location = Tensor.dmap_callback
    return _checked_unpickling.rebuild(kind, array, dtype, device, map_location)


def _pickler(pickle_module, f, protocol):
    # Tensors pickle through Tensor.__reduce__, in MegEngine's form; a reduction is memoized, so
    # a tensor referenced twice is saved once and comes back as one object.
    return pickle_module.Pickler(f, protocol=protocol)


def save(obj, f, pickle_module=pickle, pickle_protocol=pickle.DEFAULT_PROTOCOL):
    r"""Saves an object (a state dict, a module, an optimizer's state ...) to a file.

    Tensors and Parameters keep their dtype, device and kind (not their ``name``, which
    MegEngine does not save either). Saving to a path is atomic: the data goes to a temporary
    file in the same folder, which then replaces ``f``. The file is a pickle that
    :func:`load` and a plain ``pickle.load`` (with NeoMeg's ``megengine`` importable) read, and
    so does MegEngine 1.13's ``megengine.load`` (bfloat16 tensors excepted: their NumPy dtype
    is MegEngine's own type, which NeoMeg does not have). Devices are saved as the physical
    name (``"cpu0"``), where MegEngine saves the logical one (``"xpux"``).

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
        write_atomic(f, lambda fo: _pickler(pickle_module, fo, pickle_protocol).dump(obj))
    elif hasattr(f, "write"):
        _pickler(pickle_module, f, pickle_protocol).dump(obj)
    else:
        raise TypeError(f"save: f must be a path or a writable file, got {type(f).__name__}")


def load(f, map_location=None, pickle_module=pickle):
    r"""Loads an object saved by :func:`save`, or by MegEngine's ``megengine.save``.

    Files written by MegEngine 1.0 to 1.13 load too: their Tensors and Parameters (alone or in
    lists, dicts and other objects) come back as NeoMeg's, with their values, dtype (bfloat16
    included) and device; module and optimizer state dicts, which hold numpy arrays, load as
    saved. MegEngine saves no tensor names, so a loaded tensor's ``name`` is None. MegEngine's
    quantized dtypes and quantization parameters are refused.

    Every tensor in the file is checked (class, dtype, shape against its bytes, device) before
    it is made. With the default ``pickle_module`` the file is read by pickle's pure-Python
    unpickler, so that numpy's own states are checked too: a file that cannot be read raises an
    error naming it, never crashes the process. As with any pickle, load only files you trust:
    unpickling can run arbitrary code.

    Args:
        f: a path (str or ``os.PathLike``) or a binary file object opened for reading.
        map_location: where the tensors go, as in MegEngine: None keeps the devices they were
            saved from; a device string (``"cpu0"``) sends all of them there; a dict maps saved
            devices to new ones (a key ``"gpu0"`` also matches ``"gpu0:1"``; others stay); a
            callable takes the saved device string (``"xpux:0"`` in MegEngine's files) and
            returns the new one.
        pickle_module: the module whose ``Unpickler`` reads the data (for ``pickle``, its
            pure-Python ``_Unpickler``).

    Returns:
        the saved object, with Tensors and Parameters rebuilt on their devices.

    Raises:
        pickle.UnpicklingError: (an instance that is also a ValueError) the file is truncated,
            corrupt, not a pickle, or holds a tensor state that cannot be used (a wrong dtype,
            data that does not match its shape, an unsupported dtype); the message names the
            file (its path, or the file object's ``name``).
        ValueError: a tensor cannot be placed on its device (``map_location`` can move it).
        TypeError: ``map_location`` is not one of the forms above, or returns a non-string.

    Examples:
        >>> import io
        >>> import megengine as mge
        >>> buf = io.BytesIO()
        >>> mge.save([mge.Tensor([1, 2], dtype="int32")], buf)
        >>> _ = buf.seek(0)
        >>> (t,) = mge.load(buf, map_location={"cpu0": "cpu1"})
        >>> t.device == "cpu1", t.dtype.name
        (True, 'int32')
    """
    if isinstance(f, (str, bytes, os.PathLike)):
        name = os.fsdecode(os.fspath(f))
        with open(name, "rb") as fo:
            return _checked_unpickling.load(fo, map_location, pickle_module, repr(name))
    if not hasattr(f, "read"):
        raise TypeError(f"load: f must be a path or a readable file, got {type(f).__name__}")
    name = getattr(f, "name", None)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    return _checked_unpickling.load(
        f, map_location, pickle_module, repr(name) if isinstance(name, str) else "the file"
    )
