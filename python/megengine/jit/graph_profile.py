"""A traced function's profile in MegEngine's ``get_profile()`` layout.

``trace(profiling=True)`` times every step of the compiled graph (the C++ executable's
``enable_profile``); ``TraceSession.profile()`` gives the last run's steps as plain dicts, and
:func:`megengine_profile` arranges them as MegEngine 1.13's JSON profile, which
:mod:`megengine.utils.profile_analyzer` and scripts written for MegEngine read:

- ``profiler``: ``host`` and ``device`` (per operator id, per comp node, the step's ``start``,
  ``kern`` and ``end`` in seconds; CPU steps run synchronously, so both are the kernel's time),
  ``opr_footprint`` (params, input and output shapes, bytes read and written, and an operation
  count where one is defined) and ``opr_internal_pf`` (empty);
- ``graph_exec``: ``comp_seq`` (operator ids in execution order), ``operator`` (name, type,
  input and output var ids), ``var`` (name, shape, dtype, comp node) and ``mem_chunk`` (empty:
  the graph plans one arena per comp node instead of chunks).

Ids are strings, as in MegEngine's JSON.
"""

import math

import numpy as np

_ITEMSIZE = {"bfloat16": 2}


def _nbytes(var):
    size = _ITEMSIZE.get(var["dtype"]) or np.dtype(var["dtype"]).itemsize
    return size * math.prod(var["shape"])


def _positions(shape, blocked):
    # Output positions of a convolution (batch x spatial): every dim but the channels, which a
    # channel-blocked tensor (N, C/b, spatial..., b) splits in two.
    channels = shape[1] * (shape[-1] if blocked else 1)
    return math.prod(shape) // max(channels, 1)


def _computation(step):
    # Multiply-adds count two operations, as MegEngine's footprint counts them.
    op = step["type"]
    ins = [v["shape"] for v in step["inputs"]]
    outs = [v["shape"] for v in step["outputs"]]
    blocked = op.endswith("Blocked")
    if op in ("Elemwise", "FusedElemwise"):
        return math.prod(outs[0])
    if op in ("ConvolutionForward", "ConvBias", "ConvBiasBlocked"):
        return 2 * math.prod(ins[1]) * _positions(outs[0], blocked)
    if op.startswith("ConvolutionBackwardData"):
        return 2 * math.prod(ins[0]) * _positions(ins[1], blocked)
    if op.startswith("ConvolutionBackwardFilter"):
        return 2 * math.prod(outs[0]) * _positions(ins[1], blocked)
    if op in ("MatrixMul", "BatchedMatrixMul"):
        # A holds batch x M x K elements, the output's last dim is N.
        return 2 * math.prod(ins[0]) * outs[0][-1]
    if op == "Reduce":
        return math.prod(ins[0])
    return None


def megengine_profile(steps):
    r"""Arranges a compiled graph's profiled steps as MegEngine's ``trace.get_profile()`` dict.

    Args:
        steps: ``TraceSession.profile()``: per step, a dict with ``id``, ``type``, ``name``,
            ``params``, ``comp_node``, ``inputs``, ``outputs`` (dicts with ``id``, ``name``,
            ``shape``, ``dtype``), ``start`` and ``end`` (seconds).

    Returns:
        a dict with the keys ``profiler`` and ``graph_exec`` described in this module's
        docstring.

    Examples:
        >>> step = {"id": 3, "type": "Elemwise", "name": "Elemwise(mode=RELU)",
        ...         "params": {"mode": "RELU"}, "comp_node": "cpu0", "start": 0.5, "end": 0.75,
        ...         "inputs": [{"id": 1, "name": "x", "shape": [2, 2], "dtype": "float32"}],
        ...         "outputs": [{"id": 2, "name": "y", "shape": [2, 2], "dtype": "float32"}]}
        >>> prof = megengine_profile([step])
        >>> prof["graph_exec"]["comp_seq"], prof["profiler"]["opr_footprint"]["3"]["memory"]
        (['3'], 32)
    """
    host, device, footprint = {}, {}, {}
    operators, varz, seq = {}, {}, []
    for step in steps:
        oid = str(step["id"])
        seq.append(oid)
        times = {"start": step["start"], "kern": step["start"], "end": step["end"]}
        cn = step["comp_node"]
        host[oid] = {f"comp_node_dispatch:{cn}": dict(times)}
        device[oid] = {cn: dict(times)}
        footprint[oid] = {
            "param": dict(step["params"]),
            "in_shapes": [list(v["shape"]) for v in step["inputs"]],
            "out_shapes": [list(v["shape"]) for v in step["outputs"]],
            "memory": sum(_nbytes(v) for v in step["inputs"] + step["outputs"]),
            "computation": _computation(step),
        }
        operators[oid] = {
            "id": oid,
            "name": step["name"],
            "type": step["type"],
            "input": [str(v["id"]) for v in step["inputs"]],
            "output": [str(v["id"]) for v in step["outputs"]],
            "node_type": "operator",
        }
        for v in step["inputs"] + step["outputs"]:
            varz[str(v["id"])] = {
                "id": str(v["id"]),
                "name": v["name"],
                "shape": list(v["shape"]),
                "dtype": v["dtype"],
                "comp_node": cn,
                "node_type": "var",
            }
    return {
        "profiler": {
            "opr_internal_pf": {},
            "host": host,
            "device": device,
            "opr_footprint": footprint,
        },
        "graph_exec": {"comp_seq": seq, "operator": operators, "var": varz, "mem_chunk": {}},
    }
