"""TensorBatchCollector: gathers single samples into one batch tensor."""

import threading
import warnings

import numpy as np

from .struct import LiteDataType, LiteDeviceType
from .tensor import LiteLayout, LiteTensor, _lite_type_of

__all__ = ["TensorBatchCollector"]


class TensorBatchCollector:
    """Collects single-sample arrays or tensors into the batches of one tensor, to feed a
    network's input.

    Args:
        shape: the batch tensor's shape; a sample has its shape without the first dim.
        dtype: the :class:`~.LiteDataType` of the samples and the batch.
        device_type: the batch tensor's device (``LITE_CUDA`` by default, as in MegEngine: a
            ``RuntimeError`` where no CUDA device is usable).
        device_id: the batch tensor's device id.
        is_pinned_host: whether the batch tensor is pinned host memory.
        tensor: a :class:`~.LiteTensor` of ``shape`` to collect into, instead of a new one.

    Examples:
        >>> import numpy as np
        >>> from megenginelite import LiteDataType, LiteDeviceType, TensorBatchCollector
        >>> batch = TensorBatchCollector([4, 8, 8], LiteDataType.LITE_INT8,
        ...                              LiteDeviceType.LITE_CPU)
        >>> arr = np.ones([8, 8], "int8")
        >>> for i in range(4):
        ...     _ = batch.collect(arr)
        ...     arr += 1
        >>> data = batch.to_numpy()
        >>> data.shape, int(data[3, 0, 0])
        ((4, 8, 8), 4)
    """

    def __init__(
        self,
        shape,
        dtype=LiteDataType.LITE_INT8,
        device_type=LiteDeviceType.LITE_CUDA,
        device_id=0,
        is_pinned_host=False,
        tensor=None,
    ):
        self._mutex = threading.Lock()
        self.dev_type = device_type
        self.is_pinned_host = is_pinned_host
        self.dev_id = device_id
        self.shape = list(shape)
        self.dtype = LiteLayout(dtype=dtype).data_type
        self._free_list = list(range(self.shape[0]))
        if tensor is not None:
            assert tensor.layout.shapes == self.shape, (
                "The tensor set to TensorBatchCollector is not right."
            )
            self._tensor = tensor
            self.dtype = tensor.layout.data_type
        else:
            self._tensor = LiteTensor(
                LiteLayout(self.shape, dtype), device_type, device_id, is_pinned_host
            )

    def collect_id(self, array, batch_id):
        """Stores a sample as batch ``batch_id`` (a warning if that batch was collected and
        not freed).

        Args:
            array: a ``numpy.ndarray`` or :class:`~.LiteTensor` of the sample's shape and dtype.
            batch_id: the batch to store it in.

        Returns:
            ``batch_id``.

        Examples:
            >>> import numpy as np
            >>> from megenginelite import LiteDataType, LiteDeviceType, TensorBatchCollector
            >>> batch = TensorBatchCollector([2, 3], LiteDataType.LITE_FLOAT,
            ...                              LiteDeviceType.LITE_CPU)
            >>> batch.collect_id(np.ones(3, "float32"), 1)
            1
            >>> batch.to_numpy()[1]
            array([1., 1., 1.], dtype=float32)
        """
        with self._mutex:
            if batch_id in self._free_list:
                self._free_list.remove(batch_id)
            else:
                warnings.warn(
                    f"batch {batch_id} has been collected, please call free before collected it "
                    "again."
                )
        return self._collect_with_id(array, batch_id)

    def _collect_with_id(self, array, batch_id):
        if isinstance(array, np.ndarray):
            assert list(array.shape) == self.shape[1:], (
                f"sample of shape {list(array.shape)}, the batch takes {self.shape[1:]}"
            )
            assert _lite_type_of(array.dtype, "collect") == self.dtype, (
                f"sample of dtype {array.dtype}, the batch holds {LiteDataType(self.dtype).name}"
            )
            array = np.ascontiguousarray(array)
        else:
            assert isinstance(array, LiteTensor)
            assert array.layout.shapes == self.shape[1:]
            assert array.layout.data_type == self.dtype
            array = array.get_data_by_share()
        self._tensor.get_data_by_share()[batch_id] = array
        return batch_id

    def collect(self, array):
        """Stores a sample in the first free batch.

        Args:
            array: a ``numpy.ndarray`` or :class:`~.LiteTensor` of the sample's shape and dtype.

        Returns:
            the batch it went to; -1 (and a warning) when every batch is collected.

        Examples:
            >>> import numpy as np
            >>> from megenginelite import LiteDataType, LiteDeviceType, TensorBatchCollector
            >>> batch = TensorBatchCollector([1, 2], LiteDataType.LITE_INT,
            ...                              LiteDeviceType.LITE_CPU)
            >>> batch.collect(np.array([3, 4], "int32"))
            0
        """
        with self._mutex:
            if len(self._free_list) == 0:
                warnings.warn(
                    "all batch has been collected, please call free before collect again."
                )
                return -1
            idx = self._free_list.pop(0)
        return self._collect_with_id(array, idx)

    def collect_by_ctypes(self, data, length):
        """Stores a sample given as ctypes memory of ``length`` bytes in the first free batch.

        Args:
            data: ctypes data (an array, or a pointer).
            length: its length in bytes, a sample's size.

        Returns:
            the batch it went to; -1 when every batch is collected.

        Examples:
            >>> import ctypes
            >>> from megenginelite import LiteDataType, LiteDeviceType, TensorBatchCollector
            >>> batch = TensorBatchCollector([2, 2], LiteDataType.LITE_FLOAT,
            ...                              LiteDeviceType.LITE_CPU)
            >>> batch.collect_by_ctypes((ctypes.c_float * 2)(1.5, 2.5), 8)
            0
            >>> batch.to_numpy()[0]
            array([1.5, 2.5], dtype=float32)
        """
        with self._mutex:
            if len(self._free_list) == 0:
                return -1
            idx = self._free_list.pop(0)
        sample = LiteTensor(LiteLayout(self.shape[1:], self.dtype))
        sample.set_data_by_copy(data, length)
        self._tensor.get_data_by_share()[idx] = sample.get_data_by_share()
        return idx

    def free(self, indexes):
        """Frees batches, so that they are collected again without a warning.

        Args:
            indexes: a list of batch ids.

        Examples:
            >>> import numpy as np
            >>> from megenginelite import LiteDataType, LiteDeviceType, TensorBatchCollector
            >>> batch = TensorBatchCollector([1, 2], LiteDataType.LITE_INT,
            ...                              LiteDeviceType.LITE_CPU)
            >>> batch.collect(np.zeros(2, "int32"))
            0
            >>> batch.free([0])
            >>> batch.collect(np.ones(2, "int32"))
            0
        """
        with self._mutex:
            for i in indexes:
                if i in self._free_list:
                    warnings.warn(f"batch id {i} has not collected before free it.")
                    self._free_list.remove(i)
            self._free_list.extend(indexes)

    def get_tensor_at(self, idx):
        """The tensor of batch ``idx``, sharing the batch tensor's memory.

        Args:
            idx: the batch id.

        Returns:
            a :class:`~.LiteTensor` of shape ``[1] + sample shape``.

        Examples:
            >>> import numpy as np
            >>> from megenginelite import LiteDataType, LiteDeviceType, TensorBatchCollector
            >>> batch = TensorBatchCollector([2, 2], LiteDataType.LITE_INT,
            ...                              LiteDeviceType.LITE_CPU)
            >>> _ = batch.collect(np.array([7, 8], "int32"))
            >>> batch.get_tensor_at(0).to_numpy()
            array([[7, 8]], dtype=int32)
        """
        assert idx < self.shape[0], "the idx specific the tensor is out of range."
        if idx in self._free_list:
            warnings.warn(f"tensor with batch id {idx} has not collected before get it.")
        return self._tensor.slice([idx], [idx + 1])

    def get(self):
        """The batch tensor.

        Returns:
            the :class:`~.LiteTensor` the samples are collected into.

        Examples:
            >>> from megenginelite import LiteDataType, LiteDeviceType, TensorBatchCollector
            >>> batch = TensorBatchCollector([2, 2], LiteDataType.LITE_INT,
            ...                              LiteDeviceType.LITE_CPU)
            >>> batch.get().layout.shapes
            [2, 2]
        """
        return self._tensor

    def to_numpy(self):
        """A copy of the batch tensor's data.

        Returns:
            a ``numpy.ndarray``.

        Examples:
            >>> from megenginelite import LiteDataType, LiteDeviceType, TensorBatchCollector
            >>> batch = TensorBatchCollector([2, 1], LiteDataType.LITE_INT,
            ...                              LiteDeviceType.LITE_CPU)
            >>> batch.to_numpy().shape
            (2, 1)
        """
        return self._tensor.to_numpy()
