"""LiteLayout and LiteTensor: a block of memory with a shape and an element type.

A LiteTensor's memory is host memory held by a NumPy array (its own, or the caller's after
:meth:`~.LiteTensor.set_data_by_share`); a slice is a view of its parent's memory. A tensor of
``LITE_CUDA`` is host memory too, copied to the GPU when a network runs: it keeps MegEngine's
rules (no :meth:`~.LiteTensor.set_data_by_share` on it, :meth:`~.LiteTensor.to_numpy` copies),
so code written for MegEngine behaves the same.
"""

import ctypes

import numpy as np

from megengine.core import _imperative_rt as _rt

from .struct import LiteDataType, LiteDeviceType

__all__ = ["LiteLayout", "LiteTensor", "LiteTensorConcat", "lite_dtype_2_numpy"]

MAX_DIM = 7

_lite_type_to_nptypes = {
    LiteDataType.LITE_INT: np.int32,
    LiteDataType.LITE_FLOAT: np.float32,
    LiteDataType.LITE_UINT8: np.uint8,
    LiteDataType.LITE_INT8: np.int8,
    LiteDataType.LITE_INT16: np.int16,
    LiteDataType.LITE_UINT16: np.uint16,
    LiteDataType.LITE_HALF: np.float16,
}
_nptype_to_lite_type = {val: key for key, val in _lite_type_to_nptypes.items()}
_dtype_to_lite_type = {np.dtype(val): key for key, val in _lite_type_to_nptypes.items()}


def _lite_type_of(dtype, what):
    # Any dtype of the same kind and size maps (an int8 array carrying MegEngine's quantized
    # metadata is int8 here).
    key = np.dtype(dtype)
    key = np.dtype(key.str) if key.kind in "iuf" else key
    if key not in _dtype_to_lite_type:
        raise TypeError(
            f"{what}: NumPy dtype {np.dtype(dtype)} has no Lite data type (Lite tensors hold "
            "float32, float16, int32, int16, int8, uint8 or uint16); convert it with astype"
        )
    return _dtype_to_lite_type[key]


class LiteLayout:
    """The layout of a :class:`LiteTensor`: its shape (at most 7 dims) and data type.

    Args:
        shape: the shape, a list of ints; ``None`` or empty for no shape (a tensor of 0 bytes).
        dtype: a :class:`~.LiteDataType`, a NumPy dtype, a NumPy scalar type (``np.int8``) or a
            dtype name (``"int32"``); ``None`` for ``LITE_FLOAT``.

    Examples:
        >>> import numpy as np
        >>> from megenginelite import LiteDataType, LiteLayout
        >>> layout = LiteLayout([1, 4, 8, 8], LiteDataType.LITE_FLOAT)
        >>> layout.shapes, layout.ndim, layout.dtype is np.float32
        ([1, 4, 8, 8], 4, True)
        >>> LiteLayout([2, 3], "int8")
        {'shapes': [2, 3], 'ndim': 2, 'data_type': <class 'numpy.int8'>}
    """

    def __init__(self, shape=None, dtype=None):
        self.shapes = list(shape) if shape is not None and len(shape) else []
        if not dtype:
            self.data_type = LiteDataType.LITE_FLOAT
        elif isinstance(dtype, LiteDataType):
            self.data_type = dtype
        elif isinstance(dtype, (str, np.dtype)):
            self.data_type = _lite_type_of(dtype, "LiteLayout")
        elif isinstance(dtype, type) and dtype in _nptype_to_lite_type:
            self.data_type = _nptype_to_lite_type[dtype]
        else:
            raise RuntimeError(f"LiteLayout: unknown data type {dtype!r}")

    @property
    def dtype(self):
        """The NumPy scalar type of the elements (``numpy.float32``, ...).

        Examples:
            >>> from megenginelite import LiteDataType, LiteLayout
            >>> LiteLayout([2], LiteDataType.LITE_HALF).dtype.__name__
            'float16'
        """
        return _lite_type_to_nptypes[LiteDataType(self.data_type)]

    @property
    def shapes(self):
        """The shape, a list of ``ndim`` ints; assigning one keeps the data type.

        Examples:
            >>> from megenginelite import LiteLayout
            >>> layout = LiteLayout([2, 3])
            >>> layout.shapes = [6]
            >>> layout.shapes, layout.ndim
            ([6], 1)
        """
        return list(self._shapes[: self.ndim])

    @shapes.setter
    def shapes(self, shape):
        shape = [int(s) for s in shape]
        assert len(shape) <= MAX_DIM, "Layout max dim is 7."
        self._shapes = shape
        self.ndim = len(shape)

    def _nbytes(self):
        if self.ndim == 0:
            return 0
        return int(np.prod(self.shapes, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def __repr__(self):
        data = {"shapes": self.shapes, "ndim": self.ndim, "data_type": self.dtype}
        return data.__repr__()


def _check_device(device_type, device_id):
    device_type = LiteDeviceType(int(device_type))
    if device_type == LiteDeviceType.LITE_CUDA:
        count = _rt.get_cuda_device_count()
        if not 0 <= device_id < count:
            raise RuntimeError(
                f"LITE_CUDA: request gpu{device_id} out of valid range [0, {count}) "
                f"({'CUDA devices: ' + str(count) if count else _rt.cuda_unavailable_reason()})"
            )
    elif device_type not in (LiteDeviceType.LITE_CPU, LiteDeviceType.LITE_DEVICE_DEFAULT):
        raise RuntimeError(f"NeoMeg has no {device_type.name} device (it runs LITE_CPU, LITE_CUDA)")
    return device_type


class LiteTensor:
    """A block of data with its layout and device.

    Args:
        layout: a :class:`LiteLayout`; when omitted, ``shapes`` and ``dtype`` make one.
        device_type: a :class:`~.LiteDeviceType`: ``LITE_CPU``, or ``LITE_CUDA`` where a CUDA
            device is usable (the memory stays on the host: see the module's note).
        device_id: the device's index.
        is_pinned_host: marks the tensor as pinned host memory, which
            :meth:`set_data_by_share` accepts on any device.
        shapes: the shape, when ``layout`` is omitted.
        dtype: the data type, when ``layout`` is omitted (as :class:`LiteLayout` takes it).
        physic_construct: MegEngine's switch for making an empty handle; here the tensor always
            exists, with memory for its layout.

    A new tensor's memory is zeros (MegEngine leaves it unset).

    Examples:
        >>> import numpy as np
        >>> from megenginelite import LiteLayout, LiteTensor
        >>> t = LiteTensor(LiteLayout([2, 3], "float32"))
        >>> t.nbytes
        24
        >>> t.set_data_by_copy(np.arange(6, dtype="float32").reshape(2, 3))
        >>> t.to_numpy()
        array([[0., 1., 2.],
               [3., 4., 5.]], dtype=float32)
        >>> LiteTensor(shapes=[4], dtype="int32").layout
        {'shapes': [4], 'ndim': 1, 'data_type': <class 'numpy.int32'>}
    """

    def __init__(
        self,
        layout=None,
        device_type=LiteDeviceType.LITE_CPU,
        device_id=0,
        is_pinned_host=False,
        shapes=None,
        dtype=None,
        physic_construct=True,
    ):
        if layout is None:
            layout = LiteLayout(list(shapes), dtype) if shapes is not None else LiteLayout()
        self._device_type = _check_device(device_type, device_id)
        if self._device_type == LiteDeviceType.LITE_DEVICE_DEFAULT:
            self._device_type = LiteDeviceType.LITE_CPU
        self._device_id = int(device_id)
        self._is_pinned_host = bool(is_pinned_host)
        self._layout = LiteLayout(layout.shapes, LiteDataType(layout.data_type))
        self._buf = np.zeros(self._layout._nbytes(), np.uint8)  # the memory, as bytes
        self._array = self._view()  # the elements: a view of _buf (strided for a slice)

    # --- memory -------------------------------------------------------------------------------

    def _view(self):
        n = self._layout._nbytes()
        shape = self._layout.shapes if self._layout.ndim else [0]  # no shape: no elements
        return self._buf[:n].view(self._layout.dtype).reshape(shape)

    def _set_layout(self, layout):
        # Keeps the memory when it is contiguous and large enough (as MegEngine reuses its
        # storage), so a tensor sharing the caller's array keeps writing into it.
        self._layout = LiteLayout(layout.shapes, LiteDataType(layout.data_type))
        if not (self.is_continue and self._buf.nbytes >= self._layout._nbytes()):
            self._buf = np.zeros(self._layout._nbytes(), np.uint8)
        self._array = self._view()

    def _adopt(self, array, shape=None):
        # Shares a C-contiguous array's memory, with its dtype and shape (or `shape`).
        self._buf = array.reshape(-1).view(np.uint8)
        dtype = _lite_type_of(array.dtype, "set_data_by_share")
        self._layout = LiteLayout(array.shape if shape is None else shape, dtype)
        self._array = self._view()

    def _store(self, array):
        # Copies `array` in, taking its shape (the network writes its outputs so).
        if list(array.shape) != self._layout.shapes or not self.is_continue:
            self._set_layout(LiteLayout(array.shape, self._layout.data_type))
        np.copyto(self._array, array, casting="unsafe")

    # --- properties ---------------------------------------------------------------------------

    @property
    def layout(self):
        """The tensor's :class:`LiteLayout`. Assigning a layout (or a list, which changes only
        the shape) keeps the memory when it is large enough, and otherwise allocates new
        memory of unset content.

        Examples:
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> t = LiteTensor(LiteLayout([2, 3]))
            >>> t.layout = LiteLayout([3, 4], "int32")
            >>> t.layout, t.nbytes
            ({'shapes': [3, 4], 'ndim': 2, 'data_type': <class 'numpy.int32'>}, 48)
        """
        return self._layout

    @layout.setter
    def layout(self, layout):
        if isinstance(layout, LiteLayout):
            self._set_layout(layout)
        elif isinstance(layout, (list, tuple)):
            self._set_layout(LiteLayout(layout, LiteDataType(self._layout.data_type)))
        else:
            raise TypeError(f"layout must be a LiteLayout or a list of dims, got {layout!r}")

    @property
    def device_type(self):
        """The :class:`~.LiteDeviceType` of the tensor.

        Examples:
            >>> from megenginelite import LiteTensor
            >>> LiteTensor().device_type.name
            'LITE_CPU'
        """
        return self._device_type

    @property
    def device_id(self):
        """The index of the tensor's device.

        Examples:
            >>> from megenginelite import LiteTensor
            >>> LiteTensor().device_id
            0
        """
        return self._device_id

    @property
    def is_pinned_host(self):
        """Whether the tensor is pinned host memory.

        Examples:
            >>> from megenginelite import LiteTensor
            >>> LiteTensor().is_pinned_host
            False
        """
        return self._is_pinned_host

    @property
    def is_continue(self):
        """Whether the memory is contiguous (a slice across a row is not).

        Examples:
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> t = LiteTensor(LiteLayout([4, 5]))
            >>> t.is_continue, t.slice([1, 1], [3, 4]).is_continue
            (True, False)
        """
        return bool(self._array.flags["C_CONTIGUOUS"])

    @property
    def nbytes(self):
        """The size of the layout in bytes (0 for a tensor without a shape).

        Examples:
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> LiteTensor(LiteLayout([2, 3], "int16")).nbytes
            12
        """
        return self._layout._nbytes()

    def update(self):
        """Refreshes the Python object from the tensor (MegEngine's ctypes wrapper needs it
        after a C call); here the object is the tensor, so there is nothing to refresh.

        Examples:
            >>> from megenginelite import LiteTensor
            >>> LiteTensor().update()
        """

    # --- data ---------------------------------------------------------------------------------

    def fill_zero(self):
        """Sets every element to zero (in a slice, only the slice's elements).

        Examples:
            >>> import numpy as np
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> t = LiteTensor(LiteLayout([2, 2], "int32"))
            >>> t.set_data_by_copy(np.array([[1, 2], [3, 4]], "int32"))
            >>> t.slice([0, 1], [2, 2]).fill_zero()
            >>> t.to_numpy()
            array([[1, 0],
                   [3, 0]], dtype=int32)
        """
        self._array[...] = 0

    def share_memory_with(self, src_tensor):
        """Makes this tensor use ``src_tensor``'s memory and layout (its own memory is freed).

        Args:
            src_tensor: the :class:`LiteTensor` to share memory with.

        Examples:
            >>> import numpy as np
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> a = LiteTensor(LiteLayout([3]))
            >>> b = LiteTensor()
            >>> b.share_memory_with(a)
            >>> a.set_data_by_copy(np.array([1, 2, 3], "float32"))
            >>> b.to_numpy()
            array([1., 2., 3.], dtype=float32)
        """
        assert isinstance(src_tensor, LiteTensor)
        self._buf = src_tensor._buf
        self._layout = LiteLayout(src_tensor._layout.shapes, src_tensor._layout.data_type)
        self._array = src_tensor._array

    def copy_from(self, src_tensor):
        """Copies ``src_tensor``'s data into this tensor, which takes its shape.

        A tensor with a shape keeps its data type: copying another is a ``RuntimeError``. A
        tensor of the source's shape is written in place (a slice writes into its parent).

        Args:
            src_tensor: the :class:`LiteTensor` to copy from.

        Examples:
            >>> import numpy as np
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> src = LiteTensor(LiteLayout([2]))
            >>> src.set_data_by_copy(np.array([5, 6], "float32"))
            >>> dst = LiteTensor()
            >>> dst.copy_from(src)
            >>> dst.to_numpy()
            array([5., 6.], dtype=float32)
        """
        assert isinstance(src_tensor, LiteTensor)
        src = src_tensor._layout
        if self._layout.ndim and self._layout.data_type != src.data_type:
            raise RuntimeError(
                f"copy_from: the tensor holds {np.dtype(self._layout.dtype)}, the source "
                f"{np.dtype(src.dtype)}"
            )
        if self._layout.shapes != src.shapes:
            if not self.is_continue:
                raise RuntimeError(
                    f"copy_from: a non-contiguous tensor of shape {self._layout.shapes} cannot "
                    f"take the source's shape {src.shapes}"
                )
            self._set_layout(LiteLayout(src.shapes, src.data_type))
        if self._layout.data_type != src.data_type:  # a tensor without a shape takes the type
            self._set_layout(LiteLayout(src.shapes, src.data_type))
        np.copyto(self._array, src_tensor._array)

    def reshape(self, shape):
        """Gives the tensor another shape of as many elements, keeping its data; one dim may
        be -1 (inferred).

        Args:
            shape: the new shape, a list of ints.

        Examples:
            >>> import numpy as np
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> t = LiteTensor(LiteLayout([2, 3]))
            >>> t.set_data_by_copy(np.arange(6, dtype="float32").reshape(2, 3))
            >>> t.reshape([-1, 2])
            >>> t.layout.shapes, t.to_numpy()[2]
            ([3, 2], array([4., 5.], dtype=float32))
        """
        shape = [int(s) for s in shape]
        total = int(np.prod(self._layout.shapes, dtype=np.int64)) if self._layout.ndim else 0
        free = [i for i, s in enumerate(shape) if s == -1]
        known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
        if len(free) == 1 and known > 0 and total % known == 0:
            shape[free[0]] = total // known
        if (
            len(free) > 1
            or any(s < 0 for s in shape)
            or int(np.prod(shape, dtype=np.int64)) != total
        ):
            raise RuntimeError(
                f"reshape: the reshape inputs invalid: {self._layout.shapes} ({total} elements) "
                f"to {shape}"
            )
        if not self.is_continue:
            raise RuntimeError("reshape: the tensor's memory is not contiguous (a slice)")
        self._layout = LiteLayout(shape, self._layout.data_type)
        self._array = self._array.reshape(shape)

    def slice(self, start, end, step=None):
        """A tensor viewing part of this one's memory: along each of the first
        ``len(start)`` dims, the elements ``start[i]:end[i]:step[i]``.

        Args:
            start: the first index of each sliced dim.
            end: the end (excluded) of each sliced dim.
            step: the step of each sliced dim; 1 when omitted.

        Returns:
            a :class:`LiteTensor` sharing this tensor's memory (not contiguous when it cuts
            across a dim after the first).

        Examples:
            >>> import numpy as np
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> t = LiteTensor(LiteLayout([4, 5], "int32"))
            >>> t.set_data_by_copy(np.arange(20, dtype="int32").reshape(4, 5))
            >>> s = t.slice([1, 1], [3, 4])
            >>> s.layout.shapes, s.is_continue
            ([2, 3], False)
            >>> s.to_numpy()
            array([[ 6,  7,  8],
                   [11, 12, 13]], dtype=int32)
        """
        start = [int(s) for s in start]
        end = [int(e) for e in end]
        length = len(start)
        assert length == len(end), "slice with different length of start and end."
        if step:
            assert length == len(step), "slice with different length of start and step."
            step = [int(s) for s in step]
        else:
            step = [1] * length
        shapes = self._layout.shapes
        if length > len(shapes):
            raise RuntimeError(f"slice: {length} dims sliced on a tensor of shape {shapes}")
        for i in range(length):
            if not (0 <= start[i] < end[i] <= shapes[i] and step[i] > 0):
                raise RuntimeError(
                    f"slice: dim {i} of size {shapes[i]}: start {start[i]}, end {end[i]}, "
                    f"step {step[i]} (needs 0 <= start < end <= size and step > 0)"
                )
        out = LiteTensor.__new__(LiteTensor)
        out._device_type, out._device_id = self._device_type, self._device_id
        out._is_pinned_host = self._is_pinned_host
        out._buf = self._buf
        out._array = self._array[tuple(slice(s, e, st) for s, e, st in zip(start, end, step))]
        out._layout = LiteLayout(out._array.shape, self._layout.data_type)
        return out

    def get_ctypes_memory(self):
        """The address of the tensor's first element, as ``ctypes.c_void_p``.

        Returns:
            a ``ctypes.c_void_p``.

        Examples:
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> t = LiteTensor(LiteLayout([2]))
            >>> t.get_ctypes_memory().value == t.get_data_by_share().ctypes.data
            True
        """
        return ctypes.c_void_p(self._array.ctypes.data)

    def set_data_by_share(self, data, length=0, layout=None):
        """Makes the tensor use ``data``'s memory, without a copy: later writes to either are
        seen by the other (a network's input reads it at each forward).

        A NumPy array keeps the tensor's layout when it has as many bytes and the same dtype,
        and otherwise gives the tensor its shape and dtype (MegEngine kept the tensor's dtype,
        reading the bytes as it). ctypes data (an array, or a pointer with ``length`` bytes or
        a ``layout``) is used as the tensor's layout says.

        Args:
            data: a C-contiguous ``numpy.ndarray``, or ctypes data.
            length: the length of ctypes data in bytes (0: the tensor's ``nbytes``).
            layout: a :class:`LiteLayout` to give the tensor first.

        Examples:
            >>> import numpy as np
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> arr = np.zeros((2, 2), "float32")
            >>> t = LiteTensor(LiteLayout([2, 2]))
            >>> t.set_data_by_share(arr)
            >>> arr[0, 0] = 7
            >>> float(t.to_numpy()[0, 0])
            7.0
        """
        assert self.is_continue, "set_data_by_share can only apply in continue tensor."
        assert self.is_pinned_host or self._device_type == LiteDeviceType.LITE_CPU, (
            "set_data_by_share can only apply in cpu tensor or pinned tensor."
        )
        if isinstance(data, np.ndarray):
            assert data.flags["C_CONTIGUOUS"], (
                "input numpy is not continuous, please call input = np.ascontiguousarray(input) "
                "before call set_data_by_share"
            )
            same = (
                data.nbytes == self.nbytes
                and _lite_type_of(data.dtype, "set_data_by_share") == self._layout.data_type
            )
            self._adopt(data, self._layout.shapes if same else None)
            self._shared_data = data
            if layout is not None:
                self.layout = layout
            return
        if layout is not None:
            self.layout = layout
        else:
            assert length == 0 or length == self.nbytes, "the data length is not match."
        self._adopt_ctypes(data, self.nbytes)

    def _adopt_ctypes(self, data, nbytes):
        if isinstance(data, ctypes.Array):
            addr = ctypes.addressof(data)
            assert ctypes.sizeof(data) >= nbytes, "the data length is not match."
        elif isinstance(data, ctypes.c_void_p):
            addr = data.value
        else:
            addr = ctypes.cast(data, ctypes.c_void_p).value
        if nbytes and not addr:
            raise RuntimeError("set_data_by_share: a null pointer")
        raw = (ctypes.c_uint8 * nbytes).from_address(addr) if nbytes else bytearray()
        self._buf = np.frombuffer(raw, np.uint8)
        self._array = self._view()
        self._shared_data = data

    def set_data_by_copy(self, data, data_length=0, layout=None):
        """Copies ``data`` into the tensor.

        A NumPy array gives the tensor its shape and dtype (so an input tensor given an array
        of another dtype than the model's input fails at forward, as in MegEngine); a list
        fills the first elements of the tensor's layout; ctypes data of ``data_length`` bytes
        (or of ``layout``) is copied as the layout says.

        Args:
            data: a C-contiguous ``numpy.ndarray``, a list of numbers, or ctypes data.
            data_length: the length of ctypes data in bytes.
            layout: a :class:`LiteLayout` to give the tensor first.

        Examples:
            >>> import numpy as np
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> t = LiteTensor(LiteLayout([2, 2], "int32"))
            >>> t.set_data_by_copy([1, 2, 3])
            >>> t.to_numpy()
            array([[1, 2],
                   [3, 0]], dtype=int32)
            >>> t.set_data_by_copy(np.ones(3, "float16"))
            >>> t.layout
            {'shapes': [3], 'ndim': 1, 'data_type': <class 'numpy.float16'>}
        """
        if layout is not None:
            self.layout = layout
        assert self.is_continue, "set_data_by_copy can only apply in continue tensor."
        if isinstance(data, list):
            values = np.asarray(data, dtype=self._layout.dtype).reshape(-1)
            assert values.nbytes <= self.nbytes, (
                "the length of input data to set to the tensor is too large."
            )
            flat = self._array.reshape(-1)
            flat[: values.size] = values
            flat[values.size :] = 0
        elif isinstance(data, np.ndarray):
            assert data.flags["C_CONTIGUOUS"], (
                "input numpy is not continuous, please call input = np.ascontiguousarray(input) "
                "before call set_data_by_copy"
            )
            dtype = _lite_type_of(data.dtype, "set_data_by_copy")
            # A 0-dim array is one element (MegEngine's graphs have no 0-dim tensors).
            self._set_layout(LiteLayout(data.shape if data.ndim else [1], dtype))
            np.copyto(self._array, data.reshape(self._array.shape))
        else:
            if not isinstance(data, (ctypes.Array, ctypes.c_void_p, ctypes._Pointer)):
                raise TypeError(
                    "set_data_by_copy takes a numpy.ndarray, a list or ctypes data, got "
                    f"{type(data).__name__}"
                )
            assert data_length == self.nbytes or layout is not None, (
                "when input data is ctypes, the length of input data or layout must set"
            )
            src = LiteTensor(self._layout)
            src._adopt_ctypes(data, self.nbytes)
            np.copyto(self._array, src._array)

    def get_data_by_share(self):
        """The tensor's memory as a NumPy array, without a copy: writes to it change the
        tensor, and a network's next forward overwrites an output's (as in MegEngine).

        Returns:
            a ``numpy.ndarray`` viewing the tensor (strided for a non-contiguous slice).

        Examples:
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> t = LiteTensor(LiteLayout([3]))
            >>> t.get_data_by_share()[1] = 5
            >>> t.to_numpy()
            array([0., 5., 0.], dtype=float32)
        """
        return self._array

    def to_numpy(self):
        """A copy of the tensor's data.

        Returns:
            a ``numpy.ndarray`` of the tensor's shape and dtype (of shape ``(0,)`` for a tensor
            without a shape, as MegEngine gives; MegEngine gives that shape for any empty
            tensor, NeoMeg keeps an empty tensor's shape, ``(0, 3)``).

        Examples:
            >>> from megenginelite import LiteLayout, LiteTensor
            >>> LiteTensor(LiteLayout([2], "uint8")).to_numpy()
            array([0, 0], dtype=uint8)
        """
        return np.array(self._array, copy=True, order="C")

    def __repr__(self):
        data = {
            "layout": self._layout,
            "device_type": self._device_type,
            "device_id": self._device_id,
            "is_pinned_host": self._is_pinned_host,
        }
        return data.__repr__()


def LiteTensorConcat(tensors, dim, device_type=LiteDeviceType.LITE_DEVICE_DEFAULT, device_id=-1):
    """Concatenates tensors along ``dim`` into a new tensor.

    Args:
        tensors: a list of :class:`LiteTensor` of one data type and of equal shapes but along
            ``dim``.
        dim: the dim to concatenate along.
        device_type: the result's device type; ``LITE_DEVICE_DEFAULT`` for the first tensor's.
        device_id: the result's device id; -1 for the first tensor's.

    Returns:
        a new :class:`LiteTensor`.

    Examples:
        >>> import numpy as np
        >>> from megenginelite import LiteLayout, LiteTensor, LiteTensorConcat
        >>> a = LiteTensor(LiteLayout([1, 2], "int32"))
        >>> a.set_data_by_copy(np.array([[1, 2]], "int32"))
        >>> LiteTensorConcat([a, a], 0).to_numpy()
        array([[1, 2],
               [1, 2]], dtype=int32)
    """
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("LiteTensorConcat: no tensors")
    first = tensors[0]._layout
    if not 0 <= dim < first.ndim:
        raise RuntimeError(f"LiteTensorConcat: dim {dim} of tensors of {first.ndim} dims")
    for t in tensors[1:]:
        other = t._layout
        same = other.ndim == first.ndim and all(
            a == b for j, (a, b) in enumerate(zip(first.shapes, other.shapes)) if j != dim
        )
        if not same or other.data_type != first.data_type:
            raise RuntimeError(
                f"LiteTensorConcat: the shape of tensors is not same! {first} and {other} "
                f"along dim {dim}"
            )
    if device_type == LiteDeviceType.LITE_DEVICE_DEFAULT:
        device_type = tensors[0].device_type
    if device_id == -1:
        device_id = tensors[0].device_id
    data = np.concatenate([t._array for t in tensors], axis=dim)
    out = LiteTensor(LiteLayout(data.shape, first.data_type), device_type, device_id)
    np.copyto(out._array, data)
    return out


def lite_dtype_2_numpy(dtype):
    """The NumPy scalar type of a :class:`~.LiteDataType`.

    Args:
        dtype: a :class:`~.LiteDataType`.

    Returns:
        a NumPy scalar type (``numpy.float16`` for ``LITE_HALF``, ...).

    Examples:
        >>> from megenginelite import LiteDataType, lite_dtype_2_numpy
        >>> lite_dtype_2_numpy(LiteDataType.LITE_HALF).__name__
        'float16'
    """
    assert isinstance(dtype, LiteDataType), (
        "input must be LiteDataType when using lite_dtype_2_numpy."
    )
    return _lite_type_to_nptypes[dtype]
