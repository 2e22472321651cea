"""LiteNetwork: load a dumped model and run it, with MegEngine Lite's configuration and IO
objects (LiteConfig, LiteOptions, LiteIO, LiteNetworkIO).

The network runs on NeoMeg's C++ inference API (``megengine.core._imperative_rt.InferenceModel``,
docs/cpp-inference.md), which reads NeoMeg's model files (``trace.dump``) and the ``.mge`` files
MegEngine 1.13 writes. Its IO tensors are :class:`~.LiteTensor`: the inputs are fed to the model
at each :meth:`~.LiteNetwork.forward`, the outputs filled after it.
"""

import io
import os
import threading
import warnings

import numpy as np

from megengine.core import _imperative_rt as _rt

from .struct import LiteBackend, LiteDataType, LiteDeviceType, LiteIOType, LiteTensorPhase
from .tensor import LiteLayout, LiteTensor, _check_device

__all__ = [
    "LiteConfig",
    "LiteExtraConfig",
    "LiteIO",
    "LiteNetwork",
    "LiteNetworkIO",
    "LiteOptions",
    "get_model_io_info",
]


class LiteOptions:
    """Options that tune how MegEngine compiles and runs a network.

    Every field of MegEngine 1.13 is accepted with its default. NeoMeg compiles every network
    the same way (its graph optimizations, memory planning and kernel choice are its own), so
    only ``fake_next_exec`` changes what a forward does: when set, the next
    :meth:`~.LiteNetwork.forward` feeds the inputs (planning the graph and memory for their
    shapes) without running, and the field goes back to False. The others (weight
    preprocessing, fusion, sanity checks, dynamic allocation, JIT, record levels, graph
    optimization and async levels, the NCHW44/NCHW88/NHWCD4/NCHW4/NCHW32/NCHW64 layout
    transforms) have no effect here.

    Examples:
        >>> from megenginelite import LiteOptions
        >>> options = LiteOptions()
        >>> options.weight_preprocess = True
        >>> options.graph_opt_level, options.var_sanity_check_first_run
        (2, True)
    """

    _fields = (
        "weight_preprocess",
        "fuse_preprocess",
        "fake_next_exec",
        "var_sanity_check_first_run",
        "const_shape",
        "force_dynamic_alloc",
        "force_output_dynamic_alloc",
        "force_output_use_user_specified_memory",
        "no_profiling_on_shape_change",
        "jit_level",
        "comp_node_seq_record_level",
        "graph_opt_level",
        "async_exec_level",
    )

    def __init__(self):
        self.weight_preprocess = False
        self.fuse_preprocess = False
        self.fake_next_exec = False
        self.var_sanity_check_first_run = True
        self.const_shape = False
        self.force_dynamic_alloc = False
        self.force_output_dynamic_alloc = False
        self.force_output_use_user_specified_memory = False
        self.no_profiling_on_shape_change = False
        self.jit_level = 0
        self.comp_node_seq_record_level = 0
        self.graph_opt_level = 2
        self.async_exec_level = 1
        # layout transform options
        self.enable_nchw44 = 0
        self.enable_nchw44_dot = 0
        self.enable_nchw88 = 0
        self.enable_nhwcd4 = 0
        self.enable_nchw4 = 0
        self.enable_nchw32 = 0
        self.enable_nchw64 = 0

    def __repr__(self):
        data = {}
        for name in self._fields:
            value = getattr(self, name)
            levels = ("jit_level", "comp_node_seq_record_level")
            levels += ("graph_opt_level", "async_exec_level")
            data[name] = value if name in levels else bool(value)
        return data.__repr__()


class LiteConfig:
    """How a network is loaded: its device and options.

    Args:
        device_type: the :class:`~.LiteDeviceType` the network runs on: ``LITE_CPU``, or
            ``LITE_CUDA`` (NeoMeg's ``gpu<device_id>`` comp node; a ``RuntimeError`` at load
            where no CUDA device is usable).
        option: a :class:`LiteOptions`; the defaults when omitted.

    Fields besides these: ``device_id`` (the device's index, 0), ``backend``
    (``LITE_DEFAULT``, the only one), ``options``, and MegEngine's model packing fields
    ``has_compression``, ``bare_model_cryption_name`` and ``auto_optimize_inference``, which
    have no effect (NeoMeg reads unencrypted, unpacked model files only). A non-empty
    ``discrete_input_name`` is refused at load.

    Examples:
        >>> from megenginelite import LiteConfig, LiteDeviceType
        >>> config = LiteConfig()
        >>> config.device_type = LiteDeviceType.LITE_CPU
        >>> config.options.fake_next_exec
        False
        >>> config.bare_model_cryption_name
        ''
    """

    def __init__(self, device_type=LiteDeviceType.LITE_CPU, option=None):
        self.device_type = device_type
        self.options = option if option else LiteOptions()
        self._bare_model_cryption_name = b""
        self.use_loader_dynamic_param = 0
        self.has_compression = 0
        self.device_id = 0
        self.backend = LiteBackend.LITE_DEFAULT
        self.auto_optimize_inference = 0
        self.discrete_input_name = b""

    @property
    def bare_model_cryption_name(self):
        """The name of the decryption a bare encrypted model needs (str; no effect here).

        Examples:
            >>> from megenginelite import LiteConfig
            >>> config = LiteConfig()
            >>> config.bare_model_cryption_name = "AES_default"
            >>> config.bare_model_cryption_name
            'AES_default'
        """
        return self._bare_model_cryption_name.decode("utf-8")

    @bare_model_cryption_name.setter
    def bare_model_cryption_name(self, name):
        if isinstance(name, str):
            self._bare_model_cryption_name = name.encode("utf-8")
        else:
            assert isinstance(name, bytes), "name should be str or bytes type."
            self._bare_model_cryption_name = name

    def __repr__(self):
        data = {
            "has_compression": bool(self.has_compression),
            "device_id": self.device_id,
            "device_type": LiteDeviceType(self.device_type),
            "backend": LiteBackend(self.backend),
            "bare_model_cryption_name": self.bare_model_cryption_name,
            "options": self.options,
            "auto_optimize_inference": self.auto_optimize_inference,
            "discrete_input_name": self.discrete_input_name,
        }
        return data.__repr__()


class LiteExtraConfig:
    """Extra configuration given after a network is made (:meth:`~.LiteNetwork.extra_configure`).

    Args:
        disable_model_config: do not apply the configuration packed with the model. NeoMeg's
            model files carry none, so this changes nothing.

    Examples:
        >>> from megenginelite import LiteExtraConfig
        >>> LiteExtraConfig(True)
        {'disable_configure_by_model_info': True}
    """

    def __init__(self, disable_model_config=False):
        self.disable_configure_by_model_info = disable_model_config

    def __repr__(self):
        data = {"disable_configure_by_model_info": bool(self.disable_configure_by_model_info)}
        return data.__repr__()


class LiteIO:
    """How one input or output of a network is set up.

    Args:
        name: the name of the input or output (str or bytes).
        is_host: whether the tensor is in host memory (True) or on the network's device. On a
            ``LITE_CPU`` network both are the CPU; on a ``LITE_CUDA`` network a host IO tensor
            is pinned host memory and a device one reports ``LITE_CUDA`` (NeoMeg keeps its
            memory on the host and copies it at each forward).
        io_type: a :class:`~.LiteIOType`: an output of ``LITE_IO_SHAPE`` gets only its layout.
        layout: for an input, the :class:`~.LiteLayout` its tensor has until data is set;
            for an output, MegEngine's check of the computed layout, which it does not
            enforce either (the computed one is kept).

    Examples:
        >>> from megenginelite import LiteIO, LiteIOType, LiteLayout
        >>> io = LiteIO("data", is_host=True, io_type=LiteIOType.LITE_IO_VALUE,
        ...             layout=LiteLayout([2, 4, 4]))
        >>> io.name, io.config_layout.shapes
        ('data', [2, 4, 4])
    """

    def __init__(self, name, is_host=True, io_type=LiteIOType.LITE_IO_VALUE, layout=None):
        self.name = name
        self.config_layout = layout if layout else LiteLayout()
        self.is_host = is_host
        self.io_type = io_type

    @property
    def name(self):
        """The name of the input or output (a str; bytes are decoded when assigned).

        Examples:
            >>> from megenginelite import LiteIO
            >>> LiteIO(b"data").name
            'data'
        """
        return self._name

    @name.setter
    def name(self, name):
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        assert isinstance(name, str), "name should be str or bytes type."
        self._name = name

    def __repr__(self):
        data = {
            "name": self.name,
            "is_host": bool(self.is_host),
            "io_type": LiteIOType(self.io_type),
            "config_layout": self.config_layout,
        }
        return data.__repr__()

    def __hash__(self):
        return hash(self.name)


class LiteNetworkIO:
    """The inputs and outputs a network is set up with (what is not listed keeps the
    defaults: a host tensor of the value, of the model's layout).

    Args:
        inputs: a list of :class:`LiteIO` (or of lists of ``LiteIO``'s arguments).
        outputs: the same for outputs. Listed outputs come first in
            :meth:`~.LiteNetwork.get_all_output_name`, as in MegEngine.

    Examples:
        >>> from megenginelite import LiteIO, LiteIOType, LiteLayout, LiteNetworkIO
        >>> io = LiteNetworkIO()
        >>> io.add_input(LiteIO("data", is_host=False, io_type=LiteIOType.LITE_IO_VALUE))
        >>> io.add_output("out", is_host=True, layout=LiteLayout([1, 1000]))
        >>> [i.name for i in io.inputs], [o.name for o in io.outputs]
        (['data'], ['out'])
    """

    def __init__(self, inputs=None, outputs=None):
        self.inputs = []
        self.outputs = []
        for src, dst in ((inputs, self.inputs), (outputs, self.outputs)):
            for i in src or []:
                if isinstance(i, list):
                    dst.append(LiteIO(*i))
                else:
                    assert isinstance(i, LiteIO), (
                        "the param to construct LiteNetworkIO must be list of the LiteIO member "
                        "or the LiteIO."
                    )
                    dst.append(i)

    def add_input(self, obj, is_host=True, io_type=LiteIOType.LITE_IO_VALUE, layout=None):
        """Adds an input: a :class:`LiteIO`, or a name with ``LiteIO``'s other arguments.

        Args:
            obj: a :class:`LiteIO` or an input name.
            is_host: as :class:`LiteIO` takes it (when ``obj`` is a name).
            io_type: as :class:`LiteIO` takes it.
            layout: as :class:`LiteIO` takes it.

        Examples:
            >>> from megenginelite import LiteNetworkIO
            >>> io = LiteNetworkIO()
            >>> io.add_input("data")
            >>> io.inputs[0].is_host
            True
        """
        if isinstance(obj, LiteIO):
            self.inputs.append(obj)
        else:
            self.inputs.append(LiteIO(obj, is_host, io_type, layout))

    def add_output(self, obj, is_host=True, io_type=LiteIOType.LITE_IO_VALUE, layout=None):
        """Adds an output: a :class:`LiteIO`, or a name with ``LiteIO``'s other arguments.

        Args:
            obj: a :class:`LiteIO` or an output name.
            is_host: as :class:`LiteIO` takes it (when ``obj`` is a name).
            io_type: as :class:`LiteIO` takes it.
            layout: as :class:`LiteIO` takes it.

        Examples:
            >>> from megenginelite import LiteIOType, LiteNetworkIO
            >>> io = LiteNetworkIO()
            >>> io.add_output("out", io_type=LiteIOType.LITE_IO_SHAPE)
            >>> io.outputs[0].io_type.name
            'LITE_IO_SHAPE'
        """
        if isinstance(obj, LiteIO):
            self.outputs.append(obj)
        else:
            self.outputs.append(LiteIO(obj, is_host, io_type, layout))

    def __repr__(self):
        data = {"inputs": list(self.inputs), "outputs": list(self.outputs)}
        return data.__repr__()


# The model's dtype names and the Lite types holding them: a quantized tensor holds its
# stored integers, bool its bytes (MegEngine Lite refuses both).
_MODEL_DTYPES = {
    "float32": LiteDataType.LITE_FLOAT,
    "float16": LiteDataType.LITE_HALF,
    "int32": LiteDataType.LITE_INT,
    "int16": LiteDataType.LITE_INT16,
    "int8": LiteDataType.LITE_INT8,
    "uint8": LiteDataType.LITE_UINT8,
    "bool": LiteDataType.LITE_UINT8,
    "QuantizedS8": LiteDataType.LITE_INT8,
    "Quantized8Asymm": LiteDataType.LITE_UINT8,
    "QuantizedS32": LiteDataType.LITE_INT,
}


def _lite_dtype(model_dtype, name):
    base = model_dtype.split("(")[0]
    if base not in _MODEL_DTYPES:
        raise RuntimeError(
            f"the model's tensor {name!r} is {model_dtype}, which Lite tensors cannot hold"
        )
    return _MODEL_DTYPES[base]


def _lite_shape(shape):
    # MegEngine's graphs have no 0-dim tensors: a scalar is one element.
    return list(shape) if len(shape) else [1]


def _read_model(file):
    if isinstance(file, (str, os.PathLike)):
        with open(file, "rb") as f:
            return f.read()
    if isinstance(file, (bytes, bytearray, memoryview)):
        return bytes(file)
    assert hasattr(file, "read"), "file must be a path, bytes or a file object opened in 'rb'"
    return file.read()


def _doc_model():
    # The model the examples of LiteNetwork's methods run: out = relu(data) * 2 on a (2, 3)
    # float32 input, dumped by trace.dump (imported here: megengine.jit is not needed to run
    # a model).
    import megengine as mge
    import megengine.functional as F
    from megengine.jit import trace

    @trace(symbolic=True, capture_as_const=True)
    def fn(data):
        return F.relu(data) * 2

    fn(mge.Tensor(np.zeros((2, 3), "float32")))
    f = io.BytesIO()
    fn.dump(f, arg_names=["data"], output_names=["out"])
    return f.getvalue()


class LiteNetwork:
    """A model loaded for inference, run through its IO tensors.

    Args:
        config: a :class:`LiteConfig` (the CPU and default options when omitted).
        io: a :class:`LiteNetworkIO` (every input and output with the defaults when omitted).

    The device, thread number and CPU inplace mode are set before :meth:`load`, as MegEngine
    requires. Model files: NeoMeg's (``megengine.jit.trace.dump``) and MegEngine 1.13's
    ``.mge`` (docs/cpp-inference.md lists the operators). Errors are ``RuntimeError``, as
    MegEngine Lite's: a file that is not a model, an unknown IO name, an input of another
    shape than the model accepts or of another dtype than its own; a missing file is
    ``FileNotFoundError``.

    Examples:
        >>> import io
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> from megengine.jit import trace
        >>> from megenginelite import LiteConfig, LiteDeviceType, LiteNetwork
        >>> @trace(symbolic=True, capture_as_const=True)
        ... def fn(data):
        ...     return F.relu(data) * 2
        >>> _ = fn(mge.Tensor(np.zeros((2, 3), "float32")))
        >>> f = io.BytesIO()
        >>> _ = fn.dump(f, arg_names=["data"], output_names=["out"])
        >>> config = LiteConfig()
        >>> config.device_type = LiteDeviceType.LITE_CPU
        >>> network = LiteNetwork(config)
        >>> network.load(f.getvalue())
        >>> input_tensor = network.get_io_tensor(network.get_input_name(0))
        >>> input_tensor.set_data_by_copy(np.array([[-1, 0, 1], [2, -3, 4]], "float32"))
        >>> network.forward()
        >>> network.wait()
        >>> network.get_io_tensor(network.get_output_name(0)).to_numpy()
        array([[0., 0., 2.],
               [4., 0., 8.]], dtype=float32)
    """

    def __init__(self, config=None, io=None):
        self.config = config if config else LiteConfig()
        self.network_io = io if io else LiteNetworkIO()
        self._model = None
        self._threads = 1
        self._inplace = False
        self._device_id = int(self.config.device_id)
        self._stream_id = 0
        self._async_callback = None
        self._start_callback = None
        self._finish_callback = None
        self._pending = None  # (thread, [exception]) of an async forward
        self._algo_policy = None
        self._workspace_limit = None

    def __repr__(self):
        data = {"config": self.config, "IOs": self.network_io}
        return data.__repr__()

    # --- loading ------------------------------------------------------------------------------

    def _device(self):
        device_type = _check_device(self.config.device_type, self._device_id)
        if device_type == LiteDeviceType.LITE_CUDA:
            return f"gpu{self._device_id}"
        return "cpu0"

    def load(self, file):
        """Loads a model and makes its IO tensors.

        Args:
            file: a path (str or ``os.PathLike``), an open binary file, or the model's bytes.

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> network = LiteNetwork()
            >>> network.load(_doc_model())
            >>> network.get_all_input_name(), network.get_all_output_name()
            (['data'], ['out'])
        """
        data = _read_model(file)
        if self.config.discrete_input_name:
            raise RuntimeError(
                "LiteConfig.discrete_input_name: NeoMeg's Lite has no discrete (multi-tensor) "
                "inputs"
            )
        try:
            model = _rt.InferenceModel(data, self._device())
        except _rt.ModelError as e:
            raise RuntimeError(f"invalid model format: {e}") from e
        self._attach(model)

    def _attach(self, model):
        self._wait_pending()
        ios_in = {io.name: io for io in self.network_io.inputs}
        ios_out = {io.name: io for io in self.network_io.outputs}
        outputs = [name for name, _, _ in model.outputs]
        unknown = [n for n in list(ios_in) + list(ios_out) if n not in model.input_names + outputs]
        if unknown:
            # MegEngine ignores them too (an output may also name an inner var there, which a
            # NeoMeg model file does not keep).
            warnings.warn(
                f"LiteNetworkIO names {unknown} are not inputs or outputs of the model "
                f"(inputs {model.input_names}, outputs {outputs}); they are ignored"
            )
        cuda = LiteDeviceType(int(self.config.device_type)) == LiteDeviceType.LITE_CUDA
        self._ios = {}
        self._inputs = {}
        for name, dtype, _ in model.inputs:
            io = ios_in.get(name, LiteIO(name))
            layout = LiteLayout(_lite_shape(model.input_shape(name)), _lite_dtype(dtype, name))
            if io.config_layout.ndim:
                layout = io.config_layout
            self._inputs[name] = self._io_tensor(layout, io, cuda)
            self._ios[name] = io
        self._outputs = {}
        order = [n for n in ios_out if n in outputs] + [n for n in outputs if n not in ios_out]
        shapes = {name: (dtype, shape) for name, dtype, shape in model.outputs}
        for name in order:
            dtype, shape = shapes[name]
            io = ios_out.get(name, LiteIO(name))
            layout = LiteLayout(_lite_shape(shape), _lite_dtype(dtype, name))
            self._outputs[name] = self._io_tensor(layout, io, cuda)
            self._ios.setdefault(name, io)
        self._input_dtypes = {name: _lite_dtype(dtype, name) for name, dtype, _ in model.inputs}
        self._model = model

    def _io_tensor(self, layout, io, cuda):
        if cuda and not io.is_host:
            return LiteTensor(layout, LiteDeviceType.LITE_CUDA, self._device_id)
        return LiteTensor(layout, LiteDeviceType.LITE_CPU, 0, is_pinned_host=cuda)

    def _require_loaded(self, what):
        if self._model is None:
            raise RuntimeError(f"{what} should be used after model loaded.")

    def _require_unloaded(self, what):
        if self._model is not None:
            raise RuntimeError(f"{what} should be used before model loaded.")

    def share_weights_with(self, src_network):
        """Loads the model ``src_network`` loaded, sharing its weights (NeoMeg's
        ``InferenceModel.clone``: the file bytes and weights are shared, each network has its
        own graph, memory and IO tensors, so the two may run at the same time).

        Args:
            src_network: a loaded :class:`LiteNetwork`.

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> src = LiteNetwork()
            >>> src.load(_doc_model())
            >>> network = LiteNetwork()
            >>> network.share_weights_with(src)
            >>> network.get_all_output_name()
            ['out']
        """
        assert isinstance(src_network, LiteNetwork)
        if src_network._model is None:
            raise RuntimeError(
                "shared_weight_with_network should be used after the src network loaded."
            )
        self._attach(src_network._model.clone())

    # --- running ------------------------------------------------------------------------------

    def _feed(self):
        model = self._model
        for name, tensor in self._inputs.items():
            want = self._input_dtypes[name]
            have = LiteDataType(tensor.layout.data_type)
            if have != want:
                raise RuntimeError(
                    f"dtype mismatch: input {name!r} of the model is "
                    f"{np.dtype(LiteLayout(dtype=want).dtype)}, its tensor holds "
                    f"{np.dtype(tensor.layout.dtype)} (set_data_by_copy takes the array's dtype: "
                    "convert the array with astype)"
                )
            try:
                model.set_input(name, np.ascontiguousarray(tensor._array))
            except (_rt.ModelError, ValueError, IndexError) as e:
                raise RuntimeError(f"input {name!r} of shape {tensor.layout.shapes}: {e}") from e

    def _run(self):
        threads = 1 if self._inplace else self._threads
        before = _rt.x86_threads()
        try:
            if threads != before:
                try:
                    _rt.set_x86_threads(threads)
                except ValueError as e:  # one thread only (no OpenMP, or a forked process)
                    warnings.warn(f"LiteNetwork: runs on one thread: {e}")
            self._model.run()
        finally:
            if _rt.x86_threads() != before:
                try:
                    _rt.set_x86_threads(before)
                except ValueError:  # a forked process keeps one thread
                    pass
        for name, tensor in self._outputs.items():
            value = self._model.output(name)
            if not value.ndim:
                value = value.reshape(1)
            if self._ios[name].io_type == LiteIOType.LITE_IO_SHAPE:
                if list(value.shape) != tensor.layout.shapes:
                    tensor._set_layout(LiteLayout(value.shape, tensor.layout.data_type))
            else:
                tensor._store(value)

    def _call(self, callback, tensors):
        if callback is not None:
            callback({self._ios[name]: t for name, t in tensors.items()})

    def forward(self):
        """Runs the model on the input tensors' data and fills the output tensors.

        With :meth:`async_with_callback`, returns at once: the run goes on in another thread,
        which calls the callback when it ends; :meth:`wait` waits for it (and raises its
        error).

        Examples:
            >>> import numpy as np
            >>> from megenginelite import LiteNetwork
            >>> network = LiteNetwork()
            >>> network.load(_doc_model())
            >>> network.get_io_tensor("data").set_data_by_copy(np.ones((2, 3), "float32"))
            >>> network.forward()
            >>> network.wait()
            >>> network.get_io_tensor("out").to_numpy()
            array([[2., 2., 2.],
                   [2., 2., 2.]], dtype=float32)
        """
        self._require_loaded("forward")
        self._wait_pending()
        self._feed()
        if self.config.options.fake_next_exec:
            self.config.options.fake_next_exec = False
            return
        self._call(self._start_callback, self._inputs)
        if self._async_callback is None:
            self._run()
            self._call(self._finish_callback, self._outputs)
            return
        errors = []

        def work():
            try:
                self._run()
                self._call(self._finish_callback, self._outputs)
                self._async_callback()
            except Exception as e:  # noqa: BLE001 - wait() raises it in the caller
                errors.append(e)

        thread = threading.Thread(target=work, name="LiteNetwork.forward", daemon=True)
        self._pending = (thread, errors)
        thread.start()

    def _wait_pending(self):
        if self._pending is None:
            return
        thread, errors = self._pending
        thread.join()
        self._pending = None
        if errors:
            raise errors[0]

    def wait(self):
        """Waits until the forward in progress ends (a synchronous forward has ended already).

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> network = LiteNetwork()
            >>> network.load(_doc_model())
            >>> network.forward()
            >>> network.wait()
        """
        self._require_loaded("wait")
        self._wait_pending()

    def async_with_callback(self, async_callback):
        """Makes :meth:`forward` asynchronous: it returns at once, and ``async_callback()``
        is called from the thread that ran the model once the outputs are filled.

        Args:
            async_callback: a function of no arguments (its return value is ignored).

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> network = LiteNetwork()
            >>> network.load(_doc_model())
            >>> done = []
            >>> network.async_with_callback(lambda: done.append(1) or 0)
            >>> network.forward()
            >>> network.wait()
            >>> done
            [1]
        """
        self._async_callback = async_callback

    def set_start_callback(self, start_callback):
        """Sets a function called at each forward before the model runs, with a dict from
        each input's :class:`LiteIO` to its :class:`~.LiteTensor`.

        Args:
            start_callback: a function of one argument (its return value is ignored).

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> network = LiteNetwork()
            >>> network.load(_doc_model())
            >>> seen = []
            >>> network.set_start_callback(lambda ios: seen.extend(io.name for io in ios))
            >>> network.forward()
            >>> seen
            ['data']
        """
        self._start_callback = start_callback

    def set_finish_callback(self, finish_callback):
        """Sets a function called at each forward after the model ran, with a dict from each
        output's :class:`LiteIO` to its :class:`~.LiteTensor` (filled).

        Args:
            finish_callback: a function of one argument (its return value is ignored).

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> network = LiteNetwork()
            >>> network.load(_doc_model())
            >>> shapes = []
            >>> network.set_finish_callback(
            ...     lambda ios: shapes.extend(t.layout.shapes for t in ios.values()))
            >>> network.forward()
            >>> shapes
            [[2, 3]]
        """
        self._finish_callback = finish_callback

    # --- IO -----------------------------------------------------------------------------------

    def get_io_tensor(self, name, phase=LiteTensorPhase.LITE_IO):
        """The tensor of an input or output. The same tensor is returned at every call: an
        input's is read at each forward, an output's written.

        Args:
            name: the input's or output's name (str or bytes).
            phase: a :class:`~.LiteTensorPhase`: look among the inputs and outputs
                (``LITE_IO``, inputs first), the inputs only or the outputs only.

        Returns:
            a :class:`~.LiteTensor`.

        Examples:
            >>> from megenginelite import LiteNetwork, LiteTensorPhase
            >>> network = LiteNetwork()
            >>> network.load(_doc_model())
            >>> network.get_io_tensor("data", LiteTensorPhase.LITE_INPUT).layout
            {'shapes': [2, 3], 'ndim': 2, 'data_type': <class 'numpy.float32'>}
        """
        self._require_loaded("get_io_tensor")
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        phase = LiteTensorPhase(int(phase))
        if phase != LiteTensorPhase.LITE_OUTPUT and name in self._inputs:
            return self._inputs[name]
        if phase != LiteTensorPhase.LITE_INPUT and name in self._outputs:
            return self._outputs[name]
        raise RuntimeError(
            f"get_io_tensor: the network has no {'' if phase == 0 else phase.name[5:].lower()}"
            f"{' ' if phase else ''}tensor named {name!r} (inputs {list(self._inputs)}, "
            f"outputs {list(self._outputs)})"
        )

    def get_input_name(self, index):
        """The name of the input at ``index``.

        Args:
            index: the input's index, from 0.

        Returns:
            a str.

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> network = LiteNetwork()
            >>> network.load(_doc_model())
            >>> network.get_input_name(0)
            'data'
        """
        return self._name_at("input", self._inputs, index)

    def get_output_name(self, index):
        """The name of the output at ``index``.

        Args:
            index: the output's index, from 0.

        Returns:
            a str.

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> network = LiteNetwork()
            >>> network.load(_doc_model())
            >>> network.get_output_name(0)
            'out'
        """
        return self._name_at("output", self._outputs, index)

    def _name_at(self, kind, tensors, index):
        # get_input_name / get_output_name, with MegEngine Lite's wording for a bad index.
        self._require_loaded(f"get_{kind}_name")
        names = list(tensors)
        if not 0 <= index < len(names):
            raise RuntimeError(
                f"The {kind} tensor index is large than the total {kind}s number: index {index}, "
                f"{len(names)} {kind}s"
            )
        return names[index]

    def get_all_input_name(self):
        """The names of all inputs, in the model's order (MegEngine's follows a hash map's).

        Returns:
            a list of str; None before :meth:`load` (as in MegEngine).

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> network = LiteNetwork()
            >>> network.get_all_input_name() is None
            True
            >>> network.load(_doc_model())
            >>> network.get_all_input_name()
            ['data']
        """
        return list(self._inputs) if self._model is not None and self._inputs else None

    def get_all_output_name(self):
        """The names of all outputs: those the :class:`LiteNetworkIO` lists first, then the
        others in the model's order.

        Returns:
            a list of str; None before :meth:`load` (as in MegEngine).

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> network = LiteNetwork()
            >>> network.load(_doc_model())
            >>> network.get_all_output_name()
            ['out']
        """
        return list(self._outputs) if self._model is not None and self._outputs else None

    # --- settings -----------------------------------------------------------------------------

    def is_cpu_inplace_mode(self):
        """Whether the network runs in CPU inplace mode.

        Returns:
            a bool.

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> LiteNetwork().is_cpu_inplace_mode()
            False
        """
        return self._inplace

    def enable_cpu_inplace_mode(self):
        """Runs the network in CPU inplace mode: on the calling thread only, one thread (before
        :meth:`load`).

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> network = LiteNetwork()
            >>> network.enable_cpu_inplace_mode()
            >>> network.is_cpu_inplace_mode()
            True
        """
        self._require_unloaded("set_cpu_inplace_mode")
        self._inplace = True

    @property
    def threads_number(self):
        """The number of CPU threads a forward runs on (1 by default, as in MegEngine); set it
        before :meth:`load`. NeoMeg's x86 kernels run on that many OpenMP threads during this
        network's forwards.

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> network = LiteNetwork()
            >>> network.threads_number = 2
            >>> network.threads_number
            2
        """
        return self._threads

    @threads_number.setter
    def threads_number(self, nr_threads):
        self._require_unloaded("set_cpu_threads_number")
        if int(nr_threads) < 1:
            raise RuntimeError(f"set_cpu_threads_number: expected at least 1, got {nr_threads}")
        self._threads = int(nr_threads)

    @property
    def device_id(self):
        """The index of the network's device; set it before :meth:`load`.

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> LiteNetwork().device_id
            0
        """
        return self._device_id

    @device_id.setter
    def device_id(self, device_id):
        self._require_unloaded("set_device_id")
        self._device_id = int(device_id)

    @property
    def stream_id(self):
        """The CUDA stream's index MegEngine would use; set it before :meth:`load`. NeoMeg
        runs a device's work on one stream, so this is only kept.

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> LiteNetwork().stream_id
            0
        """
        return self._stream_id

    @stream_id.setter
    def stream_id(self, stream_id):
        self._require_unloaded("set_stream_id")
        self._stream_id = int(stream_id)

    def set_network_algo_policy(
        self, policy, shared_batch_size=0, binary_equal_between_batch=False
    ):
        """Sets how MegEngine chooses operators' algorithms (fast-run profiling, ...). NeoMeg
        chooses its kernels itself (docs/x86-backend.md, "The operator families";
        ``megengine.config.benchmark_kernel`` for its own profiling), so this checks the policy
        and changes nothing.

        Args:
            policy: :class:`~.LiteAlgoSelectStrategy` flags combined with ``|``.
            shared_batch_size: the batch size fast-run profiles with (0: the model's).
            binary_equal_between_batch: whether equal input batches give equal output batches.

        Examples:
            >>> from megenginelite import LiteAlgoSelectStrategy, LiteNetwork
            >>> network = LiteNetwork()
            >>> network.set_network_algo_policy(
            ...     LiteAlgoSelectStrategy.LITE_ALGO_PROFILE
            ...     | LiteAlgoSelectStrategy.LITE_ALGO_REPRODUCIBLE)
        """
        if not 0 < int(policy) < 16:
            raise RuntimeError(
                f"set_network_algo_policy: {policy} is not LiteAlgoSelectStrategy flags"
            )
        self._algo_policy = (int(policy), shared_batch_size, binary_equal_between_batch)

    def set_network_algo_workspace_limit(self, size_limit):
        """Bounds the workspace MegEngine's algorithms may take. NeoMeg's kernels size their
        own workspace, so this changes nothing.

        Args:
            size_limit: the bound in bytes.

        Examples:
            >>> from megenginelite import LiteNetwork
            >>> LiteNetwork().set_network_algo_workspace_limit(1 << 20)
        """
        self._workspace_limit = int(size_limit)

    def extra_configure(self, extra_config):
        """Applies a :class:`LiteExtraConfig`. NeoMeg's model files carry no configuration to
        disable, so this changes nothing.

        Args:
            extra_config: a :class:`LiteExtraConfig`.

        Examples:
            >>> from megenginelite import LiteExtraConfig, LiteNetwork
            >>> LiteNetwork().extra_configure(LiteExtraConfig(True))
        """
        assert isinstance(extra_config, LiteExtraConfig)


def get_model_io_info(model_path, config=None):
    """The inputs and outputs of a model file, with their layouts, without making a network.

    Args:
        model_path: the model's path (or its bytes).
        config: a :class:`LiteConfig` (the CPU when omitted).

    Returns:
        a :class:`LiteNetworkIO` whose :class:`LiteIO` carry the model's layouts (an input's
        current shape; an output's for it).

    Examples:
        >>> from megenginelite import get_model_io_info
        >>> ios = get_model_io_info(_doc_model())
        >>> ios.inputs[0].name, ios.outputs[0].config_layout.shapes
        ('data', [2, 3])
    """
    network = LiteNetwork(config)
    network.load(model_path)
    ios = LiteNetworkIO()
    for name, tensor in network._inputs.items():
        ios.add_input(LiteIO(name, layout=tensor.layout))
    for name, tensor in network._outputs.items():
        ios.add_output(LiteIO(name, layout=tensor.layout))
    return ios
