"""``megengine.save`` and ``megengine.load``: pickle-based checkpoints.

Tensors and Parameters are stored by value (a numpy array) with their dtype, device and kind,
as a call of ``_rebuild`` that ``load`` intercepts to move them with ``map_location`` before
they are created. A save to a path writes a temporary file in the same folder and renames it over
the target, so an interrupted save never leaves a truncated checkpoint in place of the old one.

``load`` also reads the files MegEngine wrote (1.0 to 1.13). MegEngine pickles a tensor by its
class (``megengine.tensor.Tensor``/``Parameter``), whose ``__new__`` gets the values (1.2 and
later) or whose ``__setstate__`` does (1.0, 1.1). Our Tensor is a C++ class built by
``__init__``: its ``__new__`` ignores arguments, so a plain unpickling of such a file gives a
Tensor without a value. ``load`` therefore hands the unpickler, for every Tensor class it asks
for, a stand-in whose ``__new__`` builds the tensor from those arguments; ``Tensor.__setstate__``
(installed here) reads the state forms. Every tensor state is checked (class, dtype, shape,
bytes, device) before a tensor is made from it, and a state that cannot be used is a ValueError.
The default unpickler is pickle's pure-Python one, whose BUILD is checked for numpy's dtype and
array states too: numpy trusts some of them, and a corrupt file must raise, not crash.

As with any pickle, load only files you trust: unpickling can run arbitrary code.
"""

import contextvars
import copyreg
import os
import pickle
import struct
import tempfile

import numpy as np

from .core import _imperative_rt as _rt
from .tensor import Parameter, Tensor
from .tensor import _rt_init as _construct

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
    """Rebuilds a saved Tensor or Parameter (a plain ``pickle.load`` calls it too)."""
    if kind not in ("Tensor", "Parameter"):
        raise _StateError(f"a tensor record of kind {kind!r} (Tensor or Parameter)")
    cls = Parameter if kind == "Parameter" else Tensor
    if map_location is None:
        map_location = Tensor.dmap_callback
    return _checked_tensor(cls, array, dtype, device, map_location)


def _pickler(pickle_module, f, protocol):
    class Pickler(pickle_module.Pickler):
        # A reduction (unlike a persistent id) is memoized: a tensor referenced twice is
        # saved once and comes back as one object.
        def reducer_override(self, obj):
            if isinstance(obj, Tensor):
                kind = "Parameter" if isinstance(obj, Parameter) else "Tensor"
                # The device as its plain canonical name ("cpu0"): no CompNode in the file.
                device = _rt.canonical_device(obj.device)
                return (_rebuild, (kind, obj.numpy(), obj._dtype_name, device))
            return NotImplemented

    return Pickler(f, protocol=protocol)


def save(obj, f, pickle_module=pickle, pickle_protocol=pickle.DEFAULT_PROTOCOL):
    r"""Saves an object (a state dict, a module, an optimizer's state ...) to a file.

    Tensors and Parameters keep their dtype, device and kind (not their ``name``, which
    MegEngine does not save either). Saving to a path is atomic: the data goes to a temporary
    file in the same folder, which then replaces ``f``. The file is a pickle that
    :func:`load` and a plain ``pickle.load`` (with NeoMeg's ``megengine`` importable) read.

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


# ---- Checked construction of unpickled tensors ---------------------------------------------

_DTYPES = ("float32", "float16", "int8", "uint8", "int16", "int32", "bool")
_MAX_NDIM = 7  # TensorShape::MAX_NDIM (dnn/include/neomeg/dnn/layout.h)

# MegEngine pickles its bfloat16 arrays with the dtype of its extension's ``pybfloat16`` type:
# ``numpy.dtype(pybfloat16)`` then a state of two-byte elements. ``load`` resolves that name to
# this two-byte void dtype, which no other tensor data has, so the raw bits come back as a
# ``V2`` array that _tensor_args converts.
_MGE_BFLOAT16 = np.dtype("V2")


class _StateError(ValueError):
    """A pickled tensor state that cannot be used (its message says which part)."""


class _DeviceError(ValueError):
    """A tensor that cannot be placed on its (mapped) device; map_location can move it."""


class _MapLocationError(TypeError):
    """A map_location that is not one of the accepted forms: the caller's error."""


def _dtype_name(dtype):
    """The NeoMeg dtype name a pickled dtype stands for; ValueError for any other."""
    if isinstance(dtype, str):
        if dtype in _DTYPES or dtype == "bfloat16":
            return dtype
        raise _StateError(f"unsupported tensor dtype {dtype!r}")
    if not isinstance(dtype, np.dtype):
        raise _StateError(f"a tensor dtype must be a numpy dtype or a name, got {type(dtype)}")
    meta = (dtype.metadata or {}).get("mgb_dtype")
    if meta is not None:
        name = meta.get("name") if isinstance(meta, dict) else meta
        raise _StateError(f"MegEngine's quantized dtype {name!s} is not supported by NeoMeg")
    if dtype.kind == "V" and dtype.itemsize == 2 and dtype.fields is None:
        return "bfloat16"
    for name in _DTYPES:
        expected = np.dtype(name)
        if dtype == expected:
            # a corrupt dtype state can mark plain integers as holding objects
            if dtype.flags != expected.flags:
                raise _StateError(f"a dtype {name} with the flags {dtype.flags} of another kind")
            return name
    raise _StateError(f"unsupported tensor dtype {dtype!r}")


def _tensor_args(data, dtype, device, map_location):
    """Checks a pickled tensor state; returns the (array, dtype name, device) to build from."""
    if type(data) is not np.ndarray:
        raise _StateError(f"a tensor's data must be a numpy array, got {type(data).__name__}")
    name = _dtype_name(dtype)
    data_name = _dtype_name(data.dtype)
    # NeoMeg saves bfloat16 as its float32 values; MegEngine as the raw bits
    if name != data_name and not (name == "bfloat16" and data_name == "float32"):
        raise _StateError(f"a tensor of dtype {name} has data of dtype {data.dtype}")
    # numpy has checked the data's bytes against its shape (ndarray.__setstate__)
    if data.ndim > _MAX_NDIM:
        raise _StateError(f"a tensor of {data.ndim} dims (at most {_MAX_NDIM})")
    # copy(order="C"), not ascontiguousarray, which makes a 0-d array 1-d
    data = data if data.flags.c_contiguous else data.copy(order="C")
    if data.dtype.kind == "V":
        data = (data.view("<u2").astype(np.uint32) << 16).view(np.float32)
    if not isinstance(device, str):
        raise _StateError(f"a tensor's device must be a string, got {type(device).__name__}")
    return data, name, _mapped_device(device, map_location)


def _mapped_device(device, map_location):
    try:
        return _target_device(device, map_location)
    except _MapLocationError:
        raise
    except Exception as e:
        raise _DeviceError(f"load: map_location failed on {device!r} ({e})") from e


def _fill(tensor, data, name, device, saved_device):
    """Gives an empty (``__new__``-made) tensor its value, then checks what was built."""
    try:
        _rt.canonical_device(device)  # a name that is not a device, or a GPU this machine lacks
    except Exception as e:
        raise _DeviceError(
            f"load: cannot place a tensor saved on {saved_device!r} ({e}); map_location can move it"
        ) from e
    try:
        _construct(tensor, data, name, device)
    except Exception as e:
        raise _StateError(f"a tensor of {data.shape} {name} could not be built ({e})") from e
    if tensor.shape != data.shape or tensor._dtype_name != name:
        raise _StateError(
            f"a tensor built as {tensor.shape} {tensor._dtype_name} from {data.shape} {name}"
        )
    return tensor


def _checked_tensor(cls, data, dtype, device, map_location=None):
    """A ``cls`` tensor from a pickled state, each part of which is checked first."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise _StateError(f"{cls!r} is not a Tensor class")
    array, name, target = _tensor_args(data, dtype, device, map_location)
    return _fill(cls.__new__(cls), array, name, target, device)


# The map_location of the load in progress, for Tensor.__setstate__ (which pickle calls on the
# tensor alone); None outside of load.
_LOAD_MAP_LOCATION = contextvars.ContextVar("megengine_load_map_location", default=None)

_STATE_KEYS = {"data", "device", "dtype", "qdict", "qparams"}


def _tensor_setstate(self, state):
    """Applies a pickled MegEngine tensor state (``pickle`` calls it after ``__new__``).

    The forms: ``{"data", "device", "dtype", "qdict"}`` (MegEngine 1.0 and 1.1, whose
    ``__new__`` got no arguments), ``{"qdict"}`` (1.2), ``{}`` or ``{"qparams"}`` (1.3 to
    1.13; the values came as ``__new__`` arguments, which :func:`load` uses).
    """
    if not isinstance(state, dict) or not set(state) <= _STATE_KEYS:
        what = sorted(map(str, state)) if isinstance(state, dict) else type(state).__name__
        raise _StateError(f"a Tensor state must be a dict with keys {sorted(_STATE_KEYS)}: {what}")
    if "data" in state:
        if self._initialized:
            raise _StateError("a Tensor state carries data for a tensor that has values already")
        missing = {"device", "dtype"} - set(state)
        if missing:
            raise _StateError(f"a Tensor state with data lacks {sorted(missing)}")
        map_location = _LOAD_MAP_LOCATION.get()
        args = _tensor_args(state["data"], state["dtype"], state["device"], map_location)
        _fill(self, *args, state["device"])
    elif not self._initialized:
        raise _StateError(
            "this Tensor was pickled by MegEngine with its values as __new__ arguments, which "
            "a plain pickle.load drops: load the file with megengine.load"
        )
    _check_no_quantization(state.get("qparams", state.get("qdict")))


Tensor.__setstate__ = _tensor_setstate


def _check_no_quantization(qparams):
    # MegEngine 1.0-1.2 store {"mode": None, "scale": None, "zero_point": None} for every tensor
    if qparams is None or (isinstance(qparams, dict) and all(v is None for v in qparams.values())):
        return
    raise _StateError("MegEngine quantization parameters are not supported by NeoMeg")


# ---- load ------------------------------------------------------------------------------


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
            raise _MapLocationError(
                f"load: map_location must return a device string, got {type(out).__name__}"
            )
        return out
    raise _MapLocationError(
        "load: map_location must be None, a device string, a dict or a callable, got "
        f"{type(map_location).__name__}"
    )


class _TensorClassMeta(type):
    """Lets a stand-in class also be used as the class it stands for (called, isinstance)."""

    def __call__(cls, *args, **kwargs):
        return cls._real(*args, **kwargs)

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls._real)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, cls._real)


class _Session:
    """One load: the unpickler's class lookups, and every tensor made for it."""

    def __init__(self, map_location):
        self.map_location = map_location
        self.tensors = []
        self.stand_ins = {}

    def stand_in(self, real):
        """The class the unpickler gets for Tensor class ``real``: pickle's NEWOBJ calls its
        ``__new__`` with MegEngine's arguments, which builds a checked ``real`` tensor."""
        cls = self.stand_ins.get(real)
        if cls is None:
            session = self

            def __new__(stand_in, *args, **kwargs):
                if kwargs or len(args) not in (0, 3):
                    raise _StateError(
                        f"{real.__name__} pickled with {len(args)} arguments and keywords "
                        f"{sorted(kwargs)}; MegEngine's pickles have none or (data, dtype, device)"
                    )
                if args:
                    t = _checked_tensor(real, *args, session.map_location)
                else:  # MegEngine 1.0/1.1: the state (Tensor.__setstate__) brings the values
                    t = real.__new__(real)
                session.tensors.append(t)
                return t

            def __setstate__(obj, state):
                # only an object made without __new__ (object.__new__) gets here
                raise _StateError(f"a {real.__name__} made without its class's __new__")

            body = {"__new__": __new__, "__setstate__": __setstate__, "_real": real}
            cls = _TensorClassMeta(real.__name__, (), body)
            self.stand_ins[real] = cls
        return cls

    def real(self, cls):
        return cls._real if isinstance(cls, _TensorClassMeta) else cls

    def reconstructor(self, cls, base, state):
        # protocol 0/1 pickles of MegEngine 1.0/1.1: copyreg._reconstructor(cls, object, None)
        if isinstance(cls, _TensorClassMeta):
            if base is not object or state is not None:
                raise _StateError("a Tensor reconstructed from a base other than object")
            return cls.__new__(cls)
        return copyreg._reconstructor(cls, base, state)

    def check_all_built(self):
        for t in self.tensors:
            if not t._initialized:
                raise _StateError("a Tensor whose state never came (the file ends early)")


def _check_numpy_state(inst, state):
    """Checks the state pickle's BUILD gives a numpy dtype or array: numpy's ``__setstate__``
    trusts some of it (``np.dtype("f4").__setstate__((3, "<", None, -1, -1, 0))`` crashes the
    process in numpy 1.26 and 2.4), so a corrupt file must not reach it."""
    if type(inst) is np.ndarray:
        if not (isinstance(state, tuple) and len(state) in (4, 5)):
            raise _StateError("a numpy array state that is not numpy's")
        shape, dtype, _, raw = state[-4:]
        if not (isinstance(shape, tuple) and all(type(d) is int and d >= 0 for d in shape)):
            raise _StateError(f"a numpy array of shape {shape!r}")
        if not isinstance(dtype, np.dtype):
            raise _StateError(f"a numpy array of dtype {dtype!r}")
        if not isinstance(raw, (list, bytes, bytearray) if dtype.hasobject else (bytes, bytearray)):
            raise _StateError(f"a numpy array of dtype {dtype} with data of type {type(raw)}")
    elif isinstance(inst, np.dtype):
        if not (isinstance(state, tuple) and len(state) in (8, 9)):
            raise _StateError("a numpy dtype state that is not numpy's")
        version, endian, subarray, names, fields, elsize, alignment, flags = state[:8]
        if (
            version not in (3, 4)
            or endian not in ("<", ">", "|", "=")
            or not (subarray is None or _is_subarray(subarray))
            or not (
                names is None or (isinstance(names, tuple) and all(type(n) is str for n in names))
            )
            or not (fields is None or isinstance(fields, dict))
            or (names is None) != (fields is None)
            or not all(type(v) is int and v >= -1 for v in (elsize, alignment))
            or not (type(flags) is int and 0 <= flags < 256)
        ):
            raise _StateError(f"a numpy dtype state {state!r} that is not numpy's")
        # Bits 0-2 (holds objects, pickles as a list, holds pointers) on a dtype that holds
        # no objects would make numpy treat its bytes as object pointers.
        fields_hold_objects = fields is not None and any(
            isinstance(v, tuple) and v and isinstance(v[0], np.dtype) and v[0].hasobject
            for v in fields.values()
        )
        holds_objects = (
            inst.kind == "O"
            or fields_hold_objects
            or (subarray is not None and subarray[0].hasobject)
        )
        if flags & 0x07 and not holds_objects:
            raise _StateError(f"a numpy {inst} dtype with the object flags {flags}")


def _is_subarray(subarray):
    return (
        isinstance(subarray, tuple)
        and len(subarray) == 2
        and isinstance(subarray[0], np.dtype)
        and isinstance(subarray[1], tuple)
        and all(type(d) is int and d >= 0 for d in subarray[1])
    )


def _unpickler(pickle_module, f, session):
    def rebuild(kind, array, dtype, device):
        t = _rebuild(kind, array, dtype, device, session.map_location)
        session.tensors.append(t)
        return t

    def rebuild_tensor(array, dtype, device, cls=None):
        # Tensor.__reduce__ (array_method.py): a plain pickle of a NeoMeg tensor
        t = _checked_tensor(session.real(cls or Tensor), array, dtype, device, session.map_location)
        session.tensors.append(t)
        return t

    special = {
        (__name__, "_rebuild"): rebuild,
        ("megengine.core.tensor.array_method", "_rebuild_tensor"): rebuild_tensor,
        ("megengine.core._imperative_rt", "pybfloat16"): _MGE_BFLOAT16,
        ("copyreg", "_reconstructor"): session.reconstructor,
        ("copy_reg", "_reconstructor"): session.reconstructor,  # its name in protocols 0-2
    }

    # pickle's pure-Python unpickler runs each opcode as a method, so BUILD can be checked
    # (_check_numpy_state); it costs little next to reading the tensors' bytes.
    base = pickle._Unpickler if pickle_module is pickle else pickle_module.Unpickler

    class Unpickler(base):
        def find_class(self, module, name):
            found = special.get((module, name))
            if found is not None:
                return found
            obj = super().find_class(module, name)
            if isinstance(obj, type) and issubclass(obj, Tensor):
                return session.stand_in(obj)
            return obj

    dispatch = getattr(base, "dispatch", None)
    if isinstance(dispatch, dict) and pickle.BUILD[0] in dispatch:
        build = dispatch[pickle.BUILD[0]]

        def load_build(self):
            if len(self.stack) >= 2:
                _check_numpy_state(self.stack[-2], self.stack[-1])
            build(self)

        def load_bytearray8(self):
            # pickle.py allocates the length it reads (up to 2**63) before reading the data
            (size,) = struct.unpack("<Q", self.read(8))
            data = self.read(size)
            if len(data) < size:
                raise pickle.UnpicklingError("pickle data was truncated")
            self.append(bytearray(data))

        Unpickler.dispatch = {
            **dispatch,
            pickle.BUILD[0]: load_build,
            pickle.BYTEARRAY8[0]: load_bytearray8,
        }
    return Unpickler(f)


class _LoadError(pickle.UnpicklingError, ValueError):
    """A file load cannot turn into objects: truncated, corrupt, or with an unusable tensor
    state. Both an UnpicklingError and a ValueError, so either ``except`` catches it."""


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
            return _load(fo, map_location, pickle_module, repr(name))
    if not hasattr(f, "read"):
        raise TypeError(f"load: f must be a path or a readable file, got {type(f).__name__}")
    name = getattr(f, "name", None)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    return _load(
        f, map_location, pickle_module, repr(name) if isinstance(name, str) else "the file"
    )


def _load(f, map_location, pickle_module, name):
    if map_location is None:
        map_location = Tensor.dmap_callback  # a dmap block around the load
    if not (
        map_location is None or isinstance(map_location, (str, dict)) or callable(map_location)
    ):
        _target_device("cpu0", map_location)  # raises the TypeError naming the argument
    session = _Session(map_location)
    token = _LOAD_MAP_LOCATION.set(map_location)
    try:
        obj = _unpickler(pickle_module, f, session).load()
        session.check_all_built()
        return obj
    except _DeviceError as e:
        raise ValueError(str(e)) from e.__cause__
    except _MapLocationError as e:
        raise TypeError(str(e)) from e.__cause__
    except _StateError as e:
        raise _LoadError(f"load: {name} holds a tensor state that cannot be used: {e}") from e
    except Exception as e:
        raise _LoadError(
            f"load: {name} is truncated or is not a checkpoint written by megengine.save "
            f"({type(e).__name__}: {e})"
        ) from e
    finally:
        _LOAD_MAP_LOCATION.reset(token)
        session.tensors.clear()
