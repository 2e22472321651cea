"""``trace.dump``: writes a traced function's graph as a model file (``src/serialization``),
which ``GraphInference``, the C++ inference API and ``load_and_run`` read."""

import collections
import hashlib

from ..core import _imperative_rt as _rt
from ..utils.atomic_file import write_dump

# What MegEngine's ``trace.dump`` returns (its fields in its order: callers index it, e.g.
# ``info[4]`` for the input names).
CompGraphDumpResult = collections.namedtuple(
    "CompGraphDumpResult",
    ["nr_opr", "tot_bytes", "tensor_value_bytes", "content_hash", "inputs", "outputs", "params"],
)

# MegEngine's dump keywords that change nothing here (see trace.dump's docstring).
_ACCEPTED = (
    "keep_opr_name",
    "keep_param_name",
    "keep_opr_priority",
    "no_change_graph",
    "strip_info_file",
    "append_json",
    "input_data",
    "repeat",
    "silent",
    "no_assert",
    "maxerr",
    "resize_input",
    "input_transform",
    "dump_format",
    "model_version",
)


def _names(value, count, what):
    if value is None:
        return None
    if isinstance(value, str):
        value = (value,)
    value = list(value)
    if len(value) != count:
        raise ValueError(f"wrong number of {what}, should be {count} values")
    for name in value:
        if not isinstance(name, str) or not name:
            raise ValueError(f"trace.dump: {what} must be non-empty strings, got {name!r}")
    if len(set(value)) != len(value):
        raise ValueError(f"trace.dump: {what} must be distinct, got {value}")
    return value


def _check_dynamic_shapes(tr, shapes):
    """A graph that holds a shape it read as a constant would compute the wrong thing at
    another shape: such a trace gets no dynamic input dimensions."""
    dynamic = sorted(name for name, shape in shapes.items() if -1 in shape)
    if not dynamic:
        return
    from .tracing import TraceError

    if not tr._symbolic_shape:
        raise TraceError(
            f"trace.dump: input_shapes gives {', '.join(dynamic)} dynamic dimensions, but the "
            "trace was recorded with symbolic_shape=False: the shapes it read are constants of "
            "the graph; trace with symbolic_shape=True or dump with static input shapes"
        )
    if tr._shape_notes:
        more = len(tr._shape_notes) - 1
        raise TraceError(
            f"trace.dump: input_shapes gives {', '.join(dynamic)} dynamic dimensions, but the "
            f"traced function used a shape it read as a fixed value ({tr._shape_notes[0]}"
            + (f"; and {more} more" if more else "")
            + "), which the graph holds as a constant; compute shapes with reshape and + - * // "
            "on the dims, or dump with static input shapes"
        )


def dump_trace(
    tr,
    file,
    arg_names,
    output_names,
    append,
    keep_var_name,
    optimize_for_inference,
    user_info,
    enable_metadata,
    input_shapes,
    fuse_conv_bias=False,
):
    """The body of :meth:`trace.dump` (its docstring describes the arguments)."""
    if not tr._capture_as_const:
        raise ValueError("you must specify capture_as_const=True at __init__ to use dump")
    if tr._session is None:
        raise ValueError("trace.dump: call the traced function once before dump")
    if not tr._out_names:
        raise ValueError(
            "the traced function without return values cannot be dumped, the traced function "
            "should return List[Tensor] or Dict[str, Tensor]"
        )
    if tr._mode != "graph":
        raise ValueError(
            "trace.dump: the recording did not compile into a graph (see the warning of the "
            "first call), so there is nothing to dump"
        )
    if any(op.startswith("BatchNormForward(fwd_mode=TRAINING") for op, _ in tr._session.ops):
        # MegEngine 1.13 refuses too: a model file is for inference, and a training batch norm
        # would normalise by the batch's statistics and update running ones no one reads.
        raise RuntimeError(
            "trace.dump: can not dump BatchNorm in training mode, maybe you forget to do "
            "model.eval()?"
        )
    if tr._out_dict_keys is not None and output_names:
        raise TypeError("cannot specify output_names when output is already in dict format")
    if keep_var_name not in (0, 1, 2):
        raise ValueError(f"trace.dump: keep_var_name must be 0, 1 or 2, got {keep_var_name!r}")
    if user_info is not None and not isinstance(user_info, str):
        raise TypeError(
            f"trace.dump: user_info must be a str (the model file keeps text), "
            f"got {type(user_info).__name__}"
        )

    positional = [n for n in tr._arg_names if n.startswith("arg_")]
    new_args = _names(arg_names, len(positional), "arg_names")
    input_names = dict(zip(positional, new_args)) if new_args else {}
    # kwargs keep their names, as MegEngine's dump does.
    for name in tr._arg_names:
        if name.startswith("kwarg_"):
            input_names[name] = name[len("kwarg_") :]
    outs = _names(output_names, len(tr._out_names), "output_names")
    if outs is None:
        if tr._out_dict_keys is not None:
            outs = [str(k) for k in tr._out_dict_keys]
        else:
            outs = [f"output_{i}" for i in range(len(tr._out_names))]
    shapes = {}
    for name, shape in (input_shapes or {}).items():
        try:
            shapes[str(name)] = [int(d) for d in shape]
        except (TypeError, ValueError):
            raise TypeError(
                f"trace.dump: input_shapes[{name!r}] must be a sequence of ints, got {shape!r}"
            ) from None
    _check_dynamic_shapes(tr, shapes)
    data = tr._session.dump_model(
        input_names,
        outs,
        bool(optimize_for_inference),
        (user_info or "") if enable_metadata else "",
        keep_var_name >= 2,
        shapes,
        bool(optimize_for_inference) and fuse_conv_bias,
    )
    write_dump(file, data, append, "trace.dump")
    # The file's own input list: inputs the graph does not use are not written.
    model = _rt.InferenceModel(data)
    return CompGraphDumpResult(
        nr_opr=_count_oprs(data),
        tot_bytes=len(data),
        tensor_value_bytes=None,
        content_hash=int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little"),
        inputs=list(model.input_names),
        outputs=list(model.output_names),
        params=None,
    )


def _count_oprs(data):
    """The operators of the model file, as MegEngine's ``nr_opr`` counts them: its inputs and
    constants (Host2DeviceCopy, ImmutableTensor) with the ops."""
    graph = _rt.network.Graph.load(data)
    desc = graph.describe([i for _, i in graph.outputs])
    return len(desc["inputs"]) + len(desc["consts"]) + len(desc["oprs"])
