"""``trace``: records a function of tensors into a ``src/graph`` ComputingGraph on its first
call and runs the compiled graph on later calls, without the Python code.

How a call goes (the C++ half is ``python/src/trace.cpp`` over ``imperative/src/trace.cpp``):

- The first call runs the function eagerly while a recorder is active: every op that goes
  through ``imperative::apply`` (Python's ops, the backward rules ``GradManager.backward`` runs,
  an optimizer's updates) becomes a graph node. Tensor arguments become the graph's named inputs
  (``arg_0``, ``kwarg_x``, ...). Tensors from before the call that it reads (parameters,
  optimizer state, tensors captured from outside) become inputs bound to those Python objects,
  so every replay reads their current values; with ``capture_as_const`` they become constants.
  Tensors the call gives new values in place (``Tensor._reset``, ``x[...] = v``) get graph
  outputs that each replay writes back into the same objects.
- Later calls whose tensor arguments have the recorded shapes and dtypes (and whose other
  arguments are equal) run the compiled graph and return new Tensors in the recorded structure.
- A later call whose tensor arguments differ only in shape (a smaller last batch) records the
  function again for those shapes, as MegEngine's graph takes new shapes; the trace keeps the
  recordings of the last few shape combinations and replays the one that matches.
- Any other call that does not match runs the function again in check mode: each op is compared
  with the recording, and the first that differs (another op, other params, other input shapes
  or dtypes) raises :class:`TraceError` naming both ops and the file and line of each. A call
  that matches op for op returns its (eager) results.
- A recording that cannot be replayed without its Python code runs every later call eagerly,
  with a RuntimeWarning naming the reason and the line: a Python
  ``autodiff.Function``, or a tensor's value read on the host (``numpy()``, ``item()``,
  ``bool()``, ``int()``, printing) while recording, since the value may steer Python (a branch,
  a slice bound, a constant) and a replay would repeat the recorded one. MegEngine raises
  ``TraceError`` there instead (``symbolic=True``) or when the replay's value differs.
"""

import contextlib
import functools
import inspect
import os
import warnings

import numpy as np

from ..core import _imperative_rt as _rt
from ..core.tensor import shape_dim as _shape_dim
from ..core.tensor import step_gate as _step_gate
from ..tensor import Tensor
from .dtr_config import DTRConfig
from .dump import dump_trace
from .graph_opt_config import GraphOptimizationConfig
from .graph_profile import megengine_profile
from .sublinear_memory_config import SublinearMemoryConfig

TraceError = _rt.TraceError
TraceError.__module__ = __name__
TraceError.__doc__ = """A traced function's call diverged from its recording: another op, other
params or other input shapes or dtypes than the trace recorded. The message names both ops and
the file and line of each.

Args:
    args: the message.

Examples:
    >>> import megengine as mge
    >>> from megengine.jit import TraceError, trace
    >>> f = trace(lambda x, neg: -x if neg else x * 2)
    >>> _ = f(mge.Tensor([1.0, 2.0]), False)
    >>> try:
    ...     f(mge.Tensor([1.0, 2.0]), True)
    ... except TraceError as e:
    ...     print(str(e)[:60])
    trace: op 0 diverged: the call runs Elemwise(mode=NEGATE)({2
"""

# The call site of each recorded op is the first frame outside this package.
_rt._trace_set_package_dir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)


def is_tracing():
    """Whether a trace is recording or checking on this thread, outside
    :func:`exclude_from_trace`.

    Returns:
        bool

    Examples:
        >>> from megengine.jit import is_tracing, trace
        >>> is_tracing()
        False
    """
    return _rt._is_tracing()


@contextlib.contextmanager
def exclude_from_trace():
    """A region of a traced function whose ops run eagerly on every call and are not recorded.

    A trace whose function entered such a region never replays its graph: every later call runs
    the function again, checking the recorded ops against the recording (so a divergence still
    raises :class:`TraceError`) and running the excluded ones as they come. Outside a trace the
    region changes nothing.

    Examples:
        >>> import megengine as mge
        >>> from megengine.jit import exclude_from_trace, trace
        >>> seen = []
        >>> @trace
        ... def f(x):
        ...     with exclude_from_trace():
        ...         seen.append(float(x.numpy().sum()))
        ...     return x * 2
        >>> [f(mge.Tensor([float(i)])).item() for i in range(3)], seen
        ([0.0, 2.0, 4.0], [0.0, 1.0, 2.0])

    Returns:
        a context manager.
    """
    entered = _rt._trace_exclude(True)
    try:
        yield
    finally:
        if entered:
            _rt._trace_exclude(False)


# ---- argument structure ----------------------------------------------------------------


class _Leaf:
    """A non-tensor value in an argument or result structure, compared by value."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        if not isinstance(other, _Leaf):
            return False
        a, b = self.value, other.value
        if a is b:
            return True
        if type(a) is not type(b):
            return False
        if isinstance(a, np.ndarray):
            return a.shape == b.shape and a.dtype == b.dtype and bool(np.all(a == b))
        try:
            return bool(a == b)
        except (TypeError, ValueError):  # no comparison, or an ambiguous truth value
            return False


_TENSOR = "T"


def _flatten(obj, tensors, names, name):
    """The structure of `obj` with its tensors replaced by a marker; appends the tensors (and a
    graph input name for each) in order."""
    if isinstance(obj, Tensor):
        tensors.append(obj)
        names.append(name)
        return _TENSOR
    if type(obj) in (list, tuple):
        return (
            type(obj),
            tuple(_flatten(o, tensors, names, f"{name}_{i}") for i, o in enumerate(obj)),
        )
    if type(obj) is dict:
        return (
            dict,
            tuple((k, _flatten(v, tensors, names, f"{name}_{k}")) for k, v in obj.items()),
        )
    return _Leaf(obj)


def _plain_dims(obj):
    """``obj`` with the dims (TracedDim) it holds in lists, tuples and dicts as their ints: a
    shape returned by the traced function is its value at that call."""
    if type(obj) is _shape_dim.TracedDim:
        return obj._value
    if type(obj) in (list, tuple):
        items = [_plain_dims(o) for o in obj]
        return obj if all(a is b for a, b in zip(items, obj)) else type(obj)(items)
    if type(obj) is dict:
        items = {k: _plain_dims(v) for k, v in obj.items()}
        return obj if all(items[k] is v for k, v in obj.items()) else items
    return obj


def _unflatten(spec, tensors):
    if isinstance(spec, _Leaf):
        return spec.value
    if spec == _TENSOR:
        return next(tensors)
    kind, items = spec
    if kind is dict:
        return {k: _unflatten(v, tensors) for k, v in items}
    return kind(_unflatten(s, tensors) for s in items)


def _flatten_call(args, kwargs):
    tensors, names = [], []
    spec = (
        tuple(_flatten(a, tensors, names, f"arg_{i}") for i, a in enumerate(args)),
        tuple((k, _flatten(v, tensors, names, f"kwarg_{k}")) for k, v in kwargs.items()),
    )
    return spec, tensors, names


def _shapes(tensors):
    return tuple(tuple(t.shape) for t in tensors)


def _dtypes(tensors):
    return tuple(np.dtype(t.dtype) for t in tensors)


# What a recording is made of, kept per argument shapes; the recordings of this many other
# shape combinations are kept besides the current one.
_RECORDING = (
    "_session",
    "_mode",
    "_guards",
    "_spec",
    "_aliasing",
    "_shapes",
    "_dtypes",
    "_arg_names",
    "_out_names",
    "_out_dict_keys",
    "_out_spec",
    "_shape_notes",
    "_key_sources",
    "_reseed",
)
_MAX_RECORDINGS = 8


def _reseed_plan(session):
    """(generators, [(step, key index)]) of a compiled recording: the generators whose draws the
    recording noted, in order, and for each random step of the graph (a DropoutForward, and the
    DropoutBackward that carries its seed) which of those draws keyed it. A step keyed otherwise
    (a seed the code fixed) keeps its seed."""
    noted = list(session.keys)
    if not noted:
        return [], []
    index = {key: i for i, (_, key) in enumerate(noted)}
    reseed = [(step, index[seed]) for step, seed in session.seeded_steps() if seed in index]
    return [rng for rng, _ in noted], reseed


def _aliasing(tensors):
    """Which earlier argument each tensor argument is (its own index when none): a graph with one
    input for two arguments must not replay with two different ones."""
    first = {}
    return tuple(first.setdefault(id(t), i) for i, t in enumerate(tensors))


class trace:
    """Wraps a function of tensors: the first call records it into a graph, later calls run the
    compiled graph.

    Usable as ``trace(f)``, ``@trace`` or ``@trace(capture_as_const=True)``, also on methods
    (one trace shared by every instance, as in MegEngine). See the module's docstring for how
    recording, replay and :class:`TraceError` work. Things to know:

    - Only what goes through ops is recorded. Python control flow and Python numbers are fixed
      at their values of the first call (except an optimizer's hyperparameters and a module's
      ``training`` flag: after a change, such as a scheduler's step or ``eval()``, the trace
      records again); generators (``zeros``, ``ones``) are recorded as constants of the values
      they gave then. A tensor's value read on the host while recording (``.numpy()``,
      ``.item()``, ``bool()``, printing) ends the recording: later calls run eagerly, with a
      warning naming the line.
    - Tensors made inside the call and kept outside it (other than the results and objects
      updated in place) keep their first call's values: clear gradients inside the traced step
      (``opt.clear_grad()``), or read ``.grad`` from a returned tensor.
    - Random ops replay with new numbers (``F.dropout`` in training, ``megengine.random.normal``
      and the other distributions): each replay draws from ``megengine.random``'s generators
      the keys the eager call would, so a seeded run gives the same numbers traced and eager.
      A function that calls a Python ``autodiff.Function`` cannot be replayed as a graph: the
      trace warns and later calls run it eagerly.

    Args:
        function: the function to trace; its tensor arguments may be nested in lists, tuples and
            dicts, and other arguments must be equal on each call for the graph to replay.
        symbolic: accepted; NeoMeg always records by running the function eagerly once (the
            results are the same; nothing is computed twice).
        capture_as_const: make constants of the tensors the function reads from outside (its
            closure, globals, module parameters) instead of binding them, unless the function
            updates them in place. Default: False
        record_only: accepted (implies ``capture_as_const``, as in MegEngine); the first call
            runs while it records.
        sublinear_memory_config: a :class:`SublinearMemoryConfig`; accepted, no effect.
        dtr_config: a :class:`DTRConfig`; accepted, no effect.
        profiling: time every step of the compiled graph's runs; :meth:`get_profile` returns
            the last run's profile. Default: False
        opt_level: graph optimization level, 0 to 3: 0 runs no pass; 1 constant folding,
            common-subexpression elimination and in-place reuse of dying buffers; 2 also fuses
            chains of elementwise ops into one pass over memory and convolution + bias (+
            residual) + activation into ConvBias (where the backend has a ConvBias kernel of its
            own), with ReLU's backward reading the ReLU's output (exact, and it frees the
            activation's input early) and, before a max pooling's backward, masking the pooled
            gradient instead of the full one (exact), bias gradients summed over the trailing (spatial) axes
            first (a reordered sum: float rounding differs) and, on x86, keeps convolutions,
            BatchNorm, poolings and the elementwise ops between them, forward and backward, in
            oneDNN's blocked layout;
            3 also folds BatchNorm in inference form into the convolution before it (the
            weights must be constants: ``capture_as_const``). Default: 2
        graph_opt_config: a :class:`GraphOptimizationConfig`; accepted, no effect (its
            switches fuse dimshuffles and reductions into JIT kernels, which NeoMeg has not;
            elementwise fusion follows ``opt_level``).
        symbolic_shape: with True, ``x.shape`` and ``x.size`` read by the traced function
            (not by the library's own code) while it records give dims
            (``megengine.core.tensor.shape_dim.TracedDim``, printed as ints; MegEngine gives
            Tensors): a reshape to them (``x.reshape(x.shape[0], -1)``, ``F.reshape``), a
            shape of them given to ``F.broadcast_to``, ``F.zeros``, ``F.ones`` or ``F.full``,
            ``+ - * //`` between them and ints, and arithmetic with Tensors become graph ops
            (``GetVarShape``, ...), so a dumped model follows its inputs' shapes
            (``trace.dump(input_shapes=...)``), as ``F.flatten`` does. Any other use
            (``int()``, indexing, comparisons, numpy, other functions' int arguments) takes the
            value as a constant of the graph, and ``dump`` then refuses dynamic input
            dimensions with a :class:`TraceError` naming the line. With False, shapes are plain
            ints, every shape read (``F.flatten``'s too) is a constant of the graph, and
            ``dump`` refuses dynamic input dimensions. Either way a graph replays the recorded
            shapes only: a call with other shapes records again for them (the shape reads
            then give the new values). Default: True
        without_host: accepted; replays never run the Python code (MegEngine's
            ``without_host=True`` behaviour) unless the call diverges or the function uses
            :func:`exclude_from_trace`.

    Returns:
        a callable returning what the function returns (new Tensors on each replay).

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> from megengine.jit import trace
        >>> @trace
        ... def f(x):
        ...     return F.relu(x * 2 - 1)
        >>> f(mge.Tensor([0.0, 1.0])).numpy().tolist()  # recorded
        [0.0, 1.0]
        >>> f(mge.Tensor([2.0, 3.0])).numpy().tolist()  # the compiled graph
        [3.0, 5.0]
    """

    def __new__(cls, *args, **kwargs):
        if not args:
            return functools.partial(cls, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        function,
        symbolic=False,
        capture_as_const=False,
        record_only=False,
        sublinear_memory_config: SublinearMemoryConfig = None,
        dtr_config: DTRConfig = None,
        profiling: bool = False,
        opt_level: int = 2,
        graph_opt_config: GraphOptimizationConfig = None,
        symbolic_shape: bool = True,
        without_host: bool = False,
    ):
        if not callable(function):
            raise TypeError(f"trace: function must be callable, got {type(function).__name__}")
        if isinstance(opt_level, bool) or not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
            raise ValueError(f"trace: opt_level must be an int in [0, 3], got {opt_level!r}")
        for name, value, cls in (
            ("sublinear_memory_config", sublinear_memory_config, SublinearMemoryConfig),
            ("dtr_config", dtr_config, DTRConfig),
            ("graph_opt_config", graph_opt_config, GraphOptimizationConfig),
        ):
            if value is not None and not isinstance(value, cls):
                raise TypeError(f"trace: {name} must be a {cls.__name__} or None")
        functools.update_wrapper(self, function)
        try:  # the class's __signature__ describes trace(); an instance is called as `function`
            self.__signature__ = inspect.signature(function)
        except (TypeError, ValueError):  # a callable without one (some builtins)
            self.__signature__ = None
        self.__wrapped__ = function
        self._symbolic = symbolic
        self._capture_as_const = capture_as_const or record_only
        self._record_only = record_only
        self._opt_level = opt_level
        self._profiling = profiling
        self._symbolic_shape = bool(symbolic_shape)
        self._shape_notes = []
        self._without_host = without_host
        self._session = None
        self._mode = None  # after recording: "graph", "check" or "eager"
        self._key_sources, self._reseed = [], []  # see _reseed_plan
        # The recordings made for other argument shapes than the current one's, least recently
        # used first: {shapes: {attribute: value}} (see _RECORDING).
        self._by_shapes = {}

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        return functools.partial(self.__call__, instance)

    def __call__(self, *args, **kwargs):
        if _rt._trace_active():
            # Called by another traced function as it records or checks: the ops join that
            # trace (traces do not nest).
            return self.__wrapped__(*args, **kwargs)
        spec, tensors, names = _flatten_call(args, kwargs)
        if self._session is None:
            return self._record(args, kwargs, spec, tensors, names)
        if self._mode == "eager":
            return self.__wrapped__(*args, **kwargs)
        if not self._select_recording(spec, tensors):
            return self._record(args, kwargs, spec, tensors, names)
        if any(fn() != value for fn, value in self._guards):
            # A Python value the graph holds as a constant changed (an optimizer's lr after a
            # scheduler's step): record again, with the new value.
            return self._record(args, kwargs, spec, tensors, names)
        if self._mode == "graph" and spec == self._spec and _aliasing(tensors) == self._aliasing:
            drawn = self._reseed_steps() if self._key_sources else ()
            outs = self._session.run(tensors)
            if outs is not None:
                return _unflatten(self._out_spec, iter(outs))
            for rng, counter in drawn:  # the eager check below draws them again
                rng._counter = counter
        return self._check(args, kwargs)

    def _reseed_steps(self):
        # Draws the keys the eager call would, from the same generators in the same order, and
        # gives each random step the one its recorded seed was; returns (generator, counter
        # before) pairs, to undo the draws if the graph does not run.
        before = {id(rng): (rng, rng._counter) for rng in self._key_sources}
        keys = [rng._key() for rng in self._key_sources]
        self._session.set_seeds([(step, keys[i]) for step, i in self._reseed])
        return before.values()

    def _select_recording(self, spec, tensors):
        # Makes the recording for these tensors' shapes the current one where only their shapes
        # differ from the current recording's; returns False where there is none yet.
        shapes = _shapes(tensors)
        if (
            shapes == self._shapes
            or spec != self._spec
            or _aliasing(tensors) != self._aliasing
            or _dtypes(tensors) != self._dtypes
        ):
            return True
        self._by_shapes[self._shapes] = {a: getattr(self, a) for a in _RECORDING}
        while len(self._by_shapes) > _MAX_RECORDINGS:
            self._by_shapes.pop(next(iter(self._by_shapes)))
        state = self._by_shapes.pop(shapes, None)
        if state is None:
            return False
        for attr, value in state.items():
            setattr(self, attr, value)
        return True

    def _record(self, args, kwargs, spec, tensors, names):
        session = _rt.TraceSession()
        shape_notes = []
        session.start_record()
        _step_gate.reset()
        try:
            for t, name in zip(tensors, names):
                session.add_input(t, name)
            with _shape_dim.tracing(self._symbolic_shape, shape_notes):
                result = _plain_dims(self.__wrapped__(*args, **kwargs))
            if _step_gate.untaken():
                _rt._trace_fail(
                    "amp.GradScaler unscaled gradients that no optimizer step of the traced "
                    "function took: a replay cannot drop a non-finite step's gradients for an "
                    "optimizer step outside the trace"
                )
        finally:
            _step_gate.reset()
            session.stop()
        self._shape_notes = shape_notes
        outs, out_names = [], []
        self._out_spec = _flatten(result, outs, out_names, "output")
        failure = session.failure
        if not failure and not session.ever_excluded:
            try:
                session.compile(outs, self._capture_as_const, self._opt_level)
                if self._profiling:
                    session.enable_profile()
                self._mode = "graph"
            except (ValueError, TypeError, NotImplementedError) as e:
                failure = f"the recording did not compile: {e}"
        if failure:
            warnings.warn(
                f"trace: {failure}; later calls of {self.__name__} run eagerly",
                RuntimeWarning,
                stacklevel=3,
            )
            self._mode = "eager"
            session.discard_recording()
        elif self._mode != "graph":
            self._mode = "check"
            session.discard_recording()
        self._session = session
        self._guards = list(session.guards)
        self._key_sources, self._reseed = (
            _reseed_plan(session) if self._mode == "graph" else ([], [])
        )
        self._spec = spec
        self._aliasing = _aliasing(tensors)
        self._shapes = _shapes(tensors)
        self._dtypes = _dtypes(tensors)
        self._arg_names = list(names)
        self._out_names = out_names
        self._out_dict_keys = list(result) if type(result) is dict else None
        return result

    def _check(self, args, kwargs):
        session = self._session
        session.start_check()
        _step_gate.reset()
        try:
            with _shape_dim.tracing(self._symbolic_shape):
                result = _plain_dims(self.__wrapped__(*args, **kwargs))
            session.finish_check()
        finally:
            _step_gate.reset()
            session.stop()
        return result

    @property
    def ops(self):
        """The recorded ops as ``(op, "file:line")`` pairs in call order; None before the first
        call.

        Examples:
            >>> import megengine as mge
            >>> from megengine.jit import trace
            >>> f = trace(lambda x: x + 1)
            >>> _ = f(mge.Tensor([1.0]))
            >>> [op for op, _ in f.ops]
            ['Elemwise(mode=ADD)']
        """
        return None if self._session is None else self._session.ops

    def dump(
        self,
        file,
        *,
        arg_names=None,
        output_names=None,
        append=False,
        keep_var_name: int = 1,
        keep_opr_name: bool = False,
        keep_param_name: bool = False,
        keep_opr_priority: bool = False,
        no_change_graph: bool = False,
        strip_info_file=None,
        append_json=False,
        optimize_for_inference=True,
        user_info=None,
        enable_metadata: bool = True,
        input_data=None,
        repeat=1,
        silent=False,
        no_assert=False,
        maxerr=1e-4,
        resize_input=False,
        input_transform=None,
        dump_format=None,
        model_version: int = 2,
        input_shapes=None,
        **kwargs,
    ):
        """Writes the traced graph as a model file, which
        :class:`~megengine.utils.comp_graph_tools.GraphInference`, the C++ inference API
        (``neomeg/inference/model.h``) and ``load_and_run`` run.

        The trace needs ``capture_as_const=True`` and one call before: the tensors the function
        read from outside (parameters, captured tensors) are written as constants, with their
        values at that call (a tensor the function updates in place: its current value). The
        inputs are the function's tensor arguments with the shapes and dtypes of the recorded
        call.

        Args:
            file: a path (written atomically: a temporary file renamed over it) or a binary file
                object.
            arg_names: names of the positional tensor arguments in the file. Default:
                ``arg_0``, ``arg_1``, ... (keyword arguments keep their keywords).
            output_names: names of the results. Default: a dict result's keys, else
                ``output_0``, ``output_1``, ...
            append: with a path, append to the file instead of replacing it.
            keep_var_name: 0 or 1 keep the names of the inputs and outputs (the file needs
                them), 2 also the names of internal vars. Default: 1
            optimize_for_inference: run constant folding, common-subexpression elimination,
                BatchNorm folding (an eval-mode batch norm after a convolution becomes part of
                its weights and bias) and dead-code removal on the graph before writing it.
                Elementwise fusion and (unless asked) ConvBias fusion are not written into the
                file: the loader's compile applies them for the machine that runs the model.
                Default: True
            user_info: a str kept in the file's metadata (MegEngine pickles any object; here
                another type is a TypeError).
            enable_metadata: with False, ``user_info`` is not written (the format version and
                producer always are).
            keep_opr_name, keep_param_name, keep_opr_priority, no_change_graph,
                strip_info_file, append_json, input_data, repeat, silent, no_assert, maxerr,
                resize_input, input_transform, dump_format, model_version: accepted for
                MegEngine's signature; no effect (the file holds no opr names or priorities,
                and no embedded test cases: ``load_and_run`` takes ``.npy`` inputs).
            input_shapes: NeoMeg's extension: ``{input name: shape}`` with -1 for a dimension
                the loader may choose (a dynamic batch); the other dimensions must be the
                recorded ones. Ops record shapes in their params as they were traced (the
                Reshape of ``F.flatten`` holds the traced batch), so a model with such an op
                loads only with the recorded size there (``ModelError`` otherwise). Default:
                every input has its recorded shape.
            kwargs: MegEngine's layout and fusion options. With ``optimize_for_inference``,
                ``enable_fuse_conv_bias_nonlinearity=True`` writes convolution + bias (+
                residual) + activation as ConvBias ops; the others (``enable_nchw88``, ...) are
                accepted and change nothing.

        Returns:
            MegEngine's ``CompGraphDumpResult`` namedtuple: ``nr_opr`` (the operators
            of the file, its inputs and constants included, as MegEngine counts them), ``tot_bytes`` (the file's size),
            ``content_hash`` (a 64-bit hash of the file), ``inputs`` and ``outputs`` (the names
            the file holds; an input the graph does not use is not written); this build does
            not count ``tensor_value_bytes`` nor list ``params``: they are ``None``.

        Examples:
            >>> import io
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.jit import trace
            >>> from megengine.utils.comp_graph_tools import GraphInference
            >>> w = mge.Tensor([2.0, 3.0])
            >>> f = trace(lambda x: x * w, capture_as_const=True)
            >>> _ = f(mge.Tensor([1.0, 1.0]))
            >>> buf = io.BytesIO()
            >>> info = f.dump(buf, arg_names=["x"], output_names=["y"])
            >>> info.inputs, info.outputs
            (['x'], ['y'])
            >>> GraphInference(buf.getvalue()).run(np.array([1.0, 2.0], "float32"))["y"]
            array([2., 6.], dtype=float32)
        """
        return dump_trace(
            self,
            file,
            arg_names,
            output_names,
            append,
            keep_var_name,
            optimize_for_inference,
            user_info,
            enable_metadata,
            input_shapes,
            bool(kwargs.get("enable_fuse_conv_bias_nonlinearity", False)),
        )

    # trace(f, ...) as MegEngine documents it (__new__ takes *args for the decorator form).
    __signature__ = inspect.Signature(list(inspect.signature(__init__).parameters.values())[1:])

    def get_profile(self):
        r"""The profile of the compiled graph's last run, as MegEngine gives it.

        Needs ``profiling=True`` and a call that ran the compiled graph (the first call
        records; later ones replay). Each operator of the compiled graph (after its passes:
        fused elementwise chains, ConvBias, blocked layouts) appears with its time, params,
        shapes, bytes and operation count; :class:`megengine.utils.profile_analyzer.ProfileAnalyzer`
        summarises it.

        Returns:
            a dict with ``profiler`` (``host``, ``device``, ``opr_footprint``) and
            ``graph_exec`` (``comp_seq``, ``operator``, ``var``), keyed by operator and var
            ids (strings), as MegEngine 1.13's ``json.loads(get_profile())``.

        Raises:
            RuntimeError: the trace was made without ``profiling=True``, or its compiled graph
                has not run yet.

        Examples:
            >>> import megengine as mge
            >>> import megengine.functional as F
            >>> from megengine.jit import trace
            >>> @trace(profiling=True)
            ... def f(x):
            ...     return F.relu(x * 2 + 1).sum()
            >>> x = mge.Tensor([1.0, -2.0])
            >>> for _ in range(2):
            ...     y = f(x)
            >>> prof = f.get_profile()
            >>> sorted(prof), len(prof["graph_exec"]["comp_seq"]) > 0
            (['graph_exec', 'profiler'], True)
        """
        if not self._profiling:
            raise RuntimeError("trace.get_profile: the trace was made without profiling=True")
        steps = self._session.profile() if self._mode == "graph" else []
        if not steps:
            raise RuntimeError(
                "trace.get_profile: the compiled graph has not run yet (the first call records "
                "it; call the traced function again)"
                if self._mode in ("graph", None)
                else f"trace.get_profile: {self.__name__} runs eagerly, not as a graph"
            )
        return megengine_profile(steps)

    def _graph_text(self, compiled=True):
        """The compiled graph (``Executable.dump``), or with ``compiled=False`` the recorded one
        with its named inputs and outputs, as text; for tests and debugging."""
        if self._mode != "graph":
            raise RuntimeError("trace: no compiled graph (not recorded yet, or not replayable)")
        return self._session.dump() if compiled else self._session.recorded_graph_text()
