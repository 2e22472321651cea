"""MegEngine's ``megbrain_graph.load_graph``: a model file loaded for running.

The file may be NeoMeg's own (``trace.dump``) or one the real MegEngine 1.13 wrote (its default
FBS_V2 format); the C++ loader tells them apart. MegEngine returns its C++ graph and var nodes,
which its graph tools rewrite; here the graph is the loaded, compiled model
(``_imperative_rt.InferenceModel``), runnable with :meth:`LoadedGraph.run`, and each output
var is described by its name, shape and dtype.
"""

import collections
import os

import numpy as np

from .. import _imperative_rt as _rt

__all__ = ["CompGraphLoadResult", "LoadedGraph", "OutputVar", "load_graph"]

CompGraphLoadResult = collections.namedtuple(
    "CompGraphLoadResult", ["graph", "output_vars_dict", "output_vars_list", "metadata"]
)

OutputVar = collections.namedtuple("OutputVar", ["name", "shape", "dtype"])
OutputVar.__doc__ = (
    "An output of a loaded graph: its name, shape (for the dumped input shapes) and dtype."
)


def _run_model(model, inputs, input_names, output_names):
    """Runs a loaded model (``_imperative_rt``'s) on ``inputs``, a dict holding an array or
    Tensor for each of ``input_names``; returns an OrderedDict of ``output_names`` to arrays.
    Shared by LoadedGraph and utils.comp_graph_tools.GraphInference."""
    for name in input_names:
        value = inputs[name]
        if hasattr(value, "numpy"):  # a megengine Tensor
            value = value.numpy()
        model.set_input(name, np.asarray(value))
    model.run()
    return collections.OrderedDict((name, model.output(name)) for name in output_names)


class LoadedGraph:
    """A loaded model file, compiled for running (what :func:`load_graph` gives as ``graph``).

    Args:
        model: the ``_imperative_rt.InferenceModel`` it runs.

    Examples:
        >>> import io
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.jit import trace
        >>> f = trace(lambda x: x + 1, capture_as_const=True)
        >>> _ = f(mge.Tensor([1.0]))
        >>> buf = io.BytesIO()
        >>> _ = f.dump(buf, arg_names=["x"], output_names=["y"])
        >>> g = load_graph(io.BytesIO(buf.getvalue())).graph
        >>> g.input_names, g.output_names
        (['x'], ['y'])
    """

    def __init__(self, model):
        self._model = model

    @property
    def input_names(self):
        """The inputs' names, in file order.

        Returns:
            list of str.

        Examples:
            >>> import io
            >>> import megengine as mge
            >>> from megengine.jit import trace
            >>> f = trace(lambda a, b: a * b, capture_as_const=True)
            >>> _ = f(mge.Tensor([1.0]), mge.Tensor([2.0]))
            >>> buf = io.BytesIO()
            >>> _ = f.dump(buf, arg_names=["a", "b"])
            >>> load_graph(io.BytesIO(buf.getvalue())).graph.input_names
            ['a', 'b']
        """
        return list(self._model.input_names)

    @property
    def output_names(self):
        """The outputs' names, in file order.

        Returns:
            list of str.

        Examples:
            >>> import io
            >>> import megengine as mge
            >>> from megengine.jit import trace
            >>> f = trace(lambda a: a * 2, capture_as_const=True)
            >>> _ = f(mge.Tensor([1.0]))
            >>> buf = io.BytesIO()
            >>> _ = f.dump(buf, output_names=["twice"])
            >>> load_graph(io.BytesIO(buf.getvalue())).graph.output_names
            ['twice']
        """
        return list(self._model.output_names)

    def run(self, inp_dict):
        """Runs the graph on inputs given by name.

        Args:
            inp_dict: a dict of input name to array (cast to the input's dtype).

        Returns:
            a dict of output name to ``numpy.ndarray``, in file order.

        Examples:
            >>> import io
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.jit import trace
            >>> f = trace(lambda x: x * 3, capture_as_const=True)
            >>> _ = f(mge.Tensor([1.0]))
            >>> buf = io.BytesIO()
            >>> _ = f.dump(buf, arg_names=["x"], output_names=["y"])
            >>> g = load_graph(io.BytesIO(buf.getvalue())).graph
            >>> g.run({"x": np.array([2.0], "float32")})["y"]
            array([6.], dtype=float32)
        """
        missing = set(self.input_names) - set(inp_dict)
        extra = set(inp_dict) - set(self.input_names)
        if missing or extra:
            raise ValueError(
                f"LoadedGraph.run: the graph takes inputs {self.input_names}, "
                f"got {sorted(inp_dict)}"
            )
        return _run_model(self._model, inp_dict, self.input_names, self.output_names)


def load_graph(fpath):
    """Loads a model file: NeoMeg's, or a ``.mge`` that MegEngine 1.13's ``trace.dump`` wrote.

    Args:
        fpath: a path, or a binary file object to read.

    Returns:
        a :class:`CompGraphLoadResult` ``(graph, output_vars_dict, output_vars_list,
        metadata)``: ``graph`` a :class:`LoadedGraph`, the output vars as
        :class:`OutputVar` by name and in file order, and ``metadata`` a dict with the
        producer and format version.

    Raises:
        ValueError (``ModelError``): a file that is neither format, or is damaged.

    Examples:
        >>> import io
        >>> import megengine as mge
        >>> from megengine.jit import trace
        >>> f = trace(lambda x: x.sum(), capture_as_const=True)
        >>> _ = f(mge.Tensor([1.0, 2.0]))
        >>> buf = io.BytesIO()
        >>> _ = f.dump(buf, arg_names=["x"], output_names=["s"])
        >>> ret = load_graph(io.BytesIO(buf.getvalue()))
        >>> ret.output_vars_list[0].name
        's'
    """
    if isinstance(fpath, (str, os.PathLike)):
        with open(fpath, "rb") as f:
            data = f.read()
    else:
        data = fpath.read()
    model = _rt.InferenceModel(data)
    outputs = [
        OutputVar(
            name,
            tuple(shape),
            _rt.InferenceModel.numpy_dtype(dtype) if dtype != "bfloat16" else dtype,
        )
        for name, dtype, shape in model.outputs
    ]
    metadata = {"producer": model.producer, "format_version": model.format_version}
    if model.user_info:
        metadata["user_info"] = model.user_info
    return CompGraphLoadResult(LoadedGraph(model), {o.name: o for o in outputs}, outputs, metadata)
