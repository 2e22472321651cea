"""The checked unpickling behind :func:`megengine.load`: tensors built from pickled states,
every part of which is checked first, MegEngine's tensor classes and state forms (1.0 to 1.13),
and numpy's dtype and array states checked before numpy sees them. ``serialization`` holds the
public ``save``/``load``/``dmap``; this module is its loader.
"""

import contextvars
import copyreg
import pickle
import struct

import numpy as np

from .core import _imperative_rt as _rt
from .tensor import Parameter, Tensor
from .tensor import _rt_init as _construct

_DTYPES = ("float32", "float16", "int8", "uint8", "int16", "int32", "bool", "complex64")
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
        return _quantized_dtype(dtype, meta)
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


_QUANTIZED = {"QuantizedS8": "qint8", "Quantized8Asymm": "quint8", "QuantizedS32": "qint32"}


def _quantized_dtype(dtype, meta):
    """A pickled quantized dtype rebuilt from its checked fields (a canonical NumPy dtype)."""
    from .core.tensor.quant_dtype import _builtin_quant_dtypes, create_quantized_dtype

    name = meta.get("name") if isinstance(meta, dict) else meta
    kind = _QUANTIZED.get(name) if isinstance(name, str) else None
    if kind is None:
        raise _StateError(f"MegEngine's quantized dtype {name!s} is not supported by NeoMeg")
    info = _builtin_quant_dtypes[kind]
    scale, zp = meta.get("scale"), meta.get("zero_point")
    if (
        dtype.str != np.dtype(info.np_dtype_str).str
        or type(scale) is not float
        or not np.isfinite(scale)
        or scale <= 0
        or (info.is_unsigned and type(zp) is not int)
        or set(meta) - {"name", "scale", "zero_point"}
    ):
        raise _StateError(f"a malformed quantized dtype {name} ({dtype!r} with {meta!r})")
    try:
        return create_quantized_dtype(info, scale, zp if info.is_unsigned else None)
    except ValueError as e:
        raise _StateError(f"a malformed quantized dtype: {e}") from e


def _same_dtype(a, b):
    if isinstance(a, np.dtype) or isinstance(b, np.dtype):
        return a == b and getattr(a, "metadata", None) == getattr(b, "metadata", None)
    return a == b


def _tensor_args(data, dtype, device, map_location):
    """Checks a pickled tensor state; returns the (array, dtype name, device) to build from."""
    if type(data) is not np.ndarray:
        raise _StateError(f"a tensor's data must be a numpy array, got {type(data).__name__}")
    name = _dtype_name(dtype)
    data_name = _dtype_name(data.dtype)
    # NeoMeg saves bfloat16 as its float32 values; MegEngine as the raw bits
    if not _same_dtype(name, data_name) and not (name == "bfloat16" and data_name == "float32"):
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
    built = tensor.dtype if isinstance(name, np.dtype) else tensor._dtype_name
    if tensor.shape != data.shape or not _same_dtype(built, name):
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
        # load's map_location; in a plain pickle.load, the dmap block's (serialization.dmap)
        map_location = _LOAD_MAP_LOCATION.get() or getattr(type(self), "dmap_callback", None)
        args = _tensor_args(state["data"], state["dtype"], state["device"], map_location)
        _fill(self, *args, state["device"])
    elif not self._initialized:
        raise _StateError(
            "this Tensor was pickled by MegEngine with its values as __new__ arguments, which "
            "a plain pickle.load drops: load the file with megengine.load"
        )
    if "qparams" in state:
        self._qparams = _checked_qparams(state["qparams"])
    else:
        _check_default_qdict(state.get("qdict"))


Tensor.__setstate__ = _tensor_setstate


def _checked_qparams(qparams):
    # What MegEngine 1.3+ pickles once the tensor's qparams were made (read, or set by a
    # quantizer): a QParams (LSQParams) object, whose fields the pickle brought as they were.
    from .quantization.utils import QParams

    if qparams is not None and not isinstance(qparams, QParams):
        raise _StateError(f"a Tensor's qparams must be a QParams, got {type(qparams).__name__}")
    return qparams


def _check_default_qdict(qdict):
    # MegEngine 1.0-1.2 store {"mode": None, "scale": None, "zero_point": None} for every tensor
    if qdict is None or (isinstance(qdict, dict) and all(v is None for v in qdict.values())):
        return
    raise _StateError("MegEngine 1.0-1.2 quantization parameters (qdict) are not supported")


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
    def rebuild_record(kind, array, dtype, device):
        t = rebuild(kind, array, dtype, device, session.map_location)
        session.tensors.append(t)
        return t

    def rebuild_tensor(array, dtype, device, cls=None):
        # Tensor.__reduce__ (array_method.py): a plain pickle of a NeoMeg tensor
        t = _checked_tensor(session.real(cls or Tensor), array, dtype, device, session.map_location)
        session.tensors.append(t)
        return t

    special = {
        ("megengine.serialization", "_rebuild"): rebuild_record,
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


def rebuild(kind, array, dtype, device, map_location):
    """A Tensor or Parameter from NeoMeg's own record (``serialization._rebuild``)."""
    if kind not in ("Tensor", "Parameter"):
        raise _StateError(f"a tensor record of kind {kind!r} (Tensor or Parameter)")
    cls = Parameter if kind == "Parameter" else Tensor
    return _checked_tensor(cls, array, dtype, device, map_location)


def load(f, map_location, pickle_module, name):
    """Unpickles ``f`` (named ``name`` in errors) with every tensor checked."""
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
