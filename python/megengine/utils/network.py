"""MegEngine's model editor: :class:`Network` loads a model file (one ``trace.dump`` wrote, or a
``.mge`` file of MegEngine 1.13) as :class:`~.network_node.OpNode` and
:class:`~.network_node.VarNode` objects, lets them be queried (:class:`NodeFilter`) and edited,
and dumps a model file that ``GraphInference``, the C++ inference API and ``load_and_run`` run.

The Python objects are the model while it is edited; each build (a dump, a new node's shape
inference, ``reset_batch_size``) makes a fresh graph of them in the extension
(``_rt.network.Graph``), whose layout rules check every node, and the file is written by the
same writer as ``trace.dump``'s. docs/architecture.md ("Editing models") has the design.
"""

import itertools
import os
from collections.abc import Sequence

from ..core import _imperative_rt as _rt
from ..core.ops import builtin
from ..core.tensor.dtype import promote_names
from .atomic_file import write_dump
from .network_node import (
    ConstOpBase,
    Host2DeviceCopy,
    ImmutableTensor,
    OpNode,
    VarNode,
    _graph_dtype,
    str_to_mge_class,
)
from .node_filter import (
    NodeFilter,
    NodeFilterCheckType,
    NodeFilterHasInput,
    NodeFilterName,
    NodeFilterNotType,
    NodeFilterType,
    _dep_vars,
    _topo_oprs,
    as_oprnode,
    as_varnode,
)

__all__ = [
    "Network",
    "NodeFilter",
    "NodeFilterCheckType",
    "NodeFilterHasInput",
    "NodeFilterName",
    "NodeFilterNotType",
    "NodeFilterType",
    "as_oprnode",
    "as_varnode",
    "set_symbolic_shape",
]

# MegEngine's optimize_for_inference options (dump's keywords). Only the ConvBias fusion has a
# pass here; the layout and float16 options are MegEngine's GPU/ARM formats and are ignored.
_OPTIMIZE_OPTIONS = (
    "enable_io16xc32",
    "enable_ioc16",
    "enable_hwcd4",
    "enable_nchw4",
    "enable_nchw88",
    "enable_nchw44",
    "enable_nchw44_dot",
    "enable_nchw32",
    "enable_chwn4",
    "enable_nchw64",
    "enable_fuse_conv_bias_nonlinearity",
    "enable_fuse_conv_bias_with_z",
    "enable_fuse_preprocess",
    "enable_fuse_grain",
)

_symbolic_shape = [False]


def _example_model():
    """The model of the docstring examples: o = (a + b) * 2, inputs a and b of shape (2,)."""
    import io

    import numpy as np

    from ..jit import trace
    from ..tensor import Tensor

    f = trace(lambda a, b: (a + b) * 2, capture_as_const=True)
    f(Tensor(np.array([1, 2], "int32")), Tensor(np.array([3, 4], "int32")))
    buf = io.BytesIO()
    f.dump(buf, arg_names=["a", "b"], output_names=["o"], optimize_for_inference=False)
    return buf.getvalue()


def _promoted(graph, node, indices):
    # MegBrain's Elemwise converts operands of different dtypes to their common one when it is
    # built, so a var replaced by one of another dtype (``replace_vars`` with a float constant
    # for an int input) computes in the promoted dtype, as in MegEngine 1.13; NeoMeg's graph
    # takes one dtype, so the conversions are TypeCvt nodes inserted here.
    # COND's first operand is its bool mask, which keeps its dtype; the values promote.
    if node.opdef.name != "Elemwise":
        return indices
    names = [graph.var(i)[2] for i in indices]
    fixed = 1 if node.opdef.mode.name == "COND" else 0
    if len(set(names[fixed:])) <= 1:
        return indices
    dt = names[fixed]
    for name in names[fixed + 1 :]:
        dt = promote_names(dt, name)
    return indices[:fixed] + [
        i if name == dt else graph.insert(builtin.TypeCvt(dtype=dt), [i])[0]
        for i, name in zip(indices[fixed:], names[fixed:])
    ]


def _build(dest_vars, pending=None, inputs_first=()):
    """A fresh graph (``_rt.network.Graph``) of what ``dest_vars`` need, and the index of each
    var in it; ``pending``, an op node without outputs yet, is inserted last and its output
    indices are ``index[pending]``. ``inputs_first`` orders those inputs before the others."""
    graph = _rt.network.Graph()
    index = {}
    oprs = _topo_oprs(dest_vars)
    first = [v.owner for v in inputs_first if v.owner in oprs]
    rest = [n for n in oprs if not any(n is f for f in first)]
    for node in first + rest:
        try:
            if isinstance(node, Host2DeviceCopy):
                out = node.outputs[0]
                name = node.name or out.name
                if not name:
                    raise ValueError("an input needs a name")
                index[out] = graph.input(name, list(node.shape), _graph_dtype(node.dtype))
            elif isinstance(node, ConstOpBase):
                index[node.outputs[0]] = graph.constant(node._value, node.name or "")
            else:
                ins = _promoted(graph, node, [index[v] for v in node.inputs])
                outs = graph.insert(node.opdef, ins, node._presets)
                if len(outs) != len(node.outputs):
                    raise ValueError(
                        f"the op has {len(outs)} outputs, the node {len(node.outputs)}"
                    )
                for v, i in zip(node.outputs, outs):
                    index[v] = i
                    graph.set_name(i, v.name or "")
                    v._set_info(graph.var(i))
        except (ValueError, TypeError, IndexError) as e:
            raise type(e)(f"{node!r}: {e}") from None
    if pending is not None:
        try:
            index[pending] = graph.insert(
                pending.opdef, [index[v] for v in pending.inputs], pending._presets
            )
        except (ValueError, TypeError, IndexError) as e:
            raise type(e)(f"{pending.opdef!r} on {pending.inputs}: {e}") from None
    return graph, index


class Network:
    """A model file's graph as op and var nodes, to query and edit (MegEngine's
    ``megengine.utils.network.Network``).

    :meth:`load` reads NeoMeg's model files and MegEngine 1.13's ``.mge`` files (whatever
    ``GraphInference`` reads); :meth:`dump` writes NeoMeg's format. Op names other than inputs'
    and constants' are not stored in the file (var names are, with ``keep_var_name=2``).

    Examples:
        >>> import io, numpy as np
        >>> from megengine.utils.comp_graph_tools import GraphInference
        >>> net = Network.load(io.BytesIO(_example_model()))  # o = (a + b) * 2
        >>> [v.name for v in net.input_vars], [v.name for v in net.output_vars]
        (['a', 'b'], ['o'])
        >>> a = net.get_var_by_name("a")
        >>> net.add_output(a * 10)
        >>> net.output_vars[1].name = "a10"
        >>> buf = io.BytesIO()
        >>> _ = net.dump(buf)
        >>> GraphInference(buf.getvalue()).run(np.array([1, 2]), np.array([3, 4]))["a10"]
        array([10, 20], dtype=int32)
    """

    def __init__(self):
        self.input_vars = []
        self.output_vars = []
        self._metadata = None

    @classmethod
    def load(cls, model_path, outspec=None):
        """Loads a model file as a Network.

        Args:
            model_path: a path, a binary file object or the file's bytes: a model ``trace.dump``
                wrote, or a ``.mge`` file of MegEngine 1.13.
            outspec: names of vars to be the outputs instead of the file's (a subgraph).

        Returns:
            a :class:`Network`.

        Examples:
            >>> import io
            >>> net = Network.load(io.BytesIO(_example_model()), outspec=["a"])
            >>> [v.name for v in net.output_vars], len(net.all_oprs)
            (['a'], 1)
        """
        if hasattr(model_path, "read"):
            model_path = model_path.read()
        elif not isinstance(model_path, (str, os.PathLike, bytes, bytearray, memoryview)):
            raise TypeError(
                "Network.load: model_path must be a path, a binary file object or bytes, "
                f"got {type(model_path).__name__}"
            )
        self = cls()
        graph = _rt.network.Graph.load(model_path)
        self._metadata = dict(graph.metadata)
        names = [name for name, _ in graph.outputs]
        outputs, inputs = self._adopt(graph, [i for _, i in graph.outputs])
        for var, name in zip(outputs, names):
            var.name = name
        if outspec is not None:
            if isinstance(outspec, str) or not all(isinstance(n, str) for n in outspec):
                raise TypeError(f"Network.load: outspec must be a list of names, got {outspec!r}")
            by_name = {}
            for v in _dep_vars(outputs):
                by_name.setdefault(v.name, v)
            missing = [n for n in outspec if n not in by_name]
            if missing:
                raise ValueError(f"Network.load: can not find {missing} in this model")
            outputs = [by_name[n] for n in outspec]
        self.output_vars = list(outputs)
        deps = {id(n) for n in _topo_oprs(outputs)}
        self.input_vars = [v for v in inputs if id(v.owner) in deps]
        return self

    @staticmethod
    def _adopt(graph, output_indices):
        """Op and var nodes for what the graph's vars ``output_indices`` need; returns the
        output VarNodes and the input VarNodes (file order)."""
        desc = graph.describe(output_indices)
        vars_ = {}
        inputs = []
        for i, declared in desc["inputs"]:
            info = graph.var(i)
            node = Host2DeviceCopy(info[1], info[2], info[0])
            node.outputs[0]._set_info(info)
            node.declared_shape = tuple(declared) if declared is not None else node.shape
            vars_[i] = node.outputs[0]
            inputs.append(node.outputs[0])
        for i, value in desc["consts"]:
            node = ImmutableTensor(name=graph.var(i)[0] or None)
            node._set_value(value)
            vars_[i] = node.outputs[0]
        counter = itertools.count()
        for op, ins, outs, presets in desc["oprs"]:
            node = str_to_mge_class(op.name).load(op)
            node._presets = presets
            node.inputs = [vars_[i] for i in ins]
            for v in node.inputs:
                v.users.append(node)
            infos = [graph.var(o) for o in outs]
            node.name = next((info[0] for info in infos if info[0]), None)
            if node.name is None:
                node.name = f"{op.name}_{next(counter)}"
            for k, (o, info) in enumerate(zip(outs, infos)):
                var = VarNode.load(info, node)
                if var.name is None:
                    var.name = node.name if len(outs) == 1 else f"{node.name}:{k}"
                node.outputs.append(var)
                vars_[o] = var
        return [vars_[i] for i in output_indices], inputs

    @property
    def metadata(self):
        """The file's metadata: ``user_info`` (None when empty), ``producer_name``,
        ``producer_version`` and ``format_version``. NeoMeg's format keeps no
        ``graph_modified``/``optimized_for_inference`` flags.

        Examples:
            >>> import io
            >>> Network.load(io.BytesIO(_example_model())).metadata["producer_name"]
            'NeoMeg'
        """
        if self._metadata is None:
            return None
        md = dict(self._metadata)
        return {
            "user_info": md.get("user_info") or None,
            "producer_name": md.get("producer_name"),
            "producer_version": md.get("producer_version"),
            "format_version": int(md.get("format_version", 0)),
        }

    def optimize_for_inference(self, dest_vars, **kwargs):
        """Runs the inference passes (constant folding, common-subexpression elimination,
        BatchNorm folding; ConvBias fusion with ``enable_fuse_conv_bias_nonlinearity=True``) on
        what ``dest_vars`` need and returns the optimized vars (new nodes; this network is left
        as it is).

        Args:
            dest_vars: a VarNode or a list of them.
            kwargs: MegEngine's optimize options (``enable_*``); only the ConvBias fusion
                applies here.

        Returns:
            a list of VarNodes.

        Examples:
            >>> import io
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> (o,) = net.optimize_for_inference(net.output_vars)
            >>> o.owner.type, o.shape
            ('Elemwise', (2,))
        """
        fuse = _optimize_options(kwargs)
        if not isinstance(dest_vars, Sequence):
            dest_vars = [dest_vars]
        dest_vars = [as_varnode(v) for v in dest_vars]
        graph, index = _build(dest_vars)
        outs = graph.optimize([index[v] for v in dest_vars], fuse)
        new, _ = self._adopt(graph, outs)
        return new

    def dump(
        self,
        file,
        *,
        keep_var_name=1,
        keep_opr_name=False,
        keep_param_name=False,
        keep_opr_priority=False,
        strip_info_file=None,
        append_json=False,
        optimize_for_inference=True,
        append=False,
        user_info=None,
        enable_metadata=True,
        **kwargs,
    ):
        """Writes the network as a model file (NeoMeg's format, as ``trace.dump`` writes).

        The outputs are :attr:`output_vars`, named by their names; inputs by their
        ``Host2DeviceCopy`` nodes' names, in :attr:`input_vars` order first.

        Args:
            file: a path or a binary file object.
            keep_var_name: 0 or 1: only inputs', constants' and outputs' names are written;
                2: every var's name.
            keep_opr_name: accepted; op names are not stored in the file.
            keep_param_name: accepted; constants always keep their names.
            keep_opr_priority: accepted; no priorities are stored.
            strip_info_file: accepted; no strip information is written.
            append_json: accepted, as ``strip_info_file``.
            optimize_for_inference: run the inference passes before writing (see
                :meth:`optimize_for_inference`).
            append: append to the file at ``file`` (a path) instead of replacing it.
            user_info: a str kept in the file's metadata (NeoMeg's file keeps text).
            enable_metadata: write ``user_info``.
            kwargs: MegEngine's optimize options (``enable_*``).

        Returns:
            MegEngine's dump result: ``nr_opr``, ``tot_bytes``, ``tensor_value_bytes``,
            ``content_hash``, ``inputs``, ``outputs``, ``params``.

        Examples:
            >>> import io, numpy as np
            >>> from megengine.utils.comp_graph_tools import GraphInference
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> buf = io.BytesIO()
            >>> info = net.dump(buf, optimize_for_inference=False)
            >>> info.inputs, info.outputs
            (['a', 'b'], ['o'])
            >>> GraphInference(buf.getvalue()).run(np.array([1, 2]), np.array([3, 4]))["o"]
            array([ 8, 12], dtype=int32)
        """
        import hashlib

        from ..jit.dump import CompGraphDumpResult

        for ignored in ("arg_names", "output_names"):
            if kwargs.pop(ignored, None):
                raise ValueError(
                    f"Network.dump: {ignored} is not supported, rename the vars directly"
                )
        fuse = _optimize_options(kwargs) and bool(optimize_for_inference)
        if keep_var_name not in (0, 1, 2, True, False):
            raise ValueError(
                f"Network.dump: keep_var_name must be 0, 1 or 2, got {keep_var_name!r}"
            )
        if user_info is not None and not isinstance(user_info, str):
            raise TypeError(
                "Network.dump: user_info must be a str (NeoMeg's model file keeps text), got "
                f"{type(user_info).__name__}"
            )
        if not self.output_vars:
            raise ValueError("Network.dump: the network has no outputs")
        graph, index = _build(self.output_vars, inputs_first=self.input_vars)
        outs = [index[v] for v in self.output_vars]
        if optimize_for_inference:
            outs = graph.optimize(outs, fuse)
        names = [v.name or f"output_{i}" for i, v in enumerate(self.output_vars)]
        shapes = {}
        for node in _topo_oprs(self.output_vars):
            if isinstance(node, Host2DeviceCopy) and -1 in node.declared_shape:
                shapes[node.name or node.outputs[0].name] = list(node.declared_shape)
        data = graph.dump(
            list(zip(names, outs)),
            (user_info or "") if enable_metadata else "",
            keep_var_name == 2,
            shapes,
        )
        write_dump(file, data, append, "Network.dump")
        model = _rt.InferenceModel(data)
        return CompGraphDumpResult(
            nr_opr=len(_topo_oprs(self.output_vars)),
            tot_bytes=len(data),
            tensor_value_bytes=None,
            content_hash=int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little"),
            inputs=list(model.input_names),
            outputs=list(model.output_names),
            params=None,
        )

    def make_const(self, data, name=None, device=None):
        """A new constant (an :class:`~.network_node.ImmutableTensor` node); returns its var.

        Args:
            data: a number, a sequence or a numpy array (float64 becomes float32, int64 int32).
            name: its name.
            device: accepted for MegEngine's signature.

        Returns:
            the constant's VarNode.

        Examples:
            >>> import io, numpy as np
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> c = net.make_const(np.array([0.5, 1.5]), name="c")
            >>> c.dtype, c.owner.numpy()
            (dtype('float32'), array([0.5, 1.5], dtype=float32))
        """
        return ImmutableTensor(data, name, device).outputs[0]

    def make_input_node(self, shape, dtype, name=None, device=None):
        """A new input (a :class:`~.network_node.Host2DeviceCopy` node); returns its var.

        Args:
            shape: its shape.
            dtype: its dtype.
            name: its name (needed to dump it).
            device: accepted for MegEngine's signature.

        Returns:
            the input's VarNode.

        Examples:
            >>> import io
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> c = net.make_input_node((2,), "int32", name="c")
            >>> c.name, c.shape, c.owner.type
            ('c', (2,), 'Host2DeviceCopy')
        """
        if not isinstance(shape, Sequence) or not all(isinstance(d, int) for d in shape):
            raise TypeError(f"make_input_node: shape must be a sequence of ints, got {shape!r}")
        return Host2DeviceCopy(shape, dtype, name, device).outputs[0]

    def add_output(self, *vars):
        """Appends vars to :attr:`output_vars` (those already there are skipped).

        Args:
            vars: VarNodes.

        Examples:
            >>> import io
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> net.add_output(net.get_var_by_name("a"))
            >>> [v.name for v in net.output_vars]
            ['o', 'a']
        """
        self.add_dep_oprs(*vars)
        for var in vars:
            if not any(var is v for v in self.output_vars):
                self.output_vars.append(var)

    def remove_output(self, *vars):
        """Removes vars from :attr:`output_vars`; ValueError for a var that is not an output.

        Args:
            vars: VarNodes.

        Examples:
            >>> import io
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> net.remove_output(*net.output_vars)
            >>> net.output_vars
            []
        """
        for var in vars:
            kept = [v for v in self.output_vars if v is not var]
            if len(kept) == len(self.output_vars):
                raise ValueError(f"remove_output: {var!r} is not an output of the network")
            self.output_vars = kept

    def add_dep_oprs(self, *vars):
        """Checks that ``vars`` (default: the outputs) are VarNodes whose op nodes lead back to
        inputs and constants, and returns them as a list. (MegEngine adopts nodes made outside
        the network here; here every node is already one.)

        Args:
            vars: VarNodes.

        Returns:
            the list of vars.

        Examples:
            >>> import io
            >>> import megengine.functional as F
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> (y,) = net.add_dep_oprs(F.relu(net.get_var_by_name("a")))
            >>> y.owner.params
            {'mode': 'RELU'}
        """
        if not vars:
            vars = self.output_vars
        for var in vars:
            if not isinstance(var, VarNode):
                raise TypeError(f"add_dep_oprs: expected VarNodes, got {type(var).__name__}")
        _topo_oprs(vars)
        return list(vars)

    def modify_opr_names(self, modifier):
        """Renames every op node in place (inputs and constants are dumped under their op
        nodes' names).

        Args:
            modifier: a str to prepend as ``"{modifier}.{name}"``, or a function from name to
                name.

        Examples:
            >>> import io
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> net.modify_opr_names("net")
            >>> net.data_providers_filter.as_dict().keys()
            odict_keys(['net.a', 'net.b'])
        """
        if isinstance(modifier, str):
            prefix = modifier
            modifier = lambda name: f"{prefix}.{name}"
        if not callable(modifier):
            raise TypeError(
                f"modify_opr_names: modifier must be a str or callable, got {modifier!r}"
            )
        for node in self.all_oprs:
            name = modifier(node.name)
            if not isinstance(name, str):
                raise TypeError(f"modify_opr_names: the modifier returned {name!r}, not a str")
            node.name = name

    def reset_batch_size(self, batchsize, *, blacklist=()):
        """Sets the first dimension of every input not in ``blacklist`` to ``batchsize``; the
        inputs must agree on it. The graph is built again to check and infer every shape.

        Args:
            batchsize: the new batch size.
            blacklist: names of inputs whose first dimension is not the batch.

        Examples:
            >>> import io
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> net.reset_batch_size(5)
            >>> net.output_vars[0].shape
            (5,)
        """
        if not isinstance(batchsize, int) or batchsize < 1:
            raise ValueError(
                f"reset_batch_size: batchsize must be a positive int, got {batchsize!r}"
            )
        blacklist = set(blacklist)
        prev = None
        for node in self.data_providers_filter:
            if node.name in blacklist:
                blacklist.remove(node.name)
                continue
            shape = list(node.shape)
            if not shape:
                raise ValueError(f"reset_batch_size: input {node.name} is a scalar")
            if prev is None:
                prev = shape[0]
            elif prev != shape[0]:
                raise ValueError(
                    f"batchsize mismatch: batchsize={prev} shape={shape} dp={node.name}"
                )
            shape[0] = batchsize
            node.shape = tuple(shape)
            node.declared_shape = (batchsize,) + tuple(node.declared_shape[1:])
            node.outputs[0]._shape = node.shape
        if prev is None:
            raise ValueError("reset_batch_size: no data provider found")
        if blacklist:
            raise ValueError(f"reset_batch_size: unused items in blacklist: {blacklist}")
        _build(self.output_vars)

    def replace_vars(self, repl_dict):
        """Makes every op node reading a var of ``repl_dict``'s keys read its value instead,
        except the nodes that value is computed by: ``{v: F.relu(v)}`` inserts a RELU after ``v``.

        Args:
            repl_dict: ``{old_var: new_var}``.

        Examples:
            >>> import io, numpy as np
            >>> import megengine.functional as F
            >>> from megengine.utils.comp_graph_tools import GraphInference
            >>> net = Network.load(io.BytesIO(_example_model()))  # o = (a + b) * 2
            >>> s = net.opr_filter.has_input(net.get_var_by_name("a")).as_unique().outputs[0]
            >>> net.replace_vars({s: F.relu(s - 3)})  # o = relu(a + b - 3) * 2
            >>> buf = io.BytesIO()
            >>> _ = net.dump(buf)
            >>> GraphInference(buf.getvalue()).run(np.array([1, 2]), np.array([1, 4]))["o"]
            array([0, 6], dtype=int32)
        """
        if not isinstance(repl_dict, dict):
            raise TypeError(
                f"replace_vars: repl_dict must be a dict, got {type(repl_dict).__name__}"
            )
        for old, new in repl_dict.items():
            if not isinstance(old, VarNode) or not isinstance(new, VarNode):
                raise TypeError("replace_vars: repl_dict must map VarNodes to VarNodes")
        self.add_dep_oprs(*repl_dict.values())
        # A reader that the new var itself depends on keeps the old var: {v: f(v)} puts f after
        # v (MegEngine rewires that reader too, making a cycle it fails on).
        own = {id(old): {id(n) for n in _topo_oprs([new])} for old, new in repl_dict.items()}
        for var in self.all_vars:
            new = repl_dict.get(var)
            if new is None or new is var:
                continue
            kept = []
            for node in var.users:
                if id(node) in own[id(var)]:
                    kept.append(node)
                    continue
                node.inputs = [new if v is var else v for v in node.inputs]
                if not any(node is u for u in new.users):
                    new.users.append(node)
            var.users[:] = kept
        _build(self.output_vars)

    def replace_oprs(self, repl_dict):
        """Puts op nodes in the place of others: the old node's output vars become the new
        node's (same count), so readers and outputs follow.

        Args:
            repl_dict: ``{old_opr: new_opr}``.

        Examples:
            >>> import io, numpy as np
            >>> import megengine.functional as F
            >>> from megengine.utils.comp_graph_tools import GraphInference
            >>> net = Network.load(io.BytesIO(_example_model()))  # o = (a + b) * 2
            >>> a, b = net.input_vars
            >>> add = net.opr_filter.has_input(a).as_unique()
            >>> net.replace_oprs({add: (a - b).owner})  # o = (a - b) * 2
            >>> buf = io.BytesIO()
            >>> _ = net.dump(buf)
            >>> GraphInference(buf.getvalue()).run(np.array([5, 2]), np.array([1, 4]))["o"]
            array([ 8, -4], dtype=int32)
        """
        if not isinstance(repl_dict, dict):
            raise TypeError(
                f"replace_oprs: repl_dict must be a dict, got {type(repl_dict).__name__}"
            )
        for old, new in repl_dict.items():
            if not isinstance(old, OpNode) or not isinstance(new, OpNode):
                raise TypeError("replace_oprs: repl_dict must map OpNodes to OpNodes")
            if len(old.outputs) != len(new.outputs):
                raise ValueError(f"can not replace {old!r} with {new!r}: different output counts")
        for node in self.all_oprs:
            new = repl_dict.get(node)
            if new is None or new is node:
                continue
            for k, var in enumerate(node.outputs):
                src = new.outputs[k]
                var.owner = new
                var.name = src.name
                var._set_info((src.name, src._shape, src._dtype, src._dynamic))
            new.outputs = node.outputs
        _build(self.output_vars)

    def get_opr_by_type(self, oprcls, unique=True):
        """The op nodes of class ``oprcls``.

        Args:
            oprcls: an :class:`~.network_node.OpNode` subclass.
            unique: return the one node (ValueError when there is not exactly one).

        Returns:
            a node, or a list of them when ``unique`` is False.

        Examples:
            >>> import io
            >>> import megengine.utils.network_node as N
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> len(net.get_opr_by_type(N.Elemwise, unique=False))
            2
        """
        if not (isinstance(oprcls, type) and issubclass(oprcls, OpNode)):
            raise TypeError(f"get_opr_by_type: {oprcls!r} is not an OpNode class")
        return _unique(
            self.opr_filter.type(oprcls).as_list(), unique, f"operators of type {oprcls}"
        )

    def get_opr_by_name(self, name, unique=True):
        """The op nodes whose name matches ``name`` (a glob pattern, case ignored).

        Args:
            name: the name or pattern.
            unique: return the one node (ValueError when there is not exactly one).

        Returns:
            a node, or a list of them when ``unique`` is False.

        Examples:
            >>> import io
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> net.get_opr_by_name("a").type
            'Host2DeviceCopy'
        """
        return _unique(self.opr_filter.name(name).as_list(), unique, f"operators named {name!r}")

    def get_var_by_name(self, name, unique=True):
        """The vars whose name matches ``name`` (a glob pattern, case ignored).

        Args:
            name: the name or pattern.
            unique: return the one var (ValueError when there is not exactly one).

        Returns:
            a var, or a list of them when ``unique`` is False.

        Examples:
            >>> import io
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> net.get_var_by_name("b").shape
            (2,)
        """
        return _unique(self.var_filter.name(name).as_list(), unique, f"vars named {name!r}")

    def get_var_receive_oprs(self, var):
        """The op nodes of the network that read ``var``.

        Args:
            var: a VarNode.

        Returns:
            a list of op nodes.

        Examples:
            >>> import io
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> net.get_var_receive_oprs(net.get_var_by_name("a"))[0].params
            {'mode': 'ADD'}
        """
        return self.opr_filter.has_input(var).as_list()

    def get_dep_oprs(self, var):
        """The op nodes ``var`` depends on (its own included), inputs first.

        Args:
            var: a VarNode or a list of them.

        Returns:
            a list of op nodes.

        Examples:
            >>> import io
            >>> net = Network.load(io.BytesIO(_example_model()))
            >>> [n.type for n in net.get_dep_oprs(net.get_var_by_name("a"))]
            ['Host2DeviceCopy']
        """
        return _topo_oprs([var] if isinstance(var, VarNode) else list(var))

    @property
    def opr_filter(self):
        """A :class:`NodeFilter` over every op node.

        Examples:
            >>> import io
            >>> Network.load(io.BytesIO(_example_model())).opr_filter.as_count()
            5
        """
        return NodeFilter(self.all_oprs)

    @property
    def var_filter(self):
        """A :class:`NodeFilter` over every var.

        Examples:
            >>> import io
            >>> Network.load(io.BytesIO(_example_model())).var_filter.as_count()
            5
        """
        return NodeFilter(self.all_vars)

    @property
    def params_filter(self):
        """A :class:`NodeFilter` over the constants (:class:`~.network_node.ImmutableTensor`).

        Examples:
            >>> import io
            >>> Network.load(io.BytesIO(_example_model())).params_filter.as_unique().numpy()
            array(2, dtype=int32)
        """
        return self.opr_filter.param_provider()

    @property
    def data_providers_filter(self):
        """A :class:`NodeFilter` over the inputs (:class:`~.network_node.Host2DeviceCopy`).

        Examples:
            >>> import io
            >>> Network.load(io.BytesIO(_example_model())).data_providers_filter.as_count()
            2
        """
        return self.opr_filter.data_provider()

    @property
    def dest_vars(self):
        """The output vars (:attr:`output_vars`).

        Examples:
            >>> import io
            >>> Network.load(io.BytesIO(_example_model())).dest_vars
            [VarNode:o]
        """
        return self.output_vars

    @property
    def all_oprs(self):
        """Every op node the outputs need, each after those computing its inputs.

        Examples:
            >>> import io
            >>> [n.type for n in Network.load(io.BytesIO(_example_model())).all_oprs]
            ['Host2DeviceCopy', 'Host2DeviceCopy', 'Elemwise', 'ImmutableTensor', 'Elemwise']
        """
        return _topo_oprs(self.output_vars)

    @property
    def all_vars(self):
        """Every var the outputs need (the outputs included), in :attr:`all_oprs` order.

        Examples:
            >>> import io
            >>> [v.name for v in Network.load(io.BytesIO(_example_model())).all_vars][:2]
            ['a', 'b']
        """
        return _dep_vars(self.output_vars)

    @property
    def all_vars_dict(self):
        """:attr:`all_vars` by name.

        Examples:
            >>> import io
            >>> "a" in Network.load(io.BytesIO(_example_model())).all_vars_dict
            True
        """
        return self.var_filter.as_dict()

    @property
    def all_oprs_dict(self):
        """:attr:`all_oprs` by name.

        Examples:
            >>> import io
            >>> "b" in Network.load(io.BytesIO(_example_model())).all_oprs_dict
            True
        """
        return self.opr_filter.as_dict()


def _unique(found, unique, what):
    if not unique:
        return found
    if len(found) != 1:
        raise ValueError(f"{len(found)} {what} found, expected one")
    return found[0]


def _optimize_options(kwargs):
    unknown = sorted(k for k in kwargs if k not in _OPTIMIZE_OPTIONS)
    if unknown:
        raise TypeError(f"unknown optimize_for_inference options: {unknown}")
    return bool(kwargs.get("enable_fuse_conv_bias_nonlinearity", False))


def set_symbolic_shape(option):
    """Sets whether :attr:`VarNode.shape <.network_node.VarNode.shape>` is a VarNode computing
    the shape (True) or the inferred tuple (False); returns the previous setting.

    Args:
        option: the new setting.

    Returns:
        the previous setting.

    Examples:
        >>> import io
        >>> net = Network.load(io.BytesIO(_example_model()))
        >>> a = net.input_vars[0]
        >>> saved = set_symbolic_shape(True)
        >>> a.shape.owner.type
        'GetVarShape'
        >>> _ = set_symbolic_shape(saved)
        >>> a.shape
        (2,)
    """
    prev = _symbolic_shape[0]
    _symbolic_shape[0] = bool(option)
    return prev
