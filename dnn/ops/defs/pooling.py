# Pooling over NCW / NCHW / NCDHW tensors; the spatial rank comes from the input's ndim and every
# list param holds one entry per spatial dim (ParamError otherwise).
# The DSL (params, field, enum, op) is documented in dnn/ops/opgen/model.py.

POOL_MODE = enum(
    "mode",
    "Mode",
    ["MAX", "AVERAGE", "AVERAGE_COUNT_EXCLUDE_PADDING"],
    "MAX",
    "AVERAGE divides by the window size, padding included",
)

POOLING = params(
    "Pooling",
    "Window geometry of a pooling; out = (in + 2*padding - window) / stride + 1 (floor).",
    POOL_MODE,
    field("window", "int32[]", [2, 2], "window size per spatial dim, >= 1"),
    field("stride", "int32[]", [2, 2], "step per spatial dim, >= 1"),
    field("padding", "int32[]", [0, 0], "per spatial dim, 0 <= padding < window"),
)

op(
    "PoolingForward",
    "Max or average of each window of src.",
    inputs=["src"],
    outputs=["dst"],
    param=POOLING,
    layout_follows={"dst": "src"},
    grad=Grad(saves=("inputs", "outputs")),
)

op(
    "PoolingBackward",
    "Gradient of PoolingForward with respect to src; MAX sends each window's gradient to its "
    "first maximum (row-major), recomputed from src; dst is shape-checked only.",
    inputs=["src", "dst", "diff"],
    outputs=["grad"],
    param=POOLING,
    layout_follows={"grad": "diff"},
    grad=Grad(saves=("inputs",)),
)

op(
    "PoolingBlocked",
    "PoolingForward on a channel-blocked src (N, ceil(C/block), in..., block) (ChannelBlock's "
    "layout), giving dst (N, ceil(C/block), out..., block); channels past C must be zero in src "
    "and are zero in dst.",
    inputs=["src"],
    outputs=["dst"],
    param=POOLING,
)

ADAPTIVE_POOLING = params(
    "AdaptivePooling",
    "Pooling to a fixed output size, with MegEngine's windows: where in >= out, stride = in/out "
    "and window = in - (out-1)*stride (all one length, possibly overlapping); where in < out, "
    "output i covers [floor(i*in/out), ceil((i+1)*in/out)).",
    enum("mode", "Mode", ["MAX", "AVERAGE"], "MAX", "reduction over each window"),
    field("shape", "int32[]", [1, 1], "output size per spatial dim, >= 1"),
)

op(
    "AdaptivePoolingForward",
    "Max or average of each adaptive window of src.",
    inputs=["src"],
    outputs=["dst"],
    param=ADAPTIVE_POOLING,
    layout_follows={"dst": "src"},
    grad=Grad(saves=("inputs", "outputs")),
)

op(
    "AdaptivePoolingBackward",
    "Gradient of AdaptivePoolingForward with respect to src; MAX sends each window's gradient to "
    "its first maximum (row-major), recomputed from src; dst is shape-checked only.",
    inputs=["src", "dst", "diff"],
    outputs=["grad"],
    param=ADAPTIVE_POOLING,
    layout_follows={"grad": "diff"},
    grad=Grad(saves=()),
)
