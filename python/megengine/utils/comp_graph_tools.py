"""Tools for model files: :class:`GraphInference` runs a file written by ``trace.dump`` through
the C++ inference API (``_imperative_rt.InferenceModel``, the loader ``load_and_run`` uses)."""

import os

from ..core import _imperative_rt as _rt
from ..core.tensor.megbrain_graph import _run_model

ModelError = _rt.ModelError

__all__ = ["GraphInference"]


class GraphInference:
    """Loads a model file (written by :meth:`megengine.jit.trace.dump`) to run it.

    Loading checks the whole file: a truncated, corrupted or hostile file raises
    ``ModelError`` (a ``ValueError``), one this build is too old for ``ModelVersionError``
    (a ``ModelError``), a missing file an ``OSError``.

    Args:
        file: a path, a binary file object, or the file's bytes.
        outputs: names of the outputs to compute (a subset of the file's, in this order).
            Default: all of them, in the file's order.
        profiling: accepted for MegEngine's signature; no profile is collected.
        optimize_for_inference: accepted; the loaded graph is compiled with constant folding
            and common-subexpression elimination either way.
        kwargs: MegEngine's optimization options; accepted, no effect.

    Examples:
        >>> import io
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.jit import trace
        >>> f = trace(lambda a, b: a + b, capture_as_const=True)
        >>> _ = f(mge.Tensor([1.0]), mge.Tensor([2.0]))
        >>> buf = io.BytesIO()
        >>> info = f.dump(buf, arg_names=["a", "b"], output_names=["sum"])
        >>> net = GraphInference(buf.getvalue())
        >>> out = net.run(np.array([1.0], "float32"), inp_dict={"b": np.array([5.0], "float32")})
        >>> type(out).__name__, list(out.items())
        ('OrderedDict', [('sum', array([6.], dtype=float32))])
    """

    def __init__(self, file, outputs=None, profiling=False, optimize_for_inference=False, **kwargs):
        if hasattr(file, "read"):
            file = file.read()
        elif not isinstance(file, (bytes, bytearray, memoryview, str, os.PathLike)):
            raise TypeError(
                f"GraphInference: file must be a path, bytes or a file object, got {file!r}"
            )
        self._model = _rt.InferenceModel(file)
        names = list(self._model.output_names)
        if outputs is not None:
            if isinstance(outputs, str):
                outputs = [outputs]
            missing = [o for o in outputs if o not in names]
            if missing:
                raise ValueError(
                    f"GraphInference: no outputs named {missing}; the file has {names}"
                )
            names = list(outputs)
        self._outputs = names
        self._inputs = list(self._model.input_names)

    @property
    def input_names(self):
        """The model's input names in file order (the order ``run`` takes positional inputs).

        Returns:
            list of str.

        Examples:
            >>> import io
            >>> import megengine as mge
            >>> from megengine.jit import trace
            >>> f = trace(lambda x: x * 2, capture_as_const=True)
            >>> _ = f(mge.Tensor([1.0]))
            >>> buf = io.BytesIO()
            >>> info = f.dump(buf, arg_names=["x"])
            >>> GraphInference(buf.getvalue()).input_names
            ['x']
        """
        return list(self._inputs)

    @property
    def output_names(self):
        """The names of the outputs ``run`` returns, in order.

        Returns:
            list of str.

        Examples:
            >>> import io
            >>> import megengine as mge
            >>> from megengine.jit import trace
            >>> f = trace(lambda x: x * 2, capture_as_const=True)
            >>> _ = f(mge.Tensor([1.0]))
            >>> buf = io.BytesIO()
            >>> info = f.dump(buf)
            >>> GraphInference(buf.getvalue()).output_names
            ['output_0']
        """
        return list(self._outputs)

    def run(self, *inp_args, inp_dict=None):
        """Runs the model on inputs given in order (``input_names``) and/or by name.

        Each input is cast to the model's dtype; its shape must be the dumped one, except in
        dimensions the file declares dynamic.

        Args:
            inp_args: input arrays, in ``input_names`` order.
            inp_dict: input arrays by name.

        Returns:
            an ``OrderedDict`` of output name to ``numpy.ndarray``.

        Examples:
            >>> import io
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.jit import trace
            >>> f = trace(lambda x: x * 2, capture_as_const=True)
            >>> _ = f(mge.Tensor([1.0]))
            >>> buf = io.BytesIO()
            >>> info = f.dump(buf, arg_names=["x"], output_names=["y"])
            >>> GraphInference(buf.getvalue()).run(np.array([4.0], "float32"))["y"]
            array([8.], dtype=float32)
        """
        if len(inp_args) > len(self._inputs):
            raise ValueError(
                f"GraphInference.run: this model expects {len(self._inputs)} inputs, "
                f"got {len(inp_args)} positional ones"
            )
        inputs = dict(zip(self._inputs, inp_args))
        if inp_dict is not None:
            inputs.update(inp_dict)
        if set(inputs) != set(self._inputs):
            raise ValueError(
                f"GraphInference.run: this model expects inputs {self._inputs}, "
                f"but gets inputs {list(inputs)}"
            )
        return _run_model(self._model, inputs, self._inputs, self._outputs)
